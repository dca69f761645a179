//! `echo`: returns its text; the smallest tool, for trying the loop.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{spec as builtin_spec, text_arg};
use crate::tool::{Permission, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

pub fn spec() -> ToolSpec {
    builtin_spec(
        "echo",
        "Return the given text unchanged.",
        Permission::Auto,
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "The text to return."}}, "required": ["text"], "additionalProperties": false}),
    )
}

pub struct Echo(pub ToolSpec);

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(
        &self,
        _ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(text_arg(&args, "text")))
    }
}
