//! Sub-agent and workflow calls: each is a child run (its own conversation, toolkit, permissions,
//! model and limits) linked to the parent's call. The loop hands its `Delegated` calls
//! here; their children run concurrently, within the parent's limits (category
//! `subagent`). A finished child's answer is the call's result (its failure or
//! `incomplete` an error result); a paused child leaves the call delegated and its
//! items surface in the parent's pause, with the path of run ids to each. Starting a
//! child is safe to repeat: the store keeps one child per (parent run, call), and a
//! child continues from its own saved state, so nothing approved below runs twice.
//! A workflow's child has the parent's agent and plays the workflow's steps (see
//! `run::workflow`).

use serde_json::Value;

use super::state::{Phase, TreePlace, TurnCall};
use super::{Live, RunError, Runner, StartRun};
use crate::agent::Agent;
use crate::engine::{Admission, Cancel, Engine};
use crate::subagents::{CATEGORY, Subagent};
use toolgate_parse::ToolCall;
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::{
    CallStatus, CallerKind, ErrorKind, RequiredItem, RunObject, RunStatus, events,
};
use toolgate_store::{CallRecord, Refusal, RunLink};
use toolgate_tool::Permission;
use toolgate_tool::permission::Gate;

/// What a parent needs to start or continue one child.
struct ChildJob {
    index: usize,
    call: ToolCall,
    target: Result<Target, String>,
    /// The parent's agent: a workflow's child runs with it.
    parent_agent: std::sync::Arc<Agent>,
    parent_run_id: String,
    parent_conversation: String,
    parent_model: String,
    place: TreePlace,
    tools_dir: Option<std::path::PathBuf>,
    workspace: std::path::PathBuf,
    /// The priority the parent run was started with, inherited.
    priority: Option<i32>,
    owner: Option<toolgate_protocol::identity::RunOwner>,
}

/// Where a delegated call goes.
#[derive(Clone)]
enum Target {
    Agent(Subagent),
    /// A workflow tool, by name.
    Workflow(String),
}

impl Target {
    fn name(&self) -> &str {
        match self {
            Target::Agent(s) => &s.name,
            Target::Workflow(name) => name,
        }
    }

    /// How the parent speaks of it.
    fn who(&self) -> String {
        match self {
            Target::Agent(s) => format!("The sub-agent '{}'", s.name),
            Target::Workflow(name) => format!("The workflow '{name}'"),
        }
    }
}

/// How a child stands after this drive.
enum ChildEnd {
    /// Finished: the call's result and record.
    Done {
        status: CallStatus,
        output: String,
        error_kind: Option<ErrorKind>,
        started_at: i64,
        duration_ms: f64,
    },
    /// Paused: its items, seen from the parent.
    Waiting(Vec<RequiredItem>),
    /// The parent was interrupted while the child ran; the call stays delegated.
    Interrupted,
}

impl Runner {
    /// Whether a resolved call goes to a sub-agent or a workflow (it must also have
    /// valid arguments: an invalid one goes back to the model as the engine's
    /// validation error).
    pub(super) fn is_subagent_call(&self, live: &Live, c: &TurnCall) -> bool {
        let delegated = live
            .agent
            .subagents
            .target(&c.call.name, &c.call.arguments)
            .is_some()
            || super::workflow::workflow_in(&live.toolkit, &c.call.name).is_some();
        delegated
            && live
                .toolkit
                .resolve(&c.call.name)
                .is_ok_and(|t| t.check(c.call.arguments.clone()).is_ok())
    }

    /// The gate of a routed sub-agent call: the permission of the sub-agent it names.
    pub(super) fn subagent_gate(&self, live: &Live, call: &ToolCall, gate: Gate) -> Gate {
        if gate != Gate::Run || !live.agent.subagents.routed {
            return gate;
        }
        match live.agent.subagents.target(&call.name, &call.arguments) {
            Some(Ok(s)) => match s.permission {
                Permission::Never => Gate::Refuse,
                Permission::Confirm if !live.standing.contains(&call.name) => Gate::Approval,
                _ => gate,
            },
            _ => gate,
        }
    }

