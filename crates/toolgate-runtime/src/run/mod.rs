//! Runs: starting one, continuing a paused or failed one, recording decisions, and
//! cancelling, all through the store, so a run paused by one process continues in
//! another with nothing lost. The loop itself is in `agent_loop`.

mod active;
mod additions;
mod agent_check;
mod agent_loop;
mod bare_calls;
mod budget;
mod cache;
mod consent;
mod context;
mod conversation;
mod deadlines;
mod decide;
mod decision_rule;
mod ending;
mod error;
mod files;
mod final_tool;
mod folders;
mod guard;
mod hidden;
mod keeper;
mod loop_marks;
mod model_call;
mod object;
mod outcomes;
mod paths;
mod read_result;
mod reply;
mod resume;
mod save;
mod sealing;
mod settle;
mod single_call;
mod sink;
mod state;
mod subagent;
mod turn;
pub mod validate;
mod watch;
mod workflow;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

pub use active::Active;
pub use additions::Additions;
pub use agent_check::AgentCheck;
pub use budget::{BUDGET_ITEM, BudgetState, Hold};
pub use cache::{Loaded, Report};
pub use conversation::{PromptError, system_prompt, tools as request_tools};
pub use deadlines::Expiry;
pub use error::RunError;
pub use folders::{Folders, agent_files};
pub use object::run_object;
pub use outcomes::commit_outcomes;
use paths::absolute_model_name;
pub(crate) use paths::{absolute, workspace_of};
pub use read_result::{READ_RESULT, tool as read_result_tool};
pub use single_call::{NO_MODEL, NoModel, StartCall};
pub use state::{Ask, Phase, RunState, TreePlace, TurnCall};

use crate::agent::{Agent, DEFAULT_MODEL};
use crate::engine::{LimitConfig, ProcessLimits};
use toolgate_model::{self as model, Message, Model, OpenAiConfig, Providers};
use toolgate_protocol::{Decision, RunEvent, RunObject, Usage, events};
use toolgate_store::{PendingRow, RunRow, Scope, Store};
use toolgate_tool::{Sources, ToolLibrary, Toolkit};

/// How long a lease lasts without renewal; the holder renews it every third of this. A
/// run whose driver died is free to take up again this long after its last renewal.
pub const LEASE_MS: i64 = 10_000;

/// Loads the tool library for a tools folder (`None`: built-ins only).
pub type LibraryLoader =
    Arc<dyn Fn(Option<&Path>) -> Result<ToolLibrary, toolgate_tool::LoadError> + Send + Sync>;

/// What a new run needs.
#[derive(Debug, Clone)]
pub struct StartRun {
    pub agent: Agent,
    /// Overrides the agent's model.
    pub model: Option<String>,
    /// Continues this conversation's history; a new conversation when `None`.
    pub conversation: Option<String>,
    pub message: String,
    /// The tools folder to load (absolute or relative to the current folder).
    pub tools_dir: Option<PathBuf>,
    /// Overrides the agent's workspace.
    pub workspace: Option<PathBuf>,
    /// Its calls' priority under the `priority` strategy (the agent's `priority:` when
    /// absent); higher goes first.
    pub priority: Option<i32>,
    /// Its tenant and who started it (`None`: the default tenant, nobody named).
    pub owner: Option<toolgate_protocol::identity::RunOwner>,
}

