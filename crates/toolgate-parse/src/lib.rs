//! Parsing model output into tool calls: the XML/CDATA dialect, Hermes, Qwen3-coder,
//! `<invoke>`, and native OpenAI calls, whole or streamed.
//!
//! ```
//! use toolgate::parse::{parse_text, ParseOptions};
//! let turn = parse_text(
//!     "Searching.\n<tool_call><name>web_search</name><params>\
//!      <query><![CDATA[rust async]]></query></params></tool_call>",
//!     &ParseOptions::default(),
//! );
//! assert_eq!(turn.text, "Searching.\n");
//! assert_eq!(turn.calls[0].name, "web_search");
//! assert_eq!(turn.calls[0].arguments["query"], "rust async");
//! ```

mod block;
mod block_end;
mod cdata;
pub mod coerce;
mod entities;
mod framed;
mod framed_calls;
mod glm;
mod group;
mod hermes;
mod input;
mod json_calls;
mod mistral;
mod native;
mod opener;
mod options;
mod pyliteral;
mod pythonic;
mod sse;
mod stream;
mod tag_lex;
mod tagged;
mod tagged_walk;
mod types;
mod unions;
mod utf8;
mod xml;
mod xml_lex;

pub use group::StreamEvent;
pub use input::InputParser;
pub use native::NativeCalls;
pub use options::{Dialect, ParseOptions, Schemas};
pub use stream::{StreamParser, collect};
pub use types::{ParsedTurn, Problem, ProblemKind, ToolCall};

/// Parses one model output written as text (any text dialect `opts` allows).
pub fn parse_text(input: &str, opts: &ParseOptions) -> ParsedTurn {
    StreamParser::parse(input, opts)
}

/// Parses one model output in any recorded form: text, a chat.completion JSON or an
/// SSE stream of chunks (with [`Dialect::Auto`] or [`Dialect::OpenAi`]).
pub fn parse_input(input: &str, opts: &ParseOptions) -> ParsedTurn {
    InputParser::parse(input, opts)
}