    /// Starts or continues the child of every delegated call, concurrently; records the
    /// finished ones (saved before the model sees them). Returns the children's items.
    pub(super) async fn settle_children(
        &self,
        live: &mut Live,
        turn: &mut [TurnCall],
        engine: &Engine,
        cancel: &Cancel,
    ) -> Result<Vec<RequiredItem>, RunError> {
        let jobs: Vec<ChildJob> = (0..turn.len())
            .filter(|&i| turn[i].phase == Phase::Delegated)
            .map(|i| self.child_job(live, i, &turn[i].call))
            .collect();
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let ends = futures_util::future::join_all(jobs.into_iter().map(|job| {
            let (engine, cancel) = (engine.clone(), cancel.clone());
            async move {
                let index = job.index;
                (index, self.child(job, &engine, &cancel).await)
            }
        }))
        .await;
        let mut waiting = Vec::new();
        let mut finished = false;
        for (i, end) in ends {
            let c = &mut turn[i];
            match end? {
                ChildEnd::Waiting(items) => waiting.extend(items),
                ChildEnd::Interrupted => {}
                ChildEnd::Done {
                    status,
                    output,
                    error_kind,
                    started_at,
                    duration_ms,
                } => {
                    finished = true;
                    let mut record = CallRecord {
                        call_id: c.call.id.clone(),
                        run_id: Some(live.run_id.clone()),
                        conversation_id: live.conversation_id.clone(),
                        agent: Some(live.agent.name.clone()),
                        caller: CallerKind::Agent,
                        tool: c.call.name.clone(),
                        arguments: Value::Object(c.call.arguments.clone()),
                        result: None,
                        result_size: 0,
                        status,
                        error_kind,
                        error_message: error_kind.map(|_| output.clone()),
                        started_at,
                        duration_ms,
                        replaced: false,
                        attempts: Vec::new(),
                        cached: None,
                    };
                    if error_kind.is_none() {
                        record.set_result(&output);
                    }
                    live.records.push(record);
                    self.emit(events::ToolFinished {
                        run_id: live.run_id.clone(),
                        call_id: c.call.id.clone(),
                        tool: c.call.name.clone(),
                        status,
                        duration_ms,
                        error_kind,
                    });
                    live.pending_updates
                        .extend(c.enter(Phase::Done { status, output }));
                }
            }
        }
        if finished {
            live.state.turn = Some(turn.to_vec());
            self.save(live, super::save::Save::step()).await?;
            live.state.turn = None;
        }
        Ok(waiting)
    }

    fn child_job(&self, live: &Live, index: usize, call: &ToolCall) -> ChildJob {
        let (depth, max_depth, mut lineage) = match &live.state.tree {
            Some(p) => (p.depth, p.max_depth, p.lineage.clone()),
            None => (0, live.agent.max_depth, vec![live.agent.name.clone()]),
        };
        let target = match live.agent.subagents.target(&call.name, &call.arguments) {
            Some(Ok(s)) => Ok(Target::Agent(s.clone())),
            Some(Err(e)) => Err(e.to_string()),
            None if super::workflow::workflow_in(&live.toolkit, &call.name).is_some() => {
                Ok(Target::Workflow(call.name.clone()))
            }
            None => Err(format!("'{}' is not a sub-agent of this agent", call.name)),
        };
        if let Ok(t) = &target {
            lineage.push(t.name().to_string());
        }
        let own_depth = match &target {
            Ok(Target::Agent(s)) => s.max_depth,
            _ => None,
        };
        let max_depth = match own_depth {
            Some(m) => max_depth.min(depth + m),
            None => max_depth,
        };
        ChildJob {
            index,
            call: call.clone(),
            target,
            parent_agent: std::sync::Arc::new(live.agent.clone()),
            parent_run_id: live.run_id.clone(),
            parent_conversation: live.conversation_id.clone(),
            parent_model: live.state.model.clone(),
            place: TreePlace {
                depth: depth + 1,
                max_depth,
                lineage,
            },
            tools_dir: live.state.tools_dir.clone(),
            workspace: live.state.workspace.clone(),
            priority: live.state.priority,
            owner: live.state.owner.clone(),
        }
    }

    /// Starts, continues or reads one child, then says where it stands.
    async fn child(
        &self,
        job: ChildJob,
        engine: &Engine,
        cancel: &Cancel,
    ) -> Result<ChildEnd, RunError> {
        let target = match job.target.clone() {
            Ok(t) => t,
            Err(e) => return Ok(refused(ErrorKind::SubagentUnknown, e)),
        };
        let (parent, call_id) = (job.parent_run_id.clone(), job.call.id.clone());
        let existing = self.store.child_run(&parent, &call_id).await?;
        // A child of its own: the parent's interrupt (or lost lease) stops it too.
        let runner = Runner {
            interrupt: cancel.clone(),
            ..self.clone()
        };
        let object = match existing {
            Some(row) if row.status.is_final() => runner.get(&row.id).await?,
            Some(row) if row.status == RunStatus::RequiresAction => {
                let object = runner.get(&row.id).await?;
                let waiting = object
                    .required_action
                    .as_ref()
                    .is_some_and(|r| !r.items.is_empty());
                if waiting {
                    object
                } else {
                    let _slot = self.subagent_slot(engine, cancel).await;
                    self.announce(&job, &target);
                    continue_child(&runner, &row.id).await?
                }
            }
            Some(row) => {
                let _slot = self.subagent_slot(engine, cancel).await;
                self.announce(&job, &target);
                continue_child(&runner, &row.id).await?
            }
            None => match self
                .start_child(&runner, &job, &target, engine, cancel)
                .await?
            {
                Ok(object) => object,
                Err(end) => return Ok(end),
            },
        };
        Ok(end_of(&job, &target, object, cancel))
    }

