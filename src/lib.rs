//! toolgate: an agent-loop runtime. A model answers; toolgate finds the tool calls in
//! the answer, checks them against the agent's toolkit, runs, pauses or hands them
//! over, records them, and feeds the results back.
//!
//! This crate is the binary and a thin facade: each module below is a crate of the
//! workspace, re-exported at the path library users know it by. The layers, in the
//! order a call meets them: [`parse`] (`toolgate-parse`: every written form of a tool
//! call, whole or streamed), [`tool`] (`toolgate-tool`: specs, validation, the library,
//! toolkits, the gate and its policy, prompts, secrets; the standard sources of
//! `toolgate-sources` under [`tool::sources`]), [`engine`] and [`run`]
//! (`toolgate-runtime`: batches within limits, the loop with pause and resume), [`store`]
//! (`toolgate-store`: SQLite and PostgreSQL), [`model`] (`toolgate-model`), [`server`]
//! (`toolgate-server`: HTTP, SSE, Responses, the inbox, MCP); [`protocol`]
//! (`toolgate-protocol`) holds the events, statuses and the run object front ends read,
//! and [`telemetry`] (`toolgate-telemetry`) the metrics and traces an operator watches.

pub use toolgate_knowledge as knowledge;
pub use toolgate_model as model;
pub use toolgate_model::context;
pub use toolgate_parse as parse;
pub use toolgate_protocol as protocol;
pub use toolgate_protocol::{clock, identity};
pub use toolgate_runtime::{agent, engine, oauth, run, subagents};
pub use toolgate_sandbox as sandbox;
pub use toolgate_server as server;
pub use toolgate_server::mcp_gateway;
pub use toolgate_store as store;
pub use toolgate_telemetry as telemetry;
pub use toolgate_tool::{permission, policy, prompt, secrets};

/// Tools: `toolgate-tool`, with the standard sources of `toolgate-sources` beside it
/// (`tool::sources::standard()`, and each source's module at its old path).
pub mod tool {
    pub use toolgate_sources as sources;
    pub use toolgate_sources::{builtin, dify, http, load_file, mcp, openapi};
    pub use toolgate_tool::*;
}

/// The README's Rust examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The book's Rust examples (`docs/src`), compiled and run as doctests: one item per
/// page that has any (the docs tests check that none is missing).
#[cfg(doctest)]
pub mod book_doctests {
    /// `docs/src/howto/library.md`.
    #[doc = include_str!("../docs/src/howto/library.md")]
    pub struct HowtoLibrary;
}