/// Starts, continues, decides and cancels runs. Clones share the store, the loaded
/// agents and libraries and the interrupt; a clone may take its own `events` sender, so
/// each run a server drives streams its own events.
#[derive(Clone)]
pub struct Runner {
    pub store: Store,
    /// The tool sources its libraries are read by (the program's choice).
    pub sources: Sources,
    pub load_library: LibraryLoader,
    pub model_config: OpenAiConfig,
    /// The providers its models are made by, by prefix (`openai:`, `anthropic:`,
    /// `scripted:`, and any the program registers).
    pub models: Providers,
    /// The process's limiter, with the agents' shares: every run this runner (and
    /// every clone of it) drives takes its call slots there.
    pub limits: Arc<ProcessLimits>,
    /// Where events go as the run goes.
    pub events: Option<UnboundedSender<RunEvent>>,
    /// Used instead of the run's model name (tests, benchmarks, embedding programs).
    pub model: Option<Arc<dyn Model>>,
    /// Cancel it to interrupt the run being driven (Ctrl-C): running calls stop and are
    /// recorded as cancelled, and the run is saved as failed, ready to `resume`.
    pub interrupt: crate::engine::Cancel,
    /// Agents and tool libraries loaded so far, reloaded when their files change.
    pub loaded: Arc<Loaded>,
    /// The key that seals secret values in the store.
    pub keyring: Arc<toolgate_tool::secrets::Keyring>,
    /// The OAuth callback URL consents come back to (`GET /v1/oauth/callback` of the
    /// server users reach).
    pub oauth_callback: String,
    /// The runs this process drives now, so that a cancel here stops one at once.
    pub active: Active,
    /// On `interrupt`, give runs back (still in progress, lease let go) for another
    /// process to take up, rather than save them failed: what a server does at shutdown.
    pub hand_back: bool,
    /// This process's agents and tools folders, when it has its own (a server): runs
    /// continue with the agent of their name there (see `folders`).
    pub folders: Option<Folders>,
    /// The price table model requests are priced by (for budgets and `stats`).
    pub prices: Arc<toolgate_model::prices::Prices>,
}

/// Everything a leased run needs while the loop drives it.
pub(crate) struct Live {
    pub run_id: String,
    pub conversation_id: String,
    pub owner: String,
    pub agent: Agent,
    pub toolkit: Toolkit,
    pub model: Arc<dyn Model>,
    pub state: RunState,
    pub standing: Vec<String>,
    /// Decisions read from the store, by call id.
    pub decisions: std::collections::HashMap<String, Decision>,
    /// Pending-item states to write with the next save.
    pub pending_updates: Vec<(String, toolgate_store::PendingState)>,
    /// How many of `state.messages` are stored.
    pub persisted: usize,
    /// Call records to commit with the next save.
    pub records: Vec<toolgate_store::CallRecord>,
    /// Pending items to add with the next save.
    pub pending_new: Vec<toolgate_protocol::RequiredItem>,
    /// The toolkit's parameter schemas, for the parser.
    pub schemas: Arc<toolgate_parse::Schemas>,
    /// Some tool of the toolkit marks a parameter secret.
    pub secret_tools: bool,
    /// Secret values met so far in this drive.
    pub known_secrets: Vec<String>,
    /// Model requests (with their cost) to record with the next save.
    pub requests: Vec<toolgate_store::ModelRequestRow>,
}

/// The built-in price table with `TOOLGATE_PRICES`'s file over it; a file that cannot be
/// read is logged, and the built-in table used.
fn prices_from_env() -> toolgate_model::prices::Prices {
    toolgate_model::prices::Prices::from_env().unwrap_or_else(|e| {
        tracing::error!(error = %e, "the price file is not used; the built-in prices are");
        toolgate_model::prices::Prices::builtin()
    })
}

/// What the caller a run is for may use: its owner's allow-list (none: no limit).
pub(crate) fn allow_of(
    owner: Option<&toolgate_protocol::identity::RunOwner>,
) -> toolgate_protocol::allow::Allow {
    owner.map(|o| o.allow.clone()).unwrap_or_default()
}