    /// Starts the child of a call that has none yet; `Ok(Err(_))`: it was refused (too
    /// deep, or its agent cannot start).
    async fn start_child(
        &self,
        runner: &Runner,
        job: &ChildJob,
        target: &Target,
        engine: &Engine,
        cancel: &Cancel,
    ) -> Result<Result<RunObject, ChildEnd>, RunError> {
        if let Some(end) = too_deep(job, target) {
            return Ok(Err(end));
        }
        let made = match target {
            Target::Agent(s) => self.loaded.agent(&s.file).map_err(RunError::from),
            Target::Workflow(name) => {
                self.workflow_agent((*job.parent_agent).clone(), name, job.tools_dir.as_deref())
            }
        };
        let agent = match made {
            Ok(a) => a,
            Err(e) => {
                return Ok(Err(refused(
                    unavailable(target),
                    format!("{} could not start: {e}", target.who()),
                )));
            }
        };
        // An allow-list that names agents holds for sub-agents too: a caller limited
        // to one agent does not reach another through it.
        if !super::allow_of(job.owner.as_ref()).agent(&agent.name) {
            return Ok(Err(refused(
                ErrorKind::Policy,
                format!(
                    "{} is not among the agents the caller of this run may use (allow-list)",
                    target.who()
                ),
            )));
        }
        let (start, link, place) = child_start(job, target, agent);
        let _slot = self.subagent_slot(engine, cancel).await;
        self.announce(job, target);
        // Boxed: the child's drive is as deep as the parent's.
        match Box::pin(runner.start_in_tree(start, Some((link, place)), Default::default())).await {
            Ok(object) => Ok(Ok(object)),
            Err(RunError::Refused {
                kind: Refusal::ChildExists,
                ..
            }) => {
                // Another process started it a moment ago: go on with that one.
                let (parent, call_id) = (job.parent_run_id.clone(), job.call.id.clone());
                let row = self
                    .store
                    .child_run(&parent, &call_id)
                    .await?
                    .ok_or_else(|| RunError::Corrupt("a sub-agent run vanished".into()))?;
                Ok(Ok(continue_child(runner, &row.id).await?))
            }
            Err(e @ (RunError::Store(_) | RunError::Corrupt(_) | RunError::Secret(_))) => Err(e),
            Err(e) => Ok(Err(refused(
                unavailable(target),
                format!("{} could not start: {e}", target.who()),
            ))),
        }
    }

    /// A slot among the parent's running calls (category `subagent`); none when the
    /// parent is stopping.
    async fn subagent_slot(
        &self,
        engine: &Engine,
        cancel: &Cancel,
    ) -> Option<crate::engine::limits::Permit> {
        tokio::select! {
            p = engine.children().acquire(Some(CATEGORY), 0, Admission::Approved) => p.ok(),
            _ = cancel.cancelled() => None,
        }
    }

    fn announce(&self, job: &ChildJob, target: &Target) {
        tracing::info!(call_id = %job.call.id, subagent = %target.name(), "child run driven");
        self.emit(events::ToolStarted {
            run_id: job.parent_run_id.clone(),
            call_id: job.call.id.clone(),
            tool: job.call.name.clone(),
            conversation_id: job.parent_conversation.clone(),
        });
    }
}

/// The error kind of a child that cannot start.
fn unavailable(target: &Target) -> ErrorKind {
    match target {
        Target::Agent(_) => ErrorKind::SubagentUnavailable,
        Target::Workflow(_) => ErrorKind::WorkflowFailed,
    }
}

/// A call that ends before its child runs: failed, with `output` for the model.
fn refused(kind: ErrorKind, output: String) -> ChildEnd {
    ChildEnd::Done {
        status: CallStatus::Failed,
        output,
        error_kind: Some(kind),
        started_at: now_ms(),
        duration_ms: 0.0,
    }
}

