//! Run events: what happens in a run, as it happens. One tagged enum, [`RunEvent`], with
//! a struct per event: `--json` prints one per line, the server streams them as SSE
//! (`event:` is the name, `data:` the JSON) and the OpenAPI document describes each.
//!
//! ```
//! use toolgate_protocol::RunEvent;
//! use toolgate_protocol::events::RunCompleted;
//!
//! let e = RunEvent::from(RunCompleted { run_id: "run_1".into() });
//! assert_eq!(e.name(), "run.completed");
//! assert_eq!(
//!     serde_json::to_string(&e).unwrap(),
//!     r#"{"type":"run.completed","run_id":"run_1"}"#
//! );
//! ```

use serde::{Deserialize, Serialize};

use super::{CallStatus, ErrorKind, Part, RequiredItem};

/// What happens in a run, as it happens; `--json` prints one per line. Its `type` is
/// its name ([`RunEvent::name`]); every event names its run (`run_id`).
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::VariantNames,
)]
#[serde(tag = "type")]
pub enum RunEvent {
    /// A run began (or a paused or failed one continued).
    #[serde(rename = "run.started")]
    #[strum(serialize = "run.started")]
    RunStarted(RunStarted),
    /// Model text that is not a tool call, as it streams.
    #[serde(rename = "text.delta")]
    #[strum(serialize = "text.delta")]
    TextDelta(TextDelta),
    /// What the model thought (`<think>`, `[THINK]`, Harmony's analysis channel, a
    /// server's `reasoning_content`), as it streams: never searched for calls.
    #[serde(rename = "reasoning.delta")]
    #[strum(serialize = "reasoning.delta")]
    ReasoningDelta(ReasoningDelta),
    /// A call was found in the model's answer.
    #[serde(rename = "tool_call.parsed")]
    #[strum(serialize = "tool_call.parsed")]
    ToolCallParsed(ToolCallParsed),
    /// Something in the answer was odd but recoverable (a dropped call, a value kept as text).
    #[serde(rename = "parse.problem")]
    #[strum(serialize = "parse.problem")]
    ParseProblem(ParseProblem),
    /// A call waits for a person's decision or the client's output.
    #[serde(rename = "approval.requested")]
    #[strum(serialize = "approval.requested")]
    ApprovalRequested(ApprovalRequested),
    /// An approval's deadline is near: sent once, at the lead `serve` is given.
    #[serde(rename = "approval.expiring")]
    #[strum(serialize = "approval.expiring")]
    ApprovalExpiring(ApprovalExpiring),
    /// An approval's deadline passed with nobody deciding.
    #[serde(rename = "approval.expired")]
    #[strum(serialize = "approval.expired")]
    ApprovalExpired(ApprovalExpired),
    /// A call got its slot and started.
    #[serde(rename = "tool.started")]
    #[strum(serialize = "tool.started")]
    ToolStarted(ToolStarted),
    /// A part of a call's output, streamed before the call ends.
    #[serde(rename = "tool.output")]
    #[strum(serialize = "tool.output")]
    ToolOutput(ToolOutputEvent),
    /// A call ended (its record is written with the batch).
    #[serde(rename = "tool.finished")]
    #[strum(serialize = "tool.finished")]
    ToolFinished(ToolFinished),
    /// A call was resolved without running: denied, refused by policy, or answered by
    /// the client.
    #[serde(rename = "tool.resolved")]
    #[strum(serialize = "tool.resolved")]
    ToolResolved(ToolResolved),
    /// A model request failed and will be tried again.
    #[serde(rename = "model.retry")]
    #[strum(serialize = "model.retry")]
    ModelRetry(ModelRetry),
    /// Older turns were compacted to keep the next request within the context budget.
    #[serde(rename = "context.compacted")]
    #[strum(serialize = "context.compacted")]
    ContextCompacted(ContextCompacted),
    /// A spend limit was reached before a model request: the run pauses, fails or goes
    /// on, as the budget says.
    #[serde(rename = "budget.reached")]
    #[strum(serialize = "budget.reached")]
    BudgetReached(BudgetReached),
    /// The run paused; the items are in the run object.
    #[serde(rename = "run.requires_action")]
    #[strum(serialize = "run.requires_action")]
    RunRequiresAction(RunRequiresAction),
    /// The model answered without calling a tool.
    #[serde(rename = "run.completed")]
    #[strum(serialize = "run.completed")]
    RunCompleted(RunCompleted),
    /// The loop stopped at `max_iterations` (or a limit) without a final answer.
    #[serde(rename = "run.incomplete")]
    #[strum(serialize = "run.incomplete")]
    RunIncomplete(RunIncomplete),
    /// The run could not go on; `resume` retries.
    #[serde(rename = "run.failed")]
    #[strum(serialize = "run.failed")]
    RunFailed(RunFailed),
    /// The run was cancelled; it never continues.
    #[serde(rename = "run.cancelled")]
    #[strum(serialize = "run.cancelled")]
    RunCancelled(RunCancelled),
}