impl Runner {
    /// A runner on `store` whose libraries are the built-ins of `sources` plus the tools
    /// folder read by them, with OpenAI settings from the environment and no event sink.
    pub fn new(store: Store, sources: Sources) -> Self {
        let read_by = sources.clone();
        Self {
            sources,
            load_library: Arc::new(move |dir: Option<&Path>| match dir {
                Some(dir) => ToolLibrary::load(dir, &read_by),
                None => Ok(ToolLibrary::builtin(&read_by)),
            }),
            model_config: OpenAiConfig::from_env(),
            models: Providers::standard(),
            limits: ProcessLimits::new(LimitConfig::default()),
            events: None,
            model: None,
            interrupt: crate::engine::Cancel::new(),
            loaded: Arc::new(Loaded::default()),
            keyring: Arc::new(toolgate_tool::secrets::Keyring::for_database(store.path())),
            oauth_callback: crate::oauth::DEFAULT_CALLBACK.to_string(),
            active: Active::default(),
            hand_back: false,
            folders: None,
            prices: Arc::new(prices_from_env()),
            store,
        }
    }

    /// A clone of this runner whose events go to `events`.
    pub fn with_events(&self, events: UnboundedSender<RunEvent>) -> Runner {
        Runner {
            events: Some(events),
            ..self.clone()
        }
    }

    fn emit(&self, event: impl Into<RunEvent>) {
        if let Some(tx) = &self.events {
            let _ = tx.send(event.into());
        }
    }

    /// The model a run asks: `name`, with the agent's settings and fallbacks when it is
    /// the agent's own model (a `--model` override gets the environment's defaults).
    fn model_for(&self, name: &str, agent: &Agent) -> Result<Arc<dyn Model>, RunError> {
        if name == NO_MODEL || name.starts_with(workflow::PREFIX) {
            return Ok(Arc::new(NoModel));
        }
        let own = agent
            .model
            .as_deref()
            .is_some_and(|m| absolute_model_name(m) == name);
        let spec = model::ModelSpec {
            name: name.to_string(),
            settings: if own {
                agent.model_settings.clone()
            } else {
                Default::default()
            },
        };
        let primary = match (&self.model, name.split_once(':')) {
            (Some(m), _) => return Ok(Arc::clone(m)),
            (None, Some(("scripted", path))) if !path.is_empty() => {
                self.loaded.scripted(Path::new(path))?
            }
            (None, _) => self.models.make(&spec, &self.model_config)?,
        };
        let fallback = if own { &agent.fallback[..] } else { &[] };
        Ok(self
            .models
            .with_fallbacks(primary, fallback, &self.model_config)?)
    }

    fn toolkit(&self, agent: &Agent, tools_dir: Option<&Path>) -> Result<Toolkit, RunError> {
        let library = self
            .loaded
            .library(tools_dir, |dir| (self.load_library)(dir))
            .map_err(|e| RunError::BadInput(e.to_string()))?;
        Ok(agent.toolkit_with(&library, self.knowledge_tools(agent))?)
    }

    /// The `search_knowledge` tool, for an agent that lists `knowledge:`.
    fn knowledge_tools(&self, agent: &Agent) -> Vec<Arc<dyn toolgate_tool::Tool>> {
        if agent.knowledge.is_empty() {
            return Vec::new();
        }
        let retrieval = toolgate_knowledge::Retrieval::of(agent.knowledge.clone());
        vec![toolgate_knowledge::tool(
            toolgate_knowledge::SEARCH_KNOWLEDGE,
            None,
            self.store.clone(),
            retrieval,
        )]
    }

    /// Starts a run and drives it until it completes, pauses, fails or runs out of
    /// iterations.
    pub async fn start(&self, req: StartRun) -> Result<RunObject, RunError> {
        self.start_in_tree(req, None, Additions::default()).await
    }

    /// [`Runner::start`], with what a client adds to the run.
    pub async fn start_with(
        &self,
        req: StartRun,
        additions: Additions,
    ) -> Result<RunObject, RunError> {
        self.start_in_tree(req, None, additions).await
    }

