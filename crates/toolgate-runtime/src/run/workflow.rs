//! Workflow runs: a workflow tool's call runs as a child run (like a sub-agent's) whose
//! turns are the workflow's steps instead of a model's answers. Each step's arguments
//! are rendered from the input and the results saved so far, then the call goes
//! through the same gate as any call (a CONFIRM step pauses the run, and the parent's
//! pause shows its item); a step that does not succeed stops the workflow, named in
//! the error. The child has the parent's agent (its permissions, rules and hooks) with
//! the steps' tools added, and its progress is saved in its state, so it continues in
//! any process like any run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::agent_loop::feed_back;
use super::context::ContextLive;
use super::ending::End;
use super::save::Save;
use super::state::Phase;
use super::{Live, RunError, Runner};
use crate::agent::Agent;
use toolgate_model::Message;
use toolgate_parse::ToolCall;
use toolgate_protocol::{CallStatus, RunStatus};
use toolgate_tool::workflow::{self, INPUT, Workflow};
use toolgate_tool::{Entry, Toolkit};

/// The model name of a workflow's run: `workflow:TOOL` (no model is asked).
pub const PREFIX: &str = "workflow:";

/// Where a workflow run stands, saved with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowPlay {
    /// The workflow tool.
    pub tool: String,
    /// Steps that succeeded.
    pub done: usize,
    /// The input (as `input`) and each saved result, by its `save_as` name.
    pub scope: Map<String, Value>,
    /// The last step's result as it came: the answer of a workflow without `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

impl WorkflowPlay {
    /// The start of the workflow a run's model names (`workflow:TOOL`; none for any
    /// other model) on `input`, the call's arguments as JSON text.
    pub(super) fn of_model(model: &str, input: &str) -> Result<Option<Self>, RunError> {
        match model.strip_prefix(PREFIX) {
            Some(tool) => Self::start(tool, input).map(Some),
            None => Ok(None),
        }
    }

    fn start(tool: &str, input: &str) -> Result<Self, RunError> {
        let input: Value = serde_json::from_str(input).map_err(|e| {
            RunError::BadInput(format!(
                "the input of workflow '{tool}' is not a JSON object: {e}"
            ))
        })?;
        if !input.is_object() {
            return Err(RunError::BadInput(format!(
                "the input of workflow '{tool}' is not a JSON object"
            )));
        }
        Ok(Self {
            tool: tool.to_string(),
            done: 0,
            scope: Map::from_iter([(INPUT.to_string(), input)]),
            last: None,
        })
    }
}

/// The workflow `name` is, in `toolkit`.
pub(super) fn workflow_in(toolkit: &Toolkit, name: &str) -> Option<Workflow> {
    match toolkit.resolve(name).ok()?.spec.entry.clone() {
        Entry::Workflow(w) => Some(w),
        _ => None,
    }
}

impl Runner {
    /// The agent a workflow's run has: `agent` with the steps' tools added, and as many
    /// turns as the workflow has steps.
    pub(super) fn workflow_agent(
        &self,
        mut agent: Agent,
        name: &str,
        tools_dir: Option<&std::path::Path>,
    ) -> Result<Agent, RunError> {
        let library = self
            .loaded
            .library(tools_dir, |dir| (self.load_library)(dir))
            .map_err(|e| RunError::BadInput(e.to_string()))?;
        let Some(Entry::Workflow(w)) = library.get(name).map(|t| t.spec.entry.clone()) else {
            return Err(RunError::BadInput(format!(
                "'{name}' is not a workflow of the tools folder"
            )));
        };
        for tool in w.tools() {
            if !agent.tools.contains(&tool) {
                agent.tools.push(tool);
            }
        }
        agent.max_iterations = w.steps.len() as u32 + 1;
        Ok(agent)
    }

