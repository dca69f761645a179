//! Every written form of a model's tool call, whole or streamed: the XML dialect with
//! CDATA values, Hermes, Qwen3-coder, `<invoke>`, the model servers' special-token
//! dialects, and native OpenAI calls.
//!
//! The entry points: [`parse_text`] and [`parse_input`] for a whole output,
//! [`StreamParser`] and [`InputParser`] for one fed in chunks, [`NativeCalls`] for
//! OpenAI `tool_calls` deltas; each gives a [`ParsedTurn`] (or [`StreamEvent`]s that
//! [`collect`] folds into one).
//!
//! The rest of this page is the crate's README; its examples run as doctests.
#![doc = include_str!("../README.md")]

mod block;
mod block_end;
mod cdata;
pub mod coerce;
mod entities;
mod framed;
mod framed_calls;
mod gemma;
mod glm;
mod glm_scan;
mod group;
mod hermes;
mod input;
mod json_calls;
mod json_extent;
mod kimi_k3;
mod mistral;
mod native;
mod opener;
mod options;
mod pyliteral;
mod pythonic;
mod reasoning;
mod sse;
mod stream;
mod tag_lex;
mod tagged;
mod tagged_walk;
mod truncated;
mod types;
mod unions;
mod utf8;
mod xml;
mod xml_lex;

pub use group::StreamEvent;
pub use input::InputParser;
pub use native::NativeCalls;
pub use options::{Dialect, ParseOptions, Schemas};
pub use reasoning::native_reasoning;
pub use stream::{StreamParser, collect};
pub use types::{ParsedTurn, Problem, ProblemKind, Reasoning, ToolCall};

/// Parses one model output written as text (any text dialect `opts` allows).
///
/// ```
/// use toolgate_parse::{Dialect, ParseOptions, parse_text};
/// let opts = ParseOptions::default().with_dialect(Dialect::Hermes);
/// let turn = parse_text(
///     "<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\"}}</tool_call>",
///     &opts,
/// );
/// assert_eq!(turn.calls[0].name, "echo");
/// assert_eq!(turn.calls[0].arguments["text"], "hi");
/// ```
pub fn parse_text(input: &str, opts: &ParseOptions) -> ParsedTurn {
    StreamParser::parse(input, opts)
}

/// Parses one model output in any recorded form: text, a chat.completion JSON or an
/// SSE stream of chunks (with [`Dialect::Auto`] or [`Dialect::OpenAi`]).
///
/// ```
/// use toolgate_parse::{ParseOptions, parse_input};
/// let completion = r#"{"choices": [{"message": {"role": "assistant", "content": null,
///     "tool_calls": [{"id": "call_9", "type": "function",
///         "function": {"name": "echo", "arguments": "{\"text\": \"hi\"}"}}]}}]}"#;
/// let turn = parse_input(completion, &ParseOptions::default());
/// assert_eq!(turn.calls[0].id, "call_9");
/// assert_eq!(turn.calls[0].arguments["text"], "hi");
///
/// // Plain text is read as text, as by `parse_text`.
/// let turn = parse_input("<invoke name=\"echo\"></invoke>", &ParseOptions::default());
/// assert_eq!(turn.calls[0].name, "echo");
/// ```
pub fn parse_input(input: &str, opts: &ParseOptions) -> ParsedTurn {
    InputParser::parse(input, opts)
}