impl RunEvent {
    /// Every event's name, as in its `type` field.
    pub const NAMES: &'static [&'static str] = <RunEvent as strum::VariantNames>::VARIANTS;

    /// The event's name, as in its `type` field (`run.started`, `tool.finished`, ...).
    pub fn name(&self) -> &'static str {
        self.into()
    }

    /// The run it belongs to.
    pub fn run_id(&self) -> &str {
        match self {
            RunEvent::RunStarted(e) => &e.run_id,
            RunEvent::TextDelta(e) => &e.run_id,
            RunEvent::ReasoningDelta(e) => &e.run_id,
            RunEvent::ToolCallParsed(e) => &e.run_id,
            RunEvent::ParseProblem(e) => &e.run_id,
            RunEvent::ApprovalRequested(e) => &e.run_id,
            RunEvent::ApprovalExpiring(e) => &e.run_id,
            RunEvent::ApprovalExpired(e) => &e.run_id,
            RunEvent::ToolStarted(e) => &e.run_id,
            RunEvent::ToolOutput(e) => &e.run_id,
            RunEvent::ToolFinished(e) => &e.run_id,
            RunEvent::ToolResolved(e) => &e.run_id,
            RunEvent::ModelRetry(e) => &e.run_id,
            RunEvent::ContextCompacted(e) => &e.run_id,
            RunEvent::BudgetReached(e) => &e.run_id,
            RunEvent::RunRequiresAction(e) => &e.run_id,
            RunEvent::RunCompleted(e) => &e.run_id,
            RunEvent::RunIncomplete(e) => &e.run_id,
            RunEvent::RunFailed(e) => &e.run_id,
            RunEvent::RunCancelled(e) => &e.run_id,
        }
    }

    /// The run has stopped being driven (paused or ended).
    pub fn is_last(&self) -> bool {
        matches!(
            self,
            RunEvent::RunRequiresAction(_)
                | RunEvent::RunCompleted(_)
                | RunEvent::RunIncomplete(_)
                | RunEvent::RunFailed(_)
                | RunEvent::RunCancelled(_)
        )
    }
}

impl From<ToolOutputEvent> for RunEvent {
    fn from(e: ToolOutputEvent) -> RunEvent {
        RunEvent::ToolOutput(e)
    }
}

/// `RunEvent::X(x)` from `x`, for each event struct.
macro_rules! into_run_event {
    ($($event:ident),* $(,)?) => {
        $(
            impl From<$event> for RunEvent {
                fn from(e: $event) -> RunEvent {
                    RunEvent::$event(e)
                }
            }
        )*
    };
}

into_run_event!(
    RunStarted,
    TextDelta,
    ReasoningDelta,
    ToolCallParsed,
    ParseProblem,
    ApprovalRequested,
    ApprovalExpiring,
    ApprovalExpired,
    ToolStarted,
    ToolFinished,
    ToolResolved,
    ModelRetry,
    ContextCompacted,
    BudgetReached,
    RunRequiresAction,
    RunCompleted,
    RunIncomplete,
    RunFailed,
    RunCancelled,
);

/// `run.started`: a run began (or a paused or failed one continued).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunStarted {
    pub run_id: String,
    pub conversation_id: String,
    pub agent: String,
    pub model: String,
    /// The run was paused or failed before and continues.
    pub resumed: bool,
}

/// `text.delta`: model text that is not a tool call, as it streams.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TextDelta {
    pub run_id: String,
    pub text: String,
}

/// `reasoning.delta`: a piece of the model's reasoning, as it streams. Pieces of one
/// answer follow each other; the whole of it is recorded with the assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReasoningDelta {
    pub run_id: String,
    pub text: String,
}

/// `tool_call.parsed`: a call was found in the model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolCallParsed {
    pub run_id: String,
    pub call_id: String,
    pub tool: String,
    /// The call's arguments (secret parameters redacted).
    #[schema(value_type = Object)]
    pub arguments: serde_json::Value,
}

/// `parse.problem`: something in the answer was odd but recoverable (a dropped call, a
/// value kept as text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ParseProblem {
    pub run_id: String,
    pub message: String,
}

/// `approval.requested`: a call waits for a person's decision or the client's output
/// (the item's fields, beside the run's id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApprovalRequested {
    pub run_id: String,
    #[serde(flatten)]
    pub item: RequiredItem,
}

/// `approval.expiring`: an approval's deadline is near: sent once, at the lead `serve`
/// is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApprovalExpiring {
    pub run_id: String,
    #[serde(flatten)]
    pub item: RequiredItem,
}

