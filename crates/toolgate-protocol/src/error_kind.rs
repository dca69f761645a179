//! `ErrorKind`: why a recorded call did not succeed, the one vocabulary of a record's
//! `error_kind`.

use serde::{Deserialize, Serialize};

/// Why a recorded call did not succeed: the one vocabulary of a record's `error_kind`
/// (and of `tool.finished`, metrics and traces), fed by `ToolError::kind`
/// when a tool fails and by the loop when it answers a call itself (denied, refused by
/// a hook or a rule, a sub-agent that could not run).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ErrorKind {
    /// The model named a tool its toolkit does not have.
    ToolNotFound,
    /// The arguments do not match the tool's parameters.
    ValidationError,
    /// The tool ran and failed (a panic included).
    ExecutionError,
    /// The call took longer than its timeout.
    Timeout,
    /// The call was stopped before it finished.
    Cancelled,
    /// A definition-only tool reached the runtime.
    Client,
    /// The tool's server (an MCP server) could not be reached or stopped.
    ServerUnavailable,
    /// The network rule refused the address the call would reach.
    BlockedAddress,
    /// A credential the tool needs is not set.
    MissingCredential,
    /// The tool refused the call (its own check).
    Rejected,
    /// The sandbox could not be set up.
    Sandbox,
    /// The loop found the arguments unusable (not a JSON object, or no longer valid).
    InvalidArguments,
    /// The run stopped while the call was in flight.
    Interrupted,
    /// A rule or a `never` permission refused the call.
    Policy,
    /// A person denied the call.
    Denied,
    /// The call's approval deadline passed.
    Expired,
    /// The client submitted an error as the call's output.
    ClientError,
    /// A hook refused the call.
    Hook,
    /// A hook could not be run or answered nonsense.
    HookFailed,
    /// The call's result could not be read from the store.
    Store,
    /// A sub-agent named by the call does not exist.
    SubagentUnknown,
    /// A sub-agent could not be started here.
    SubagentUnavailable,
    /// Sub-agents nest deeper than allowed.
    MaxDepth,
    /// A sub-agent's run failed.
    SubagentFailed,
    /// A sub-agent's run stopped without an answer.
    SubagentIncomplete,
    /// The call was cut by the model's output limit before it was whole.
    Truncated,
    /// The same call (tool and arguments) ran as often as the agent's `max_repeats`
    /// allows; it was not run again.
    Repeated,
    /// A workflow stopped at a step that failed, was denied, or could not be made; or
    /// the workflow could not start.
    WorkflowFailed,
}

impl ErrorKind {
    /// Every kind, in order.
    pub const ALL: &'static [ErrorKind] = <ErrorKind as strum::VariantArray>::VARIANTS;

    /// Its name in records and on the wire.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl PartialEq<str> for ErrorKind {
    fn eq(&self, name: &str) -> bool {
        self.as_str() == name
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are a contract (records, `tool.finished`, metrics): each one as it was
    /// written before the enum.
    #[test]
    fn the_names_are_the_recorded_ones() {
        let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "tool_not_found",
                "validation_error",
                "execution_error",
                "timeout",
                "cancelled",
                "client",
                "server_unavailable",
                "blocked_address",
                "missing_credential",
                "rejected",
                "sandbox",
                "invalid_arguments",
                "interrupted",
                "policy",
                "denied",
                "expired",
                "client_error",
                "hook",
                "hook_failed",
                "store",
                "subagent_unknown",
                "subagent_unavailable",
                "max_depth",
                "subagent_failed",
                "subagent_incomplete",
                "truncated",
                "repeated",
                "workflow_failed",
            ]
        );
        for kind in ErrorKind::ALL {
            let json = serde_json::to_value(kind).unwrap_or_default();
            assert_eq!(json, kind.as_str(), "serde and strum agree");
        }
    }
}
