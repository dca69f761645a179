//! The wire types every front end reads: events as a run goes, call statuses and
//! caller kinds. One module, so it reads as the reference of what toolgate emits
//! (`--json` prints one event per line; the server will stream them as SSE).

use serde::{Deserialize, Serialize};

use crate::tool::Part;

/// How a recorded call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The tool ran and returned a result that is not an error.
    Succeeded,
    /// The tool could not run, or its result is an error.
    Failed,
    /// A person (or a `never` permission) refused the call.
    Denied,
    /// The call took longer than its timeout.
    Timeout,
    /// The call was stopped before it finished.
    Cancelled,
    /// A definition-only call handed to the client.
    Client,
}

impl CallStatus {
    pub const ALL: [CallStatus; 6] = [
        CallStatus::Succeeded,
        CallStatus::Failed,
        CallStatus::Denied,
        CallStatus::Timeout,
        CallStatus::Cancelled,
        CallStatus::Client,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Succeeded => "succeeded",
            CallStatus::Failed => "failed",
            CallStatus::Denied => "denied",
            CallStatus::Timeout => "timeout",
            CallStatus::Cancelled => "cancelled",
            CallStatus::Client => "client",
        }
    }

    pub fn parse(s: &str) -> Option<CallStatus> {
        CallStatus::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Who asked for a call. Workflow callers may bypass the concurrency limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallerKind {
    /// A model's call in an agent run.
    #[default]
    Agent,
    /// A person, through `toolgate tools call`.
    User,
    /// A program's own orchestration step.
    Workflow,
}

impl CallerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CallerKind::Agent => "agent",
            CallerKind::User => "user",
            CallerKind::Workflow => "workflow",
        }
    }
}

/// What happens, as it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    /// A call got its slot and started.
    #[serde(rename = "tool.started")]
    ToolStarted {
        call_id: String,
        tool: String,
        conversation_id: String,
    },
    /// A part of a call's output, streamed before the call ends. A part is never split
    /// across events, so concurrent calls never interleave inside one.
    #[serde(rename = "tool.output")]
    ToolOutput { call_id: String, part: Part },
    /// A call ended (its record is written with the batch).
    #[serde(rename = "tool.finished")]
    ToolFinished {
        call_id: String,
        tool: String,
        status: CallStatus,
        duration_ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_kind: Option<String>,
    },
}
