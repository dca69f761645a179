//! One MCP session: the rmcp `ServerHandler` that lists the agent's toolkit, runs each
//! `tools/call` as a single-call run in the session's conversation, and tells the client
//! when the tools folder changed (`notifications/tools/list_changed`). A held call ends
//! with its client: when every request waiting on it gave up, its run is cancelled.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, Tool,
    ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};

use super::Gateway;
use super::cancel;
use super::hold::{self, Held, Hold};
use super::joined::{HeldCalls, call_key};
use super::single::{self, error};
use toolgate_protocol::{RunObject, RunStatus};
use toolgate_runtime::agent::Agent;
use toolgate_tool::{LoadedTool, Permission};

/// One client connection: the agent it is served, its conversation, and a lock that
/// takes its calls one at a time (a conversation has one unfinished run at most).
pub struct Session {
    gateway: Arc<Gateway>,
    agent: Agent,
    conversation: String,
    turn: tokio::sync::Mutex<()>,
    /// Tells the client about changes of the tools folder, until the session drops.
    watching: std::sync::Mutex<Option<tokio_util::task::AbortOnDropHandle<()>>>,
    /// Cancelled when the client's session or connection ends (stdin closed, the HTTP
    /// session deleted or dropped): held calls end with it.
    ended: tokio_util::sync::CancellationToken,
    /// The calls held now, for retried identical calls to join.
    held: HeldCalls,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.ended.cancel();
    }
}

impl Session {
    pub(super) fn new(gateway: Arc<Gateway>, agent: Agent) -> Self {
        Self {
            gateway,
            agent,
            conversation: toolgate_runtime::run::new_id("conv_mcp"),
            turn: tokio::sync::Mutex::new(()),
            watching: std::sync::Mutex::new(None),
            ended: tokio_util::sync::CancellationToken::new(),
            held: HeldCalls::default(),
        }
    }

    /// The token cancelled when this session's client goes away.
    pub(super) fn ended(&self) -> tokio_util::sync::CancellationToken {
        self.ended.clone()
    }

    /// How a call of this session is held: the agent's `mcp_hold`, else the gateway's.
    fn hold<'a>(&'a self, ctx: &'a RequestContext<RoleServer>) -> Hold<'a> {
        Hold {
            gateway: &self.gateway,
            limit: self.agent.mcp_hold.unwrap_or(self.gateway.approval_timeout),
            ctx,
            ended: &self.ended,
        }
    }

    /// A held call's end, as the client reads it. The last request to give up on a held
    /// call cancels its run: it never runs later.
    async fn after_hold(&self, key: &str, run_id: &str, held: Held) -> CallToolResult {
        let last = self.held.leave(key);
        match held {
            Held::Ended(run) => self.result(&run).await,
            Held::NotDecided(message) => error(message),
            Held::Abandoned(why) if last => self.cancel_held(run_id, &why).await,
            Held::Abandoned(why) => error(format!(
                "{why}; an identical call still waits on run {run_id}"
            )),
        }
    }

    /// Cancels a held call's run (the client gave up on it) and records the call as
    /// `cancelled`: it never runs, whoever approves it later.
    async fn cancel_held(&self, run_id: &str, why: &str) -> CallToolResult {
        match cancel::cancel_run(&self.gateway, run_id, why).await {
            // Decided (or ended) meanwhile: that stands.
            Err(e) => error(format!("{why}; {e}")),
            Ok(()) => error(format!(
                "{why}: the held call was cancelled and will not run (run {run_id})"
            )),
        }
    }

    /// A retried identical call: waits on the run already held for it.
    async fn join(
        &self,
        key: &str,
        run_id: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        tracing::info!(run_id, "an identical call joins the held one");
        let held = match self.gateway.runner.get(run_id).await {
            Ok(run) if run.status == RunStatus::RequiresAction => {
                hold::follow(&self.hold(ctx), &run).await
            }
            Ok(run) => Held::Ended(Box::new(run)),
            Err(e) => Held::NotDecided(format!("cannot read run {run_id}: {e}")),
        };
        self.after_hold(key, run_id, held).await
    }

    /// The conversation this session's calls are recorded under.
    pub fn conversation(&self) -> &str {
        &self.conversation
    }

