//! The shapes of MCP tasks on the wire (protocol 2025-11-25): a task's status read from
//! its run, the task object, and the JSON-RPC errors the task methods answer with.

use serde_json::{Value, json};

use toolgate_protocol::{RunObject, RunStatus};
use toolgate_store::McpTask;

/// The `_meta` key that ties a result to its task.
pub(super) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// How often a client is asked to poll `tasks/get` (milliseconds).
pub(super) const POLL_INTERVAL_MS: i64 = 1000;

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub(super) enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The status of a task whose run is `run`; `succeeded` says whether an ended run's
    /// call succeeded (its record), and is read only for a completed run.
    pub fn of(run: &RunObject, succeeded: bool) -> (TaskStatus, Option<String>) {
        match run.status {
            RunStatus::RequiresAction
                if run
                    .required_action
                    .as_ref()
                    .is_some_and(|a| !a.items.is_empty()) =>
            {
                (
                    Self::InputRequired,
                    Some(format!(
                        "waiting for a person's decision (the inbox, or toolgate approve {})",
                        run.id
                    )),
                )
            }
            RunStatus::RequiresAction | RunStatus::InProgress => (Self::Working, None),
            RunStatus::Completed if succeeded => (Self::Completed, None),
            RunStatus::Completed => (
                Self::Failed,
                Some("the call did not succeed (tasks/result has its error)".into()),
            ),
            RunStatus::Cancelled => (Self::Cancelled, Some("the call was cancelled".into())),
            _ => (Self::Failed, run.last_error.clone()),
        }
    }
}

/// The task object (`Task`): as `tasks/get` answers and `notifications/tasks/status`
/// carries it.
pub(super) fn task_json(
    task: &McpTask,
    status: TaskStatus,
    message: Option<String>,
    updated: i64,
) -> Value {
    let mut v = json!({
        "taskId": task.id,
        "status": <&str>::from(status),
        "ttl": task.ttl_ms,
        "createdAt": iso(task.created_at),
        "lastUpdatedAt": iso(updated.max(task.created_at)),
        "pollInterval": POLL_INTERVAL_MS,
    });
    if let (Some(m), Some(o)) = (message, v.as_object_mut()) {
        o.insert("statusMessage".into(), Value::String(m));
    }
    v
}

/// Unix milliseconds as ISO 8601 (UTC).
fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    /// `-32602`: the request names no task of the caller, or asks what cannot be done.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            code: -32602,
            message: message.into(),
        }
    }

    /// `-32603`: toolgate could not answer (the store failed).
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            code: -32603,
            message: message.into(),
        }
    }

    /// The error answer to request `id`.
    pub fn answer(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": self.code, "message": self.message}})
    }
}

/// The answer to request `id`.
pub fn answer(id: &Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => e.answer(id),
    }
}

/// A `notifications/tasks/status` message for `task` (the task object).
pub(super) fn status_note(task: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task})
}