    /// The model a new run uses: the request's, else the agent's, else the default;
    /// its form checked, and its provider when the runner has no model of its own.
    fn start_model_name(&self, req: &StartRun) -> Result<String, RunError> {
        let model_name = absolute_model_name(
            req.model
                .as_deref()
                .or(req.agent.model.as_deref())
                .unwrap_or(DEFAULT_MODEL),
        );
        crate::agent::check_model_spec(&model_name)
            .map_err(|e| RunError::BadInput(e.to_string()))?;
        if model_name.starts_with(workflow::PREFIX) {
            return Ok(model_name);
        }
        if self.model.is_none() && model_name != NO_MODEL {
            self.models.check(&model_name)?;
        }
        Ok(model_name)
    }

    /// A new run's tenant: its owner's, or the default one.
    fn tenant_of(req: &StartRun) -> String {
        req.owner.as_ref().map_or_else(
            || toolgate_protocol::identity::DEFAULT_TENANT.to_string(),
            |o| o.tenant.clone(),
        )
    }

    /// [`Runner::start`], for a top run (`tree` `None`) or a sub-agent's child run.
    pub(crate) async fn start_in_tree(
        &self,
        req: StartRun,
        tree: Option<(toolgate_store::RunLink, TreePlace)>,
        additions: Additions,
    ) -> Result<RunObject, RunError> {
        let model_name = self.start_model_name(&req)?;
        let tools_dir = req.tools_dir.as_deref().map(absolute);
        let client_tools = additions.tools.unwrap_or_default();
        let toolkit = self
            .toolkit(&req.agent, tools_dir.as_deref())?
            .with_client_tools(&client_tools)
            .map_err(|e| RunError::BadInput(e.to_string()))?
            .limited(&allow_of(req.owner.as_ref()));
        let model = self.model_for(&model_name, &req.agent)?;
        let workspace = workspace_of(req.workspace.as_deref(), &req.agent, req.owner.as_ref());
        if let Some(c) = &req.conversation {
            check_conversation_id(c).map_err(|e| RunError::BadInput(e.to_string()))?;
        }
        let run_id = new_id("run");
        let conversation_id = req.conversation.clone().unwrap_or_else(|| new_id("conv"));
        let (mut messages, persisted) = match &req.conversation {
            Some(c) => self.history(c).await?,
            None => (Vec::new(), 0),
        };
        messages.push(additions::first_message(
            &req.message,
            additions.images,
            &model_name,
            &req.agent,
        ));
        let added = messages_json(&messages[persisted..])?;
        let toolkit_schemas = toolkit.schemas();
        let workflow = workflow::WorkflowPlay::of_model(&model_name, &req.message)?;
        let state = RunState {
            agent_file: req.agent.path.clone(),
            agent_hash: folders::file_hash(&req.agent.path),
            agent: req.agent.name.clone(),
            model: model_name,
            mode: req.agent.mode,
            tools_dir,
            workspace,
            max_iterations: req.agent.max_iterations,
            iteration: 0,
            messages,
            turn: None,
            usage: Usage::default(),
            output: None,
            single_call: false,
            tree: tree.as_ref().map(|(_, place)| place.clone()),
            priority: req.priority,
            trace: None,
            owner: req.owner.clone(),
            client_tools,
            response_format: additions.response_format.flatten(),
            marks: Default::default(),
            files: Vec::new(),
            cost_nanos: 0,
            budget: Default::default(),
            workflow,
        };
        let owner = toolgate_store::lease_owner_name();
        let text = state_json(&state)?;
        let stored = state.messages.len();
        self.store
            .create_linked_run(toolgate_store::NewRun {
                id: run_id.clone(),
                conversation_id: conversation_id.clone(),
                agent: req.agent.name.clone(),
                state: text,
                owner: owner.clone(),
                lease_ms: LEASE_MS,
                messages: added,
                first_seq: persisted,
                link: tree.map(|(link, _)| link),
                tenant: Self::tenant_of(&req),
                started_by: req.owner.as_ref().and_then(|o| o.user.clone()),
            })
            .await?;
        // A new conversation has no standing approvals yet: no read for it.
        let standing = match &req.conversation {
            Some(conv) => self.standing(conv, &req.agent.name, &toolkit).await?,
            None => Vec::new(),
        };
        let live = Live {
            run_id,
            conversation_id,
            owner,
            agent: req.agent,
            toolkit,
            model,
            state,
            standing,
            decisions: Default::default(),
            pending_updates: Vec::new(),
            pending_new: Vec::new(),
            records: Vec::new(),
            persisted: stored,
            secret_tools: sealing::any_secret(&toolkit_schemas),
            known_secrets: Vec::new(),
            requests: Vec::new(),
            schemas: Arc::new(toolkit_schemas),
        };
        self.drive_shown(live, false).await
    }

