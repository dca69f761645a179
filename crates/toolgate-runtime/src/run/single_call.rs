//! Single-call runs: one tool call handed in from outside (the MCP gateway's
//! `tools/call`), gated, run and recorded like a model's call, with no model turn
//! before or after it. A CONFIRM call pauses the run like any other, so it is listed,
//! decided and resumed from any process through the same store path.

use std::path::PathBuf;
use std::sync::Arc;

use super::{LEASE_MS, Live, RunError, RunState, Runner, sealing};
use crate::agent::Agent;
use toolgate_model::{Model, ModelError, ModelReply, ModelRequest, ReplySink};
use toolgate_parse::ToolCall;
use toolgate_protocol::{RunObject, Usage};
use toolgate_tool::Toolkit;

/// The model name a single-call run carries: no model is ever asked.
pub const NO_MODEL: &str = "none:single-call";

/// What a single-call run needs.
#[derive(Debug, Clone)]
pub struct StartCall {
    pub agent: Agent,
    /// The conversation the run joins (the MCP session's).
    pub conversation: String,
    /// The call; its id must be unique in the conversation.
    pub call: ToolCall,
    /// The tools folder to load (absolute or relative to the current folder).
    pub tools_dir: Option<PathBuf>,
    /// Overrides the agent's workspace.
    pub workspace: Option<PathBuf>,
    /// Its tenant and who started it (`None`: the default tenant).
    pub owner: Option<toolgate_protocol::identity::RunOwner>,
}

impl Runner {
    /// The toolkit `agent` gets from the tools folder `tools_dir`, from the runner's
    /// cache (reloaded when the files change).
    pub fn toolkit_of(
        &self,
        agent: &Agent,
        tools_dir: Option<&std::path::Path>,
    ) -> Result<Toolkit, RunError> {
        let tools_dir = tools_dir.map(super::absolute);
        self.toolkit(agent, tools_dir.as_deref())
    }

    /// Starts a run whose only turn is `req.call`, and drives it: it completes with the
    /// call's result as its output (the call's record says how it ended), or pauses
    /// with the call waiting for a decision.
    pub async fn start_call(&self, req: StartCall) -> Result<RunObject, RunError> {
        let tools_dir = req.tools_dir.as_deref().map(super::absolute);
        let toolkit = self
            .toolkit(&req.agent, tools_dir.as_deref())?
            .limited(&super::allow_of(req.owner.as_ref()));
        let workspace =
            super::workspace_of(req.workspace.as_deref(), &req.agent, req.owner.as_ref());
        let run_id = super::new_id("run");
        let state = RunState {
            agent_file: req.agent.path.clone(),
            agent_hash: super::folders::file_hash(&req.agent.path),
            agent: req.agent.name.clone(),
            model: NO_MODEL.to_string(),
            mode: req.agent.mode,
            tools_dir,
            workspace,
            max_iterations: 1,
            iteration: 1,
            messages: Vec::new(),
            turn: None,
            usage: Usage::default(),
            output: None,
            single_call: true,
            tree: None,
            priority: None,
            trace: None,
            owner: req.owner.clone(),
            client_tools: Vec::new(),
            response_format: None,
            marks: Default::default(),
            files: Vec::new(),
            cost_nanos: 0,
            budget: Default::default(),
            workflow: None,
        };
        let owner = toolgate_store::lease_owner_name();
        let text = super::state_json(&state)?;
        self.store
            .create_linked_run(toolgate_store::NewRun {
                id: run_id.clone(),
                conversation_id: req.conversation.clone(),
                agent: req.agent.name.clone(),
                state: text,
                owner: owner.clone(),
                lease_ms: LEASE_MS,
                messages: Vec::new(),
                first_seq: 0,
                link: None,
                tenant: req.owner.as_ref().map_or_else(
                    || toolgate_protocol::identity::DEFAULT_TENANT.to_string(),
                    |o| o.tenant.clone(),
                ),
                started_by: req.owner.as_ref().and_then(|o| o.user.clone()),
            })
            .await?;
        let standing = self
            .standing(&req.conversation, &req.agent.name, &toolkit)
            .await?;
        let schemas = toolkit.schemas();
        let mut live = Live {
            run_id,
            conversation_id: req.conversation,
            owner,
            agent: req.agent,
            toolkit,
            model: Arc::new(NoModel),
            state,
            standing,
            decisions: Default::default(),
            pending_updates: Vec::new(),
            pending_new: Vec::new(),
            records: Vec::new(),
            persisted: 0,
            secret_tools: sealing::any_secret(&schemas),
            known_secrets: Vec::new(),
            requests: Vec::new(),
            schemas: Arc::new(schemas),
        };
        let turn = self.gate(&mut live, vec![req.call]).await;
        live.state.turn = Some(turn);
        self.drive_shown(live, false).await
    }
}

/// Ends a single-call run whose call has its result: the result becomes the run's
/// output, and the turn is closed (nothing is fed back to a model).
pub(super) fn settled(live: &mut Live) {
    let turn = live.state.turn.take().unwrap_or_default();
    let output = turn.into_iter().find_map(|c| match c.phase {
        super::Phase::Done { output, .. } => Some(output),
        _ => None,
    });
    live.state.output = Some(output.unwrap_or_default());
}

/// The model of a single-call run: never asked in the normal flow; should a run be
/// continued before its call was saved, it answers nothing and the run completes.
pub struct NoModel;

#[async_trait::async_trait]
impl Model for NoModel {
    fn name(&self) -> &str {
        NO_MODEL
    }

    async fn complete(
        &self,
        _request: ModelRequest<'_>,
        _sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        Ok(ModelReply::default())
    }
}
