//! The task methods, answered for one caller of one agent's gateway: `tools/call` with
//! `task` (the call starts as a single-call run of its own conversation, so tasks wait
//! side by side, and the answer is the task), `tasks/get`, `tasks/result`, `tasks/list`
//! and `tasks/cancel`. A task of another tenant or agent reads as an unknown one.

use std::sync::Arc;

use serde_json::{Value, json};

use super::super::{Gateway, cancel, single};
use super::follow;
use super::wire::{RELATED_TASK, RpcError, TaskStatus, status_note, task_json};
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::identity::{DEFAULT_TENANT, Identity, RunOwner};
use toolgate_protocol::{RunObject, RunStatus};
use toolgate_runtime::agent::Agent;
use toolgate_store::{McpTask, TaskPage};

/// A task's TTL when the client asks for none (milliseconds): an hour.
const DEFAULT_TTL_MS: i64 = 3_600_000;
/// The longest TTL granted (milliseconds): a day.
const MAX_TTL_MS: i64 = 86_400_000;
/// The shortest TTL granted (milliseconds).
const MIN_TTL_MS: i64 = 1_000;
/// Tasks per `tasks/list` page.
const PAGE: u32 = 50;

/// Where a task's status notifications go (the stdio output, or the SSE answer of the
/// `tasks/result` request over HTTP).
pub type Notes = Arc<dyn Fn(Value) + Send + Sync>;

/// The task methods for one caller of one agent's gateway.
pub struct Tasks {
    pub(super) gateway: Arc<Gateway>,
    agent: Agent,
    /// The authenticated caller (HTTP); over stdio none: the gateway's owner.
    who: Option<Identity>,
}

impl Tasks {
    pub fn new(gateway: Arc<Gateway>, agent: Agent, who: Option<Identity>) -> Self {
        Self {
            gateway,
            agent,
            who,
        }
    }

    /// The caller's tenant.
    fn tenant(&self) -> String {
        match (&self.who, &self.gateway.owner) {
            (Some(who), _) => who.tenant.clone(),
            (None, Some(owner)) => owner.tenant.clone(),
            (None, None) => DEFAULT_TENANT.to_string(),
        }
    }

    /// Answers task method `method`; status notifications on the way go to `notes`.
    pub async fn answer(
        &self,
        method: &str,
        params: Value,
        notes: &Notes,
    ) -> Result<Value, RpcError> {
        match method {
            "tools/call" => self.create(params).await,
            "tasks/get" => {
                let task = self.find(&params).await?;
                let (run, status, message) = self.state(&task).await?;
                Ok(task_json(&task, status, message, run.updated_at))
            }
            "tasks/result" => self.result(&params, notes).await,
            "tasks/list" => self.list(&params).await,
            "tasks/cancel" => self.cancel(&params, notes).await,
            other => Err(RpcError::invalid(format!("'{other}' is not a task method"))),
        }
    }