    /// Drives `live` (see `agent_loop`), the calls of its hidden tools left out of the
    /// events.
    pub(crate) async fn drive_shown(
        &self,
        live: Live,
        resumed: bool,
    ) -> Result<RunObject, RunError> {
        self.hiding(&live).drive(live, resumed).await
    }

    async fn live_from(
        &self,
        row: RunRow,
        pending: Vec<PendingRow>,
        owner: String,
        additions: Additions,
    ) -> Result<Live, RunError> {
        let mut state: RunState =
            self.opened(&row.state, &format!("run {}: its saved state", row.id))?;
        if let Some(tools) = additions.tools {
            state.client_tools = tools;
        }
        if let Some(format) = additions.response_format {
            state.response_format = format;
        }
        if let Some(root) = self.folders.as_ref().and_then(|f| f.workspace.clone()) {
            let tenant = paths::tenant_of(state.owner.as_ref());
            state.workspace = toolgate_tool::workspace::tenant_workspace(&root, tenant);
        }
        state.messages = self.messages(&row.conversation_id).await?;
        let stored = state.messages.len();
        let (agent, toolkit) = self.agent_of(&state)?;
        let schemas = Arc::new(toolkit.schemas());
        let model = self.model_for(&self.continuing_model(&state, &agent), &agent)?;
        let standing = self
            .standing(&row.conversation_id, &row.agent, &toolkit)
            .await?;
        let mut decisions = std::collections::HashMap::new();
        for p in pending
            .into_iter()
            .filter(|p| p.state == toolgate_store::PendingState::Decided)
        {
            if let Some(d) = p.decision {
                let d = match d {
                    Decision::Edit { arguments } => Decision::Edit {
                        arguments: self
                            .opened(&Value::Object(arguments).to_string(), "edited arguments")?,
                    },
                    other => other,
                };
                decisions.insert(p.item.call_id, d);
            }
        }
        Ok(Live {
            run_id: row.id,
            conversation_id: row.conversation_id,
            owner,
            agent,
            toolkit,
            model,
            state,
            standing,
            decisions,
            pending_updates: Vec::new(),
            pending_new: Vec::new(),
            records: Vec::new(),
            persisted: stored,
            secret_tools: sealing::any_secret(&schemas),
            known_secrets: Vec::new(),
            requests: Vec::new(),
            schemas,
        })
    }

    /// Cancels a run that has not ended.
    pub async fn cancel(&self, run_id: &str) -> Result<RunObject, RunError> {
        let (id, _) = self.store.cancel_run(run_id).await?;
        let top = id.clone();
        let below = self.store.runs_below(&top).await?;
        for run in below.iter().rev().chain(std::iter::once(&id)) {
            self.active.stop(run);
            self.emit(events::RunCancelled {
                run_id: run.clone(),
            });
        }
        self.get(&id).await
    }

    /// The execution summary of `run_id` and every sub-agent run below it.
    pub async fn tree(&self, run_id: &str) -> Result<toolgate_protocol::RunTree, RunError> {
        let id = run_id.to_string();
        Ok(self.store.run_tree(&id).await?)
    }

    /// The run object for `run_id` (an id or a unique prefix).
    pub async fn get(&self, run_id: &str) -> Result<RunObject, RunError> {
        let (row, pending) = self.store.run(run_id).await?;
        Ok(run_object(&row, &pending))
    }