    /// The tools a client sees: the toolkit less the tools toolgate cannot run
    /// (definition-only ones), those the agent may never call, and those the caller's
    /// allow-list leaves out.
    fn listed(&self, ctx: &RequestContext<RoleServer>) -> Result<Vec<Tool>, String> {
        let allow = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<toolgate_protocol::identity::Identity>())
            .map(|who| who.allow.clone())
            .or_else(|| self.gateway.owner.as_ref().map(|o| o.allow.clone()))
            .unwrap_or_default();
        let toolkit = self
            .gateway
            .runner
            .toolkit_of(&self.agent, self.gateway.tools_dir.as_deref())
            .map_err(|e| e.to_string())?
            .limited(&allow);
        Ok(toolkit
            .tools()
            .into_iter()
            .filter(|t| !t.definition_only())
            .filter_map(|t| {
                let permission = toolkit.permission(&t.spec.name);
                (permission != Permission::Never).then(|| mcp_tool(t, permission))
            })
            .collect())
    }

    /// Runs one `tools/call` through the gate, the engine and the record.
    async fn call(
        &self,
        request: CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let name = request.name.to_string();
        let arguments = request.arguments.unwrap_or_default();
        let key = call_key(&name, &arguments);
        if let Some(run_id) = self.held.join(&key) {
            return self.join(&key, &run_id, ctx).await;
        }
        let _one_at_a_time = self.turn.lock().await;
        let owner = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<toolgate_protocol::identity::Identity>())
            .map(toolgate_protocol::identity::RunOwner::of);
        let started = single::start(single::Call {
            gateway: &self.gateway,
            agent: &self.agent,
            conversation: self.conversation.clone(),
            name: &name,
            arguments,
            owner,
        })
        .await;
        let (run, rule) = match started {
            Ok(started) => started,
            Err(result) => return result,
        };
        if run.status == RunStatus::RequiresAction {
            let asker = match ctx
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.extensions.get::<toolgate_protocol::identity::Identity>())
            {
                None => hold::Asker::Anyone,
                Some(who) => match rule.refuses(who, run.started_by.as_deref()) {
                    Some(_) => hold::Asker::Nobody,
                    None => hold::Asker::Identity(toolgate_store::Decider {
                        by: who.name.clone(),
                        key_id: who.key_id.clone(),
                        shown: None,
                    }),
                },
            };
            self.held.hold(&key, &run.id);
            let held = hold::settle(&self.hold(ctx), &run, asker).await;
            return self.after_hold(&key, &run.id, held).await;
        }
        self.result(&run).await
    }

    /// The MCP result of an ended single-call run.
    async fn result(&self, run: &RunObject) -> CallToolResult {
        single::result(&self.gateway, run).await
    }
}

/// A tool as MCP lists it: name, description, input schema, and hints from its spec;
/// `_meta` says how toolgate gates it.
fn mcp_tool(tool: &LoadedTool, permission: Permission) -> Tool {
    let schema = match &tool.spec.parameters {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let mut annotations = ToolAnnotations::new().read_only(tool.spec.read_only);
    if tool.spec.read_only {
        annotations = annotations.destructive(false);
    }
    let mut meta = rmcp::model::MetaObject::new();
    meta.insert(
        "toolgate/permission".into(),
        serde_json::to_value(permission).unwrap_or(Value::Null),
    );
    Tool::new(
        Cow::Owned(tool.spec.name.clone()),
        Cow::Owned(tool.spec.description.clone()),
        Arc::new(schema),
    )
    .with_annotations(annotations)
    .with_meta(meta)
}

impl ServerHandler for Session {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
            .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "The tools of the toolgate agent '{}'. Calls are gated (some wait for a person's approval) and recorded.",
                self.agent.name
            ))
    }

    /// Up to 2025-11-25: the versions in which a server may ask the client
    /// (elicitation) while a call is in flight.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    /// From now on, each reload of the tools folder is a `tools/list_changed` to the
    /// client, which lists the tools again.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.gateway.runner.loaded.changes();
        let peer = context.peer.clone();
        let task = tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
        if let Ok(mut w) = self.watching.lock() {
            *w = Some(tokio_util::task::AbortOnDropHandle::new(task));
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.listed(&ctx)
            .map(ListToolsResult::with_all_items)
            .map_err(|e| ErrorData::internal_error(e, None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(self.call(request, &ctx).await.into())
    }
}
