//! The runtime: the engine that runs a turn's calls within limits ([`engine`]), the run
//! loop with pause and resume across processes ([`run`]), agent files ([`agent`]) and
//! sub-agents ([`subagents`]). It names no tool source, model provider or store backend
//! of its own choosing: the program composes them and hands them in.
// A run's drive future holds tools, hooks, sub-agents and the HTTP clients inside:
// proving it `Send` goes deeper than the default 128 levels.
#![recursion_limit = "256"]

pub mod agent;
pub mod budget;
pub mod engine;
pub mod guards;
pub mod oauth;
pub mod run;
pub mod subagents;
