//! toolgate: an agent-loop runtime. A model answers; toolgate finds the tool calls in
//! the answer, checks them against the agent's toolkit, runs, pauses or hands them
//! over, records them, and feeds the results back.
//!
//! The layers, in the order a call meets them: [`parse`] (every written form of a tool
//! call, whole or streamed), [`tool`] (specs, files, validation, the library, toolkits,
//! built-ins), [`prompt`] (what a model is told about its tools), [`permission`] (the
//! gate: run, ask, hand to the client, refuse), [`engine`] (batches within limits) and
//! [`store`] (the SQLite record, run state and summaries). Above them: [`agent`] (agent
//! files), [`model`] (OpenAI-compatible and scripted models) and [`run`] (the loop, with
//! pause and resume across processes); [`protocol`] holds the events, statuses and the
//! run object front ends read, and [`telemetry`] the metrics and traces an operator
//! watches it by.
// The MCP gateway's call future holds a whole drive (tools, hooks, sub-agents, the
// HTTP clients inside): proving it `Send` goes deeper than the default 128 levels.
#![recursion_limit = "256"]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod agent;
pub mod clock;
pub mod context;
pub mod engine;
pub mod identity;
pub mod mcp_gateway;
pub mod model;
pub mod parse;
pub mod permission;
pub mod policy;
pub mod prompt;
pub mod protocol;
pub mod run;
pub mod sandbox;
pub mod secrets;
pub mod server;
pub mod store;
pub mod subagents;
pub mod telemetry;
pub mod tool;

/// The README's Rust examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
