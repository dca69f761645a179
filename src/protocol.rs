//! The wire types every front end reads: events as a run goes, call statuses, caller
//! kinds and the parts of a tool's output. One module, so it reads as the reference of
//! what toolgate emits (`--json` prints one event per line; the server streams them as SSE).

use serde::{Deserialize, Serialize};

mod error_kind;
mod part;

pub use error_kind::ErrorKind;
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

    pub fn parse(s: &str) -> Option<CallStatus> {
        s.parse().ok()
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

    pub fn parse(s: &str) -> Option<RunStatus> {
        s.parse().ok()
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
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ItemKind {
    /// A CONFIRM call: a person approves, edits or denies it.
    Approval,
    /// A definition-only call: the client runs it and submits its output.
    SubmitToolOutput,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<ItemKind> {
        s.parse().ok()
    }
}

/// One unresolved item of a paused run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RequiredItem {
    pub call_id: String,
    pub kind: ItemKind,
    pub tool: String,
    /// Exactly the arguments a decision applies to (secret parameters redacted).
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
    pub on_timeout: Option<crate::policy::OnTimeout>,
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

/// What happens in a run, as it happens; `--json` prints one per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum RunEvent {
    /// A run began (or a paused or failed one continued).
    #[serde(rename = "run.started")]
    RunStarted {
        run_id: String,
        conversation_id: String,
        agent: String,
        model: String,
        resumed: bool,
    },
    /// Model text that is not a tool call, as it streams.
    #[serde(rename = "text.delta")]
    TextDelta { run_id: String, text: String },
    /// A call was found in the model's answer.
    #[serde(rename = "tool_call.parsed")]
    ToolCallParsed {
        run_id: String,
        call_id: String,
        tool: String,
        arguments: serde_json::Value,
    },
    /// Something in the answer was odd but recoverable (a dropped call, a value kept as text).
    #[serde(rename = "parse.problem")]
    ParseProblem { run_id: String, message: String },
    /// A call waits for a person's decision or the client's output.
    #[serde(rename = "approval.requested")]
    ApprovalRequested {
        run_id: String,
        #[serde(flatten)]
        item: RequiredItem,
    },
    /// An approval's deadline is near: sent once, at the lead `serve` is given.
    #[serde(rename = "approval.expiring")]
    ApprovalExpiring {
        run_id: String,
        #[serde(flatten)]
        item: RequiredItem,
    },
    /// An approval's deadline passed with nobody deciding: the call is denied, or the
    /// run cancelled (the item's `on_timeout`).
    #[serde(rename = "approval.expired")]
    ApprovalExpired {
        run_id: String,
        #[serde(flatten)]
        item: RequiredItem,
    },
    /// A call was resolved without running: denied, refused by policy, or answered by
    /// the client.
    #[serde(rename = "tool.resolved")]
    ToolResolved {
        run_id: String,
        call_id: String,
        tool: String,
        status: CallStatus,
        output: String,
    },
    /// A model request failed and will be tried again.
    #[serde(rename = "model.retry")]
    ModelRetry {
        run_id: String,
        attempt: u32,
        wait_ms: u64,
        error: String,
    },
    /// Older turns were compacted to keep the next request within the context budget
    /// (`summarize`: the model summarized them, in a request of its own; `truncate`:
    /// they were dropped).
    #[serde(rename = "context.compacted")]
    ContextCompacted {
        run_id: String,
        strategy: String,
        /// How many messages of the request were replaced.
        messages: usize,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The run paused; the items are in the run object.
    #[serde(rename = "run.requires_action")]
    RunRequiresAction {
        run_id: String,
        items: Vec<RequiredItem>,
    },
    #[serde(rename = "run.completed")]
    RunCompleted { run_id: String },
    #[serde(rename = "run.incomplete")]
    RunIncomplete { run_id: String, reason: String },
    #[serde(rename = "run.failed")]
    RunFailed { run_id: String, error: String },
    #[serde(rename = "run.cancelled")]
    RunCancelled { run_id: String },
    /// An engine event (tool.started, tool.output, tool.finished), with its run.
    #[serde(untagged)]
    Tool {
        run_id: String,
        #[serde(flatten)]
        event: Event,
    },
}

impl RunEvent {
    /// The event's name, as in its `type` field (`run.started`, `tool.finished`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            RunEvent::RunStarted { .. } => "run.started",
            RunEvent::TextDelta { .. } => "text.delta",
            RunEvent::ToolCallParsed { .. } => "tool_call.parsed",
            RunEvent::ParseProblem { .. } => "parse.problem",
            RunEvent::ApprovalRequested { .. } => "approval.requested",
            RunEvent::ApprovalExpiring { .. } => "approval.expiring",
            RunEvent::ApprovalExpired { .. } => "approval.expired",
            RunEvent::ToolResolved { .. } => "tool.resolved",
            RunEvent::ModelRetry { .. } => "model.retry",
            RunEvent::ContextCompacted { .. } => "context.compacted",
            RunEvent::RunRequiresAction { .. } => "run.requires_action",
            RunEvent::RunCompleted { .. } => "run.completed",
            RunEvent::RunIncomplete { .. } => "run.incomplete",
            RunEvent::RunFailed { .. } => "run.failed",
            RunEvent::RunCancelled { .. } => "run.cancelled",
            RunEvent::Tool { event, .. } => match event {
                Event::ToolStarted { .. } => "tool.started",
                Event::ToolOutput { .. } => "tool.output",
                Event::ToolFinished { .. } => "tool.finished",
            },
        }
    }

    /// The run it belongs to.
    pub fn run_id(&self) -> &str {
        match self {
            RunEvent::RunStarted { run_id, .. }
            | RunEvent::TextDelta { run_id, .. }
            | RunEvent::ToolCallParsed { run_id, .. }
            | RunEvent::ParseProblem { run_id, .. }
            | RunEvent::ApprovalRequested { run_id, .. }
            | RunEvent::ApprovalExpiring { run_id, .. }
            | RunEvent::ApprovalExpired { run_id, .. }
            | RunEvent::ToolResolved { run_id, .. }
            | RunEvent::ModelRetry { run_id, .. }
            | RunEvent::ContextCompacted { run_id, .. }
            | RunEvent::RunRequiresAction { run_id, .. }
            | RunEvent::RunCompleted { run_id }
            | RunEvent::RunIncomplete { run_id, .. }
            | RunEvent::RunFailed { run_id, .. }
            | RunEvent::RunCancelled { run_id }
            | RunEvent::Tool { run_id, .. } => run_id,
        }
    }

    /// The run has stopped being driven (paused or ended).
    pub fn is_last(&self) -> bool {
        matches!(
            self,
            RunEvent::RunRequiresAction { .. }
                | RunEvent::RunCompleted { .. }
                | RunEvent::RunIncomplete { .. }
                | RunEvent::RunFailed { .. }
                | RunEvent::RunCancelled { .. }
        )
    }
}

#[cfg(test)]
mod wire_tests;