    /// A task-augmented `tools/call`: the call starts (and runs, when nothing holds it)
    /// as a run of its own; the answer is the task.
    async fn create(&self, params: Value) -> Result<Value, RpcError> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid("tools/call needs the tool's 'name'"))?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(RpcError::invalid("'arguments' must be an object")),
        };
        let ttl_ms = params["task"]
            .get("ttl")
            .and_then(Value::as_f64)
            .map_or(DEFAULT_TTL_MS, |t| (t as i64).clamp(MIN_TTL_MS, MAX_TTL_MS));
        let started = single::start(single::Call {
            gateway: &self.gateway,
            agent: &self.agent,
            conversation: toolgate_runtime::run::new_id("conv_mcp"),
            name,
            arguments,
            owner: self.who.as_ref().map(RunOwner::of),
        })
        .await;
        let run = match started {
            Ok((run, _)) => run,
            Err(result) => return Err(RpcError::invalid(text_of(&result))),
        };
        let task = McpTask {
            id: format!("task_{}", uuid::Uuid::new_v4().simple()),
            run_id: run.id.clone(),
            tenant: run.tenant.clone(),
            agent: self.agent.name.clone(),
            created_at: now_ms(),
            ttl_ms,
        };
        self.gateway
            .runner
            .store
            .create_mcp_task(task.clone())
            .await
            .map_err(|e| RpcError::internal(format!("cannot keep the task: {e}")))?;
        tracing::info!(task_id = %task.id, run_id = %run.id, "MCP task created");
        let (status, message) = self.status(&run).await;
        Ok(json!({"task": task_json(&task, status, message, run.updated_at)}))
    }

    /// The caller's task named by `params.taskId`, unless it expired.
    async fn find(&self, params: &Value) -> Result<McpTask, RpcError> {
        let id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid("the request needs a 'taskId'"))?;
        let found = self
            .gateway
            .runner
            .store
            .mcp_task(id)
            .await
            .map_err(|e| RpcError::internal(format!("cannot read task {id}: {e}")))?;
        match found {
            Some(t)
                if t.tenant == self.tenant()
                    && t.agent == self.agent.name
                    && t.expires_at() > now_ms() =>
            {
                Ok(t)
            }
            _ => Err(RpcError::invalid(format!("no task {id}"))),
        }
    }

    /// A task's run and the status it gives the task.
    pub(super) async fn state(
        &self,
        task: &McpTask,
    ) -> Result<(RunObject, TaskStatus, Option<String>), RpcError> {
        let run = self
            .gateway
            .runner
            .get(&task.run_id)
            .await
            .map_err(|e| RpcError::internal(format!("cannot read run {}: {e}", task.run_id)))?;
        let (status, message) = self.status(&run).await;
        Ok((run, status, message))
    }

    async fn status(&self, run: &RunObject) -> (TaskStatus, Option<String>) {
        let succeeded = run.status == RunStatus::Completed
            && single::result(&self.gateway, run).await.is_error != Some(true);
        TaskStatus::of(run, succeeded)
    }

    /// `tasks/result`: waits for the task's end and answers with its call's result.
    async fn result(&self, params: &Value, notes: &Notes) -> Result<Value, RpcError> {
        let task = self.find(params).await?;
        let run = follow::to_end(self, &task, notes).await?;
        let result = single::result(&self.gateway, &run).await;
        let mut v = serde_json::to_value(result)
            .map_err(|e| RpcError::internal(format!("cannot write the result: {e}")))?;
        if let Some(o) = v.as_object_mut() {
            o.insert("_meta".into(), json!({RELATED_TASK: {"taskId": task.id}}));
        }
        Ok(v)
    }

    /// `tasks/list`: the caller's tasks of this agent, oldest first, a page at a time.
    async fn list(&self, params: &Value) -> Result<Value, RpcError> {
        let after = match params.get("cursor").and_then(Value::as_str) {
            None => None,
            Some(c) => {
                Some(cursor_of(c).ok_or_else(|| RpcError::invalid("not a cursor of tasks/list"))?)
            }
        };
        let mut page = self
            .gateway
            .runner
            .store
            .mcp_tasks(TaskPage {
                tenant: self.tenant(),
                agent: self.agent.name.clone(),
                after,
                limit: PAGE + 1,
            })
            .await
            .map_err(|e| RpcError::internal(format!("cannot list the tasks: {e}")))?;
        let more = page.len() > PAGE as usize;
        page.truncate(PAGE as usize);
        let now = now_ms();
        let mut tasks = Vec::new();
        for task in page.iter().filter(|t| t.expires_at() > now) {
            let (run, status, message) = self.state(task).await?;
            tasks.push(task_json(task, status, message, run.updated_at));
        }
        let mut answer = json!({"tasks": tasks});
        if let (true, Some(last)) = (more, page.last()) {
            answer["nextCursor"] = Value::String(format!("{}.{}", last.created_at, last.id));
        }
        Ok(answer)
    }

    /// `tasks/cancel`: cancels the task's run (its call never runs); refused once the
    /// task has ended.
    async fn cancel(&self, params: &Value, notes: &Notes) -> Result<Value, RpcError> {
        let task = self.find(params).await?;
        let (_, status, _) = self.state(&task).await?;
        if status.is_terminal() {
            return Err(RpcError::invalid(format!(
                "task {} has ended ({}); it cannot be cancelled",
                task.id,
                <&str>::from(status)
            )));
        }
        cancel::cancel_run(&self.gateway, &task.run_id, "the MCP task was cancelled")
            .await
            .map_err(RpcError::invalid)?;
        let (run, status, message) = self.state(&task).await?;
        let view = task_json(&task, status, message, run.updated_at);
        notes(status_note(view.clone()));
        Ok(view)
    }
}

/// A `tasks/list` cursor (`CREATED_AT.TASK_ID`) read back.
fn cursor_of(text: &str) -> Option<(i64, String)> {
    let (at, id) = text.split_once('.')?;
    Some((at.parse().ok()?, id.to_string()))
}

/// The text of an error result.
fn text_of(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
