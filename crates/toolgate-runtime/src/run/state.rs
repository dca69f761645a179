//! A run's saved state: what it needs to continue in another process (the agent file,
//! model, tools folder and workspace it started with), the conversation so far, and
//! the current turn's calls with where each one stands.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent::Mode;
use toolgate_model::Message;
use toolgate_parse::ToolCall;
use toolgate_protocol::{CallStatus, Usage};
use toolgate_store::PendingState;
use toolgate_tool::permission::Gate;

/// Everything saved with a run (`runs.state`, as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The agent file, absolute; it is read again when the run continues.
    pub agent_file: PathBuf,
    /// The SHA-256 of the agent file the run started with (runs from before it: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_hash: Option<String>,
    /// The agent's name: a process with its own agents folder continues the run with
    /// the agent of this name there.
    pub agent: String,
    pub model: String,
    pub mode: Mode,
    /// The tools folder the run started with, absolute (`None`: built-ins only).
    pub tools_dir: Option<PathBuf>,
    pub workspace: PathBuf,
    pub max_iterations: u32,
    /// Model turns taken.
    pub iteration: u32,
    /// The conversation so far; stored apart (one row per message, appended), not in
    /// the state's JSON.
    #[serde(default, skip_serializing)]
    pub messages: Vec<Message>,
    /// The calls of the last model turn, until every one has its result.
    pub turn: Option<Vec<TurnCall>>,
    pub usage: Usage,
    /// The final answer, once completed.
    pub output: Option<String>,
    /// A single-call run (the MCP gateway's): its one turn is a call handed in from
    /// outside, and it ends when that call has its result; no model is asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub single_call: bool,
    /// Where the run sits in a tree of sub-agent runs (absent: a top run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreePlace>,
    /// The priority the run was started with (its calls', under the `priority`
    /// strategy); the agent's `priority:` when absent. Sub-agent runs inherit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// The W3C `traceparent` of the run's first drive, when traces are exported: every
    /// later drive (after a pause, in any process) continues that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Its tenant and who started it: the tools' context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<toolgate_protocol::identity::RunOwner>,
    /// Tools the client declared (the Responses API's function tools): offered to the
    /// model after the agent's, each call handed to the client.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_tools: Vec<toolgate_tool::ClientTool>,
    /// A JSON Schema output format the client asked for (OpenAI's `response_format`),
    /// sent to models that take it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    /// The loop guard's counts (calls made, continuations of cut answers).
    #[serde(
        default,
        skip_serializing_if = "super::loop_marks::LoopMarks::is_empty"
    )]
    pub marks: super::loop_marks::LoopMarks,
    /// Files saved from its calls' binary results, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<toolgate_protocol::FileOutput>,
    /// What its model requests cost so far, in nanodollars (by the price table).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_nanos: u64,
    /// Its budgets' raised limits, the `budget` item it waits on, warnings given.
    #[serde(default, skip_serializing_if = "super::budget::BudgetState::is_empty")]
    pub budget: super::budget::BudgetState,
    /// A workflow's run: its steps are its turns, and where it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<super::workflow::WorkflowPlay>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A sub-agent run's place in its tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreePlace {
    /// 1 for a top run's sub-agent, 2 below that, ...
    pub depth: u32,
    /// The deepest a run below the top may be along this path.
    pub max_depth: u32,
    /// The agents from the top run down to this one.
    pub lineage: Vec<String>,
}

/// One call of the current turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnCall {
    pub call: ToolCall,
    pub gate: Gate,
    pub phase: Phase,
    /// Arguments a person edited before approving; the call runs with these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<Map<String, Value>>,
    /// Why it waits for a person, and until when (see [`Ask`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<Ask>,
    /// Images the call's result carried, for the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<toolgate_model::ImagePart>,
}

impl TurnCall {
    /// Moves the call to `phase`: the one place a call changes phase. Returns the
    /// change its pending row takes with it (a call that waited for a person or the
    /// client has one): executing while it runs or its sub-agent does, done once it has
    /// its result.
    pub(super) fn enter(&mut self, phase: Phase) -> Option<(String, PendingState)> {
        let row = match phase {
            _ if self.gate == Gate::Run => None,
            Phase::Executing | Phase::Delegated => Some(PendingState::Executing),
            Phase::Done { .. } => Some(PendingState::Done),
            Phase::Waiting | Phase::Ready => None,
        };
        self.phase = phase;
        row.map(|state| (self.call.id.clone(), state))
    }
}

/// Why a call waits for a person (the rule or hook that asked) and its deadline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<toolgate_protocol::OnTimeout>,
}

/// Where one call stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// Waiting for a decision or the client's output.
    Waiting,
    /// Allowed; runs at the next step.
    Ready,
    /// Running (saved before it starts: found here after a crash, it is not run again).
    Executing,
    /// Carried out by a sub-agent's child run (found by this run and call id), which
    /// keeps its own state: continuing it again is safe.
    Delegated,
    /// Finished: how, and what the model is told.
    Done { status: CallStatus, output: String },
}

impl RunState {
    /// The ids already used by calls in this conversation.
    pub fn used_ids(&self) -> std::collections::HashSet<&str> {
        self.messages
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
            .collect()
    }
}