/// `approval.expired`: an approval's deadline passed with nobody deciding: the call is
/// denied, or the run cancelled (the item's `on_timeout`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApprovalExpired {
    pub run_id: String,
    #[serde(flatten)]
    pub item: RequiredItem,
}

/// `tool.started`: a call got its slot and started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolStarted {
    pub run_id: String,
    pub call_id: String,
    pub tool: String,
    pub conversation_id: String,
}

/// `tool.output`: a part of a call's output, streamed before the call ends. A part is
/// never split across events, so concurrent calls never interleave inside one.
// Named `ToolOutput` in the OpenAPI document, as before the rename (a plain comment:
// a doc line would change the document).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = ToolOutput)]
pub struct ToolOutputEvent {
    pub run_id: String,
    pub call_id: String,
    pub part: Part,
}

/// `tool.finished`: a call ended (its record is written with the batch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolFinished {
    pub run_id: String,
    pub call_id: String,
    pub tool: String,
    pub status: CallStatus,
    pub duration_ms: f64,
    /// Why it failed, when it did (`timeout`, `invalid_arguments`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub error_kind: Option<ErrorKind>,
}

/// `tool.resolved`: a call was resolved without running: denied, refused by policy, or
/// answered by the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolResolved {
    pub run_id: String,
    pub call_id: String,
    pub tool: String,
    pub status: CallStatus,
    /// What the model is told as the call's result.
    pub output: String,
}

/// `model.retry`: a model request failed and will be tried again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ModelRetry {
    pub run_id: String,
    pub attempt: u32,
    pub wait_ms: u64,
    pub error: String,
}

/// `context.compacted`: older turns were compacted to keep the next request within the
/// context budget (`summarize`: the model summarized them, in a request of its own;
/// `truncate`: they were dropped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ContextCompacted {
    pub run_id: String,
    pub strategy: String,
    /// How many messages of the request were replaced.
    pub messages: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// `budget.reached`: a spend limit was reached before a model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BudgetReached {
    pub run_id: String,
    /// Whose budget: `agent NAME`, `key NAME` or `tenant NAME`.
    pub whose: String,
    /// `run`, `conversation`, `day` or `month`.
    pub per: String,
    /// `tokens` or `usd`.
    pub unit: String,
    /// The limit and what was spent, in the unit (dollars written as decimals).
    pub limit: String,
    pub spent: String,
    /// `pause`, `fail` or `warn`.
    pub on_limit: String,
    /// The `budget` item the run waits on (when it pauses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// `run.requires_action`: the run paused; the items are in the run object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunRequiresAction {
    pub run_id: String,
    pub items: Vec<RequiredItem>,
}

/// `run.completed`: the model answered without calling a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunCompleted {
    pub run_id: String,
}

/// `run.incomplete`: the run stopped without a final answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunIncomplete {
    pub run_id: String,
    pub reason: String,
}

/// `run.failed`: the run could not go on; `resume` retries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunFailed {
    pub run_id: String,
    pub error: String,
}

/// `run.cancelled`: the run was cancelled; it never continues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunCancelled {
    pub run_id: String,
}

/// What the engine reports of the calls it runs. It knows no run: a run sends each as
/// its own [`RunEvent`] ([`Event::in_run`]), and `toolgate tools call` prints streamed
/// output from it.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A call got its slot and started.
    ToolStarted {
        call_id: String,
        tool: String,
        conversation_id: String,
    },
    /// A part of a call's output, streamed before the call ends.
    ToolOutput { call_id: String, part: Part },
    /// A call ended.
    ToolFinished {
        call_id: String,
        tool: String,
        status: CallStatus,
        duration_ms: f64,
        error_kind: Option<ErrorKind>,
    },
}

impl Event {
    /// The run event this is in run `run_id` (`tool.started`, `tool.output`,
    /// `tool.finished`).
    pub fn in_run(self, run_id: String) -> RunEvent {
        match self {
            Event::ToolStarted {
                call_id,
                tool,
                conversation_id,
            } => RunEvent::ToolStarted(ToolStarted {
                run_id,
                call_id,
                tool,
                conversation_id,
            }),
            Event::ToolOutput { call_id, part } => RunEvent::ToolOutput(ToolOutputEvent {
                run_id,
                call_id,
                part,
            }),
            Event::ToolFinished {
                call_id,
                tool,
                status,
                duration_ms,
                error_kind,
            } => RunEvent::ToolFinished(ToolFinished {
                run_id,
                call_id,
                tool,
                status,
                duration_ms,
                error_kind,
            }),
        }
    }
}

#[cfg(test)]
mod schema_names {
    #[test]
    fn the_tool_output_event_keeps_its_openapi_name() {
        use utoipa::ToSchema;
        assert_eq!(super::ToolOutputEvent::name(), "ToolOutput");
    }
}