    /// A workflow run's next move: its next step's call gated into the turn, or (every
    /// step done) its answer. `Some`: the run ended.
    pub(super) async fn play_step(&self, live: &mut Live) -> Result<Option<End>, RunError> {
        let Some(play) = live.state.workflow.clone() else {
            return Ok(None);
        };
        let Some(w) = workflow_in(&live.toolkit, &play.tool) else {
            let why = format!(
                "'{}' is no longer a workflow of the tools folder",
                play.tool
            );
            return self.stop(live, why).await.map(Some);
        };
        let Some(step) = w.steps.get(play.done) else {
            let answer = match &w.output {
                Some(t) => workflow::render(t, &play.scope).map(|v| workflow::as_text(&v)),
                None => Ok(play.last.clone().unwrap_or_default()),
            };
            return match answer {
                Ok(answer) => {
                    self.answer_with(live, answer);
                    self.save(live, Save::end(RunStatus::Completed, None))
                        .await?;
                    Ok(Some(End::Completed))
                }
                Err(e) => self.stop(live, format!("its output: {e}")).await.map(Some),
            };
        };
        let at = format!(
            "step {} of {} ({})",
            play.done + 1,
            w.steps.len(),
            step.tool
        );
        let arguments = match workflow::render(&Value::Object(step.arguments.clone()), &play.scope)
        {
            Ok(Value::Object(m)) => m,
            Ok(_) => Map::new(),
            Err(e) => {
                let why = format!("{at}: its arguments could not be made: {e}");
                return self.stop(live, why).await.map(Some);
            }
        };
        live.state.iteration += 1;
        let call = ToolCall {
            id: format!(
                "{}_step{}",
                live.run_id.replacen("run_", "call_", 1),
                play.done + 1
            ),
            name: step.tool.clone(),
            arguments,
        };
        live.state
            .messages
            .push(Message::assistant(String::new(), vec![call.clone()]));
        let turn = self.gate(live, vec![call]).await;
        live.state.turn = Some(turn);
        Ok(None)
    }

    /// A workflow's step has its result: saved under its name, or (it did not succeed)
    /// the workflow stops there. `Some`: the run ended.
    pub(super) async fn step_settled(
        &self,
        live: &mut Live,
        ctx: &ContextLive,
    ) -> Result<Option<End>, RunError> {
        let Some(mut play) = live.state.workflow.clone() else {
            return Ok(None);
        };
        let steps = workflow_in(&live.toolkit, &play.tool).map(|w| w.steps);
        let (status, output) = match live.state.turn.as_deref() {
            Some([c, ..]) => match &c.phase {
                Phase::Done { status, output } => (*status, output.clone()),
                _ => (CallStatus::Failed, String::new()),
            },
            _ => (CallStatus::Failed, String::new()),
        };
        let step = steps.as_ref().and_then(|s| s.get(play.done));
        feed_back(live, ctx);
        let at = format!(
            "step {} of {} ({})",
            play.done + 1,
            steps.as_ref().map_or(0, Vec::len),
            step.map_or("?", |s| s.tool.as_str())
        );
        // A client tool's submitted output is the step's result, as a success is.
        if !matches!(status, CallStatus::Succeeded | CallStatus::Client) {
            let how = match status {
                CallStatus::Denied => "was denied".to_string(),
                CallStatus::Failed => "failed".to_string(),
                other => format!("ended {}", other.as_str()),
            };
            return self
                .stop(live, format!("{at} {how}: {output}"))
                .await
                .map(Some);
        }
        if let Some(name) = step.and_then(|s| s.save_as.clone()) {
            play.scope.insert(name, workflow::saved_value(&output));
        }
        play.done += 1;
        play.last = Some(output);
        live.state.workflow = Some(play);
        Ok(None)
    }

    /// Ends a workflow run failed, `why` naming the step.
    async fn stop(&self, live: &mut Live, why: String) -> Result<End, RunError> {
        self.save(live, Save::end(RunStatus::Failed, Some(why.clone())))
            .await?;
        Ok(End::Failed(why))
    }
}
