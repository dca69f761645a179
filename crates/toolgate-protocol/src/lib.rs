//! The wire types every front end reads: events as a run goes ([`events`]), call
//! statuses, caller kinds and the parts of a tool's output. One module, so it reads as
//! the reference of what toolgate emits (`--json` prints one event per line; the server
//! streams them as SSE).

use serde::{Deserialize, Serialize};

pub mod allow;
pub mod budget;
pub mod clock;
mod error_kind;
pub mod error_line;
pub mod events;
pub mod file;
pub mod identity;
pub mod image;
mod part;
pub mod samples;
pub mod webhook;

pub use error_kind::ErrorKind;
pub use events::{Event, RunEvent};
pub use file::FileOutput;
pub use image::ImagePart;
pub use part::Part;

/// How a recorded call ended.
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
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
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
    /// Every status, in order.
    pub const ALL: &'static [CallStatus] = <CallStatus as strum::VariantArray>::VARIANTS;

    /// Its name on the wire and in the store.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Who asked for a call. Workflow callers may bypass the concurrency limits.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
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
        self.into()
    }
}

/// Where a run stands (the names follow OpenAI's run object).
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
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RunStatus {
    /// A process is running the loop (or died while doing so; `resume` takes it over).
    InProgress,
    /// Paused: every item of `required_action` needs a decision or an output.
    RequiresAction,
    /// The model answered without calling a tool.
    Completed,
    /// The loop stopped at `max_iterations` without a final answer.
    Incomplete,
    /// The model could not be reached or the run could not go on; `resume` retries.
    Failed,
    /// Stopped by `toolgate cancel`; it never continues.
    Cancelled,
}

impl RunStatus {
    /// Every status, in order.
    pub const ALL: &'static [RunStatus] = <RunStatus as strum::VariantArray>::VARIANTS;

    /// Its name on the wire and in the store.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The run will not continue, whatever is done to it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Incomplete | RunStatus::Cancelled
        )
    }
}

/// What a paused item waits for.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ItemKind {
    /// A CONFIRM call: a person approves, edits or denies it.
    Approval,
    /// A definition-only call: the client runs it and submits its output.
    SubmitToolOutput,
    /// A spend limit was reached before the next model request: an approver raises
    /// it for this run (approve, or edit `{"limit": N}`) or denies (the run fails).
    Budget,
    /// A call acts for the run's user through OAuth and the user has not connected:
    /// `arguments` carries the `provider` and the `consent_url` to open; the OAuth
    /// callback resolves the item (the call runs, or the model is told of the refusal).
    Authorization,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One unresolved item of a paused run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RequiredItem {
    pub call_id: String,
    pub kind: ItemKind,
    pub tool: String,
    /// Exactly the arguments a decision applies to (secret parameters redacted).
    #[schema(value_type = Object)]
    pub arguments: serde_json::Value,
    /// The sub-agent run holding the item, when it is not this run's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// For a sub-agent's item: the run ids from this run down to the one holding it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    /// Why a person is asked: the rule that asked (`confirm_if: args.amount > 1000`,
    /// `permission: confirm`), or the hook that held the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unix milliseconds after which the item can no longer be approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// What happens at `expires_at` when nobody decided: `deny` or `cancel_run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<OnTimeout>,
    /// The fingerprint of the tool's policy when the item was asked (kept with a
    /// standing approval given on it; never on the wire).
    #[serde(skip)]
    pub policy: Option<String>,
}

/// What a paused run waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RequiredAction {
    pub items: Vec<RequiredItem>,
}

/// How a person (or the client) resolved one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call as shown.
    Approve,
    /// Run it, and every later call of the same tool by the same agent in this conversation.
    ApproveAlways,
    /// Do not run it; the reason goes to the model as the call's result.
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Run it with these arguments instead (validated when the decision is made).
    Edit {
        arguments: serde_json::Map<String, serde_json::Value>,
    },
    /// The client's output for a definition-only call.
    Submit {
        output: String,
        #[serde(default)]
        is_error: bool,
    },
}

