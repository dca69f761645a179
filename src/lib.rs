//! toolgate: an agent-loop runtime. A model answers; toolgate finds the tool calls in
//! the answer, checks them against the agent's toolkit, runs, pauses or hands them
//! over, records them, and feeds the results back.
//!
//! This release holds the first layer, [`parse`]: every written form of a tool call
//! (XML with CDATA values, Hermes JSON, Qwen3-coder, `<invoke>`, native OpenAI calls),
//! whole or streamed; and [`tool`], the tool files that give the parser its schemas.

#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod engine;
pub mod parse;
pub mod prompt;
pub mod protocol;
pub mod store;
pub mod tool;

/// The README's Rust examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
