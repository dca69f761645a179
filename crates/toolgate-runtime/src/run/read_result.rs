//! The built-in `read_result(call_id, offset, length)` tool (auto, read-only): pages
//! through a tool result that reached the model cut, reading the whole result from its
//! call record. The loop answers it itself, like a sub-agent call, so the engine never
//! runs it.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::state::Phase;
use super::{Live, Runner};
use toolgate_parse::ToolCall;
use toolgate_protocol::CallStatus;
use toolgate_tool::{Entry, Permission, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The tool's name.
pub const READ_RESULT: &str = "read_result";

/// Characters a page holds when the call names no `length`.
pub const DEFAULT_PAGE: u64 = 4_000;

/// The tool as the library holds it (added to an agent's toolkit by its `context:`).
pub fn tool() -> Arc<dyn Tool> {
    Arc::new(ReadResult(ToolSpec {
        name: READ_RESULT.into(),
        description: "Reads part of an earlier tool result that was cut to fit the context: characters offset..offset+length of the whole result of the call call_id.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "call_id": {"type": "string", "description": "The id of the call whose result was cut."},
                "offset": {"type": "integer", "minimum": 0, "description": "The first character to read (0 is the start)."},
                "length": {"type": "integer", "minimum": 1, "description": "How many characters to read (4000 when absent)."}
            },
            "required": ["call_id"]
        }),
        permission: Permission::Auto,
        entry: Entry::Builtin {
            handler: READ_RESULT.into(),
        },
        category: Some("context".into()),
        timeout: None,
        tags: vec!["context".into()],
        version: None,
        read_only: true,
        sandbox: None,
        output: None,
        credentials: Default::default(),
        is_final: false,
        hidden: false,
        display: Default::default(),
    }))
}

struct ReadResult(ToolSpec);

#[async_trait]
impl Tool for ReadResult {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, _: &ToolContext, _: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Execution(
            "read_result reads a run's own records; it runs only inside an agent run".into(),
        ))
    }
}

impl Runner {
    /// Whether the loop answers this call itself.
    pub(super) fn is_read_result(&self, live: &Live, call: &ToolCall) -> bool {
        call.name == READ_RESULT && live.toolkit.resolve(READ_RESULT).is_ok()
    }

    /// Answers a `read_result` call from the conversation's records: the page, or an
    /// error the model can act on.
    pub(super) async fn read_result(&self, live: &mut Live, call: &ToolCall) -> Phase {
        let arg = |k: &str| call.arguments.get(k);
        let call_id = arg("call_id").and_then(Value::as_str).unwrap_or_default();
        let offset = arg("offset").and_then(Value::as_u64).unwrap_or(0);
        let length = arg("length")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_PAGE);
        let fail = |message: String| {
            (
                CallStatus::Failed,
                Some(toolgate_protocol::ErrorKind::InvalidArguments),
                message,
            )
        };
        let (status, kind, output) = if call_id.is_empty() {
            fail("read_result needs call_id: the id of the call whose result was cut".into())
        } else if length == 0 {
            fail("read_result: length must be at least 1".into())
        } else {
            match self.store.call_result(&live.conversation_id, call_id).await {
                Ok(Some(text)) => (
                    CallStatus::Succeeded,
                    None,
                    toolgate_model::context::page(
                        &text,
                        call_id,
                        usize::try_from(offset).unwrap_or(usize::MAX),
                        usize::try_from(length).unwrap_or(usize::MAX),
                    ),
                ),
                Ok(None) => fail(format!(
                    "no recorded result for call '{call_id}' in this conversation"
                )),
                Err(e) => (
                    CallStatus::Failed,
                    Some(toolgate_protocol::ErrorKind::Store),
                    format!("the records could not be read: {e}"),
                ),
            }
        };
        self.answer(live, call, status, kind, output)
    }
}
