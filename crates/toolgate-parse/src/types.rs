//! The data a parse produces: `ToolCall`, `ParsedTurn` and the `Problem`s met on the way.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One tool call, whatever dialect it was written in.
///
/// `id` is unique within one parse (and within a run once the loop prefixes it):
/// the model's own id for native and Hermes calls that carry one, generated otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Map<String, Value>,
}

/// The result of parsing one model output.
///
/// `text` is everything that is not a call or reasoning, in order; `reasoning` is what
/// the model thought (`<think>`, `[THINK]`, Harmony's analysis channel), in order and
/// never searched for calls; `calls` are the calls in the order they were written;
/// `problems` are the recoverable oddities met on the way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParsedTurn {
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Reasoning>,
    pub calls: Vec<ToolCall>,
    pub problems: Vec<Problem>,
}

/// One block of the model's reasoning: its text, without the markers around it, and
/// where that text stands in the input (`start..end`, byte offsets; for a native
/// answer's `reasoning_content`, offsets into that field).
///
/// A streaming parser hands reasoning out in pieces of this same shape as it arrives;
/// [`crate::collect`] joins pieces that follow each other in the input into one block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    pub text: String,
    pub start: usize,
    pub end: usize,
}

impl Reasoning {
    /// A piece of reasoning read at byte `start`.
    pub fn new(text: impl Into<String>, start: usize) -> Self {
        let text = text.into();
        let end = start + text.len();
        Self { text, start, end }
    }
}

/// Something odd in the model's output: a call dropped, a tag closed for the model,
/// a value left uncoerced. `offset` is a byte offset into the parsed input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    pub kind: ProblemKind,
    pub message: String,
    pub offset: usize,
    /// The call the problem belongs to, when that call was kept (or the id of a
    /// native call that was dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The tool a dropped call named, when it is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

impl Problem {
    pub fn new(kind: ProblemKind, offset: usize, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            offset,
            call_id: None,
            tool: None,
        }
    }
}

/// What kind of oddity a [`Problem`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A call's block, or an element in it, ended without its closing tag.
    UnclosedTag,
    /// An element was closed by the next one opening, or by an outer closing tag.
    ImplicitClose,
    /// A `<![CDATA[` section not ended by `]]>`: the output ended inside it, or it
    /// ended with `]>` right before its element's closing tag (closed there).
    UnterminatedCdata,
    /// A closing tag that matches nothing open.
    StrayCloseTag,
    /// Text where only elements belong (between parameters, around the name).
    StrayText,
    /// An element the dialect does not know, ignored.
    UnknownElement,
    /// A parameter written outside the `<params>` element.
    ParamOutsideParams,
    /// A call without a tool name: not a call.
    MissingName,
    /// A call whose JSON (Hermes body, native arguments) is not valid: not a call.
    InvalidJson,
    /// A value that does not fit its schema type, kept as it was written.
    UncoercedValue,
    /// A value written in a form its schema did not ask for (a Python literal, JSON
    /// encoded twice), read by the schema.
    RecoveredValue,
    /// A call's JSON held several calls, or something that is not a call, in one tag.
    SeveralCalls,
    /// A parameter given twice where the schema wants one value.
    DuplicateParam,
    /// A code fence or wrapper holding calls that was never closed.
    UnclosedGroup,
    /// A call id that was already used; a new one was given.
    DuplicateId,
    /// A line of a recorded stream that could not be read.
    InvalidChunk,
    /// The output ended inside a call, before its dialect's closer (a `max_tokens`
    /// stop, a dropped stream): not a call, in lenient mode as in strict. `tool` names
    /// the tool when it was readable; the message says what was read.
    TruncatedCall,
}

impl ProblemKind {
    /// Faults in the structure of a call: in strict mode they drop the call.
    pub fn is_structural(self) -> bool {
        !matches!(
            self,
            ProblemKind::UncoercedValue
                | ProblemKind::RecoveredValue
                | ProblemKind::DuplicateId
                | ProblemKind::DuplicateParam
        )
    }
}
