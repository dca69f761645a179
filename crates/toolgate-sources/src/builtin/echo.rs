//! `echo`: returns its text; the smallest tool, for trying the loop.

use serde_json::{Map, Value, json};

use super::{Handled, spec as builtin_spec, text_arg};
use toolgate_tool::{Permission, ToolContext, ToolOutput, ToolSpec};

pub fn spec() -> ToolSpec {
    ToolSpec {
        credentials: Default::default(),
        is_final: false,
        hidden: false,
        sandbox: None,
        read_only: true,
        ..builtin_spec(
            "echo",
            "Return the given text unchanged.",
            Permission::Auto,
            json!({"type": "object", "properties": {"text": {"type": "string", "description": "The text to return."}}, "required": ["text"], "additionalProperties": false}),
        )
    }
}

/// The handler of the tool.
pub fn echo<'a>(_ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move { Ok(ToolOutput::text(text_arg(&args, "text"))) })
}