/// The refusal of a child that would run past the tree's `max_depth`.
fn too_deep(job: &ChildJob, target: &Target) -> Option<ChildEnd> {
    if job.place.depth <= job.place.max_depth {
        return None;
    }
    let cycle = job.place.lineage[..job.place.lineage.len() - 1]
        .iter()
        .any(|a| a == target.name());
    Some(refused(
        ErrorKind::MaxDepth,
        format!(
            "{} was not started: it would run {} levels below the top run, past max_depth {} ({}){}. Do the task without it.",
            target.who(),
            job.place.depth,
            job.place.max_depth,
            job.place.lineage.join(" -> "),
            if cycle {
                "; the agents call each other in a cycle"
            } else {
                ""
            }
        ),
    ))
}

/// The child's start: its agent, task, model and place in the tree, and its link to
/// the parent's call.
fn child_start(job: &ChildJob, target: &Target, agent: Agent) -> (StartRun, RunLink, TreePlace) {
    let task = match target {
        // A workflow's input: the call's arguments.
        Target::Workflow(_) => Value::Object(job.call.arguments.clone()).to_string(),
        Target::Agent(_) => job
            .call
            .arguments
            .get("task")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    };
    let mut place = job.place.clone();
    place.max_depth = place.max_depth.min(place.depth + agent.max_depth);
    // The child's own model; else the parent's, unless that is a file of
    // replies written for the parent. A workflow plays its steps.
    let model = match (target, &agent.model) {
        (Target::Workflow(name), _) => Some(format!("{}{name}", super::workflow::PREFIX)),
        (_, Some(_)) => None,
        _ if job.parent_model.starts_with("scripted:") => None,
        _ => Some(job.parent_model.clone()),
    };
    let start = StartRun {
        workspace: agent.workspace.clone().or(Some(job.workspace.clone())),
        agent,
        model,
        conversation: None,
        message: task,
        tools_dir: job.tools_dir.clone(),
        priority: job.priority,
        owner: job.owner.clone(),
    };
    let link = RunLink {
        parent_run_id: job.parent_run_id.clone(),
        parent_call_id: job.call.id.clone(),
        depth: place.depth,
    };
    (start, link, place)
}

/// Continues a child run; a lease held elsewhere is the caller's error.
async fn continue_child(runner: &Runner, id: &str) -> Result<RunObject, RunError> {
    Box::pin(runner.resume_here(id)).await
}

/// What the parent makes of a child's run object.
fn end_of(job: &ChildJob, target: &Target, child: RunObject, cancel: &Cancel) -> ChildEnd {
    let started_at = child.created_at;
    let duration_ms = (child.updated_at - child.created_at).max(0) as f64;
    let done = |status, output: String, error_kind| ChildEnd::Done {
        status,
        output,
        error_kind,
        started_at,
        duration_ms,
    };
    let who = format!("{} (run {})", target.who(), child.id);
    let failed = match target {
        Target::Agent(_) => ErrorKind::SubagentFailed,
        Target::Workflow(_) => ErrorKind::WorkflowFailed,
    };
    let why = child.last_error.clone().unwrap_or_default();
    match child.status {
        RunStatus::Completed => done(
            CallStatus::Succeeded,
            child.output.unwrap_or_default(),
            None,
        ),
        RunStatus::Incomplete => done(
            CallStatus::Failed,
            format!("{who} stopped without a final answer: {why}"),
            Some(ErrorKind::SubagentIncomplete),
        ),
        RunStatus::Cancelled => done(
            CallStatus::Cancelled,
            format!("{who} was cancelled."),
            Some(ErrorKind::Cancelled),
        ),
        RunStatus::RequiresAction => {
            let items = child
                .required_action
                .map(|r| r.items)
                .unwrap_or_default()
                .into_iter()
                .map(|mut item| {
                    let mut path = vec![job.parent_run_id.clone()];
                    if item.path.is_empty() {
                        path.push(child.id.clone());
                    } else {
                        path.extend(item.path);
                    }
                    item.run_id = Some(item.run_id.unwrap_or_else(|| child.id.clone()));
                    item.path = path;
                    item
                })
                .collect();
            ChildEnd::Waiting(items)
        }
        RunStatus::Failed | RunStatus::InProgress if cancel.is_cancelled() => ChildEnd::Interrupted,
        RunStatus::Failed | RunStatus::InProgress => done(
            CallStatus::Failed,
            format!("{who} failed: {why}"),
            Some(failed),
        ),
    }
}