/// Tokens a run has used, summed over its model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// How many times the model was asked.
    pub model_calls: u64,
    /// Prompt tokens read from the provider's cache (Anthropic `cache_read_input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache (Anthropic
    /// `cache_creation_input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_tokens: u64,
    /// Compactions of the context (their model calls and tokens are counted above).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub compactions: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
        self.model_calls += other.model_calls;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_creation_tokens += other.cache_creation_tokens;
        self.compactions += other.compactions;
    }
}

/// A run as the outside sees it: `toolgate show RUN --json`, and the last line of
/// `toolgate run --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunObject {
    pub id: String,
    /// Always `"run"`.
    pub object: String,
    pub conversation_id: String,
    pub agent: String,
    pub model: String,
    pub status: RunStatus,
    /// Model turns taken so far.
    pub iteration: u32,
    pub max_iterations: u32,
    /// While `requires_action`: every unresolved item; otherwise null.
    pub required_action: Option<RequiredAction>,
    /// Why the run failed, stopped incomplete, or was cancelled.
    pub last_error: Option<String>,
    /// The model's final answer, once completed.
    pub output: Option<String>,
    pub usage: Usage,
    /// Unix milliseconds.
    pub created_at: i64,
    pub updated_at: i64,
    /// For a sub-agent's run: the run whose call started it, and that call.
    #[serde(default)]
    pub parent_run_id: Option<String>,
    #[serde(default)]
    pub parent_call_id: Option<String>,
    /// The tenant it belongs to (`default` for runs from before tenants).
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// Who started it: an issued key's name or a JWT's subject, when known.
    #[serde(default)]
    pub started_by: Option<String>,
    /// Files saved from its tools' binary results, in order (`GET /v1/files/{id}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileOutput>,
}

fn default_tenant() -> String {
    crate::identity::DEFAULT_TENANT.to_string()
}

/// How a run and the sub-agent runs below it went: per run its calls, success rate,
/// tokens and time, per tool its tally (the execution summary a parent can ask of a
/// child), and totals that include every run below.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunTree {
    pub run_id: String,
    pub agent: String,
    pub status: RunStatus,
    /// The parent's call this run carries out (absent for the top run).
    pub parent_call_id: Option<String>,
    /// 0 for the top run, 1 for its sub-agents, ...
    pub depth: u32,
    /// This run's own calls.
    pub summary: TreeTally,
    /// This run's own calls by tool.
    pub tools: std::collections::BTreeMap<String, ToolTally>,
    /// This run and every run below it.
    pub totals: TreeTally,
    #[schema(no_recursion)]
    pub children: Vec<RunTree>,
}

/// Calls, outcomes, tokens and time of one run, or of a run with everything below it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TreeTally {
    pub calls: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub denied: u64,
    /// Percent of the calls that succeeded (or were answered by the client); 0 with none.
    pub success_rate: f64,
    pub usage: Usage,
    /// The sum of the calls' durations, in milliseconds.
    pub call_ms: f64,
    /// From the run's start to its last change, in milliseconds (for totals: the sum
    /// over the runs).
    pub run_ms: i64,
}

impl TreeTally {
    /// Adds `other` and recomputes the success rate.
    pub fn add(&mut self, other: &TreeTally) {
        self.calls += other.calls;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.denied += other.denied;
        self.usage.add(other.usage);
        self.call_ms += other.call_ms;
        self.run_ms += other.run_ms;
        self.rate();
    }

    /// Sets `success_rate` from the counts.
    pub fn rate(&mut self) {
        self.success_rate = if self.calls == 0 {
            0.0
        } else {
            (self.succeeded as f64) * 100.0 / self.calls as f64
        };
    }
}

/// One tool's calls within a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolTally {
    pub calls: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub total_ms: f64,
}

#[cfg(test)]
pub(crate) mod wire_tests;

/// What happens to a call whose approval was not decided in time.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum OnTimeout {
    /// The call is denied; the model is told the approval expired and the run goes on.
    #[default]
    Deny,
    /// The whole run is cancelled.
    CancelRun,
}

impl OnTimeout {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