    /// The history a new run in `conversation` starts from, and how much of it is
    /// stored: the conversation's messages, then an answer for every call its last run
    /// left without a result.
    async fn history(&self, conversation: &str) -> Result<(Vec<Message>, usize), RunError> {
        let conv = conversation.to_string();
        let last = self.store.runs(Scope::All, None, Some(&conv), 1).await?;
        let Some(last) = last.into_iter().next() else {
            return Ok((Vec::new(), 0));
        };
        let state: RunState =
            self.opened(&last.state, &format!("run {}: its saved state", last.id))?;
        let mut messages = self.messages(conversation).await?;
        let persisted = messages.len();
        if let Some(turn) = &state.turn {
            messages.extend(conversation::results(
                state.mode,
                turn,
                "The run ended before this call finished; it was not completed.",
                None,
                false,
            ));
        }
        Ok((messages, persisted))
    }

    /// The tools `agent` has a standing approval for in `conversation`: each only
    /// while the tool's policy is the one it was given under (a stricter word, new
    /// rules or hooks end it).
    pub(crate) async fn standing(
        &self,
        conversation: &str,
        agent: &str,
        toolkit: &Toolkit,
    ) -> Result<Vec<String>, RunError> {
        let (conv, agent) = (conversation.to_string(), agent.to_string());
        let rows = self.store.standing_approvals(&conv, &agent).await?;
        Ok(rows
            .into_iter()
            .filter(|(tool, policy)| *policy == toolkit.fingerprint(tool))
            .map(|(tool, _)| tool)
            .collect())
    }

    /// A conversation's stored messages.
    async fn messages(&self, conversation: &str) -> Result<Vec<Message>, RunError> {
        let what = format!("conversation {conversation}: a stored message");
        self.store
            .conversation_messages(conversation)
            .await?
            .iter()
            .map(|m| sealing::opened(&self.keyring, m, &what))
            .collect()
    }
}

/// Messages as the store keeps them.
pub(crate) fn messages_json(messages: &[Message]) -> Result<Vec<String>, RunError> {
    messages
        .iter()
        .map(|m| {
            serde_json::to_string(m)
                .map_err(|e| RunError::Corrupt(format!("cannot save a message: {e}")))
        })
        .collect()
}

fn state_json(state: &RunState) -> Result<String, RunError> {
    serde_json::to_string(state)
        .map_err(|e| RunError::Corrupt(format!("cannot save the run's state: {e}")))
}

/// A new id: `prefix`, `_` and 16 hex digits.
/// The longest conversation id a caller may give.
pub const MAX_CONVERSATION_ID: usize = 128;

/// A conversation id a caller gives: 1 to 128 of `A-Z a-z 0-9 . _ : @ + = / -` (it goes
/// into every event, record and log line of the conversation).
pub fn check_conversation_id(id: &str) -> Result<(), BadConversationId> {
    let fits = |c: char| c.is_ascii_alphanumeric() || "._:@+=/-".contains(c);
    if id.is_empty() || id.len() > MAX_CONVERSATION_ID || !id.chars().all(fits) {
        let mut shown: String = id.chars().take(40).flat_map(char::escape_default).collect();
        if id.chars().count() > 40 {
            shown.push_str("...");
        }
        return Err(BadConversationId { shown });
    }
    Ok(())
}

/// A conversation id a caller gave that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "conversation id '{shown}' is not one: 1 to {MAX_CONVERSATION_ID} characters of letters, digits and . _ : @ + = / -"
)]
pub struct BadConversationId {
    /// The id as shown: its first 40 characters escaped, `...` when it is longer.
    pub shown: String,
}

/// Whether `id` has the whole shape of a run id from [`new_id`] (`run_` and 16 hex
/// digits): what changes of state over HTTP require, where a prefix is not enough.
pub fn is_run_id(id: &str) -> bool {
    id.strip_prefix("run_")
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

pub fn new_id(prefix: &str) -> String {
    format!(
        "{prefix}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..16]
    )
}
