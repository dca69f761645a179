//! What a caller may see and do, per request: the [`Caller`] extractor (the identity
//! the auth layer found) and `GET /v1/whoami`; reads of runs and conversations that
//! answer another tenant's id exactly as an unknown one (404; admins see every
//! tenant); who may decide a run's calls (the agent's and the tools' rules); and
//! whether a caller may start one more run (`runs_at_once`).

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use super::AppState;
use super::error::ApiError;
use toolgate_protocol::RunObject;
use toolgate_protocol::identity::{DecisionRule, Identity};
use toolgate_runtime::run::RunError;

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller(pub Identity);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Identity>()
            .cloned()
            .map(Caller)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "the request carries no identity",
                )
            })
    }
}

/// `GET /v1/whoami`: who the server takes the caller for.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct WhoAmI {
    /// What `decided_by` records for this caller.
    pub name: String,
    /// The issued key's id, for a key toolgate issued.
    pub key_id: Option<String>,
    /// Its roles joined by commas: `client`, `approver`, `admin`, or several
    /// (`client,approver`).
    pub role: String,
    /// Its roles, one by one.
    pub roles: Vec<String>,
    pub tenant: String,
    pub groups: Vec<String>,
    /// The only agents it may start (its key's or token's list met with its
    /// tenant's); null when any.
    pub agents: Option<Vec<String>>,
    /// The only tools its runs may call; null when any.
    pub tools: Option<Vec<String>>,
}

/// The caller as the server sees it: name, role, tenant, groups (what the inbox uses to
/// show only what this person may decide) and the agents and tools it may use.
#[utoipa::path(get, path = "/v1/whoami", tag = "records",
    responses((status = 200, body = WhoAmI), (status = 401, body = super::error::ErrorBody)))]
pub async fn whoami(Caller(who): Caller) -> axum::Json<WhoAmI> {
    axum::Json(WhoAmI {
        name: who.name,
        key_id: who.key_id,
        role: who.roles.to_string(),
        roles: who.roles.names().into_iter().map(String::from).collect(),
        tenant: who.tenant,
        groups: who.groups,
        agents: who.allow.agents,
        tools: who.allow.tools,
    })
}

fn not_found(id: &str) -> ApiError {
    RunError::NotFound(id.to_string()).into()
}

impl AppState {
    /// Run `id` (a prefix for admins; a full id for everyone else, so that a prefix
    /// never tells of another tenant's runs), when `who` sees its tenant.
    pub async fn run_for(&self, who: &Identity, id: &str) -> Result<RunObject, ApiError> {
        if who.scope().is_some() && !toolgate_runtime::run::is_run_id(id) {
            return Err(not_found(id));
        }
        let run = match self.runner.get(id).await {
            Ok(run) => run,
            Err(RunError::NotFound(_)) => return Err(not_found(id)),
            Err(e) => return Err(e.into()),
        };
        if !who.sees(&run.tenant) {
            return Err(not_found(id));
        }
        Ok(run)
    }

    /// Whether conversation `id` may be read by `who`: it has no run of another
    /// tenant (an unknown conversation is empty for everyone).
    pub async fn conversation_for(&self, who: &Identity, id: &str) -> Result<(), ApiError> {
        let Some(tenant) = who.scope().map(str::to_string) else {
            return Ok(());
        };
        let conv = id.to_string();
        let runs = self
            .runner
            .store
            .runs(toolgate_store::Scope::All, None, Some(&conv), 1)
            .await?;
        if runs.iter().any(|r| r.tenant != tenant) {
            return Err(ApiError::not_found(format!(
                "there is no conversation '{id}'"
            )));
        }
        Ok(())
    }

    /// Refuses `who` deciding the waiting approvals of `run` (`call_id`: that one
    /// only) with 403, recording nothing, when the run's agent or the call's tool names
    /// other approvers, or forbids the run's starter (`four_eyes`).
    pub async fn may_decide(
        &self,
        who: &Identity,
        run: &RunObject,
        call_id: Option<&str>,
    ) -> Result<(), ApiError> {
        let agent = self
            .agent(&run.agent)
            .map(|a| a.decision_rule.clone())
            .unwrap_or_default();
        let tools: Vec<String> = run
            .required_action
            .iter()
            .flat_map(|r| &r.items)
            .filter(|i| i.kind == toolgate_protocol::ItemKind::Approval)
            .filter(|i| {
                call_id.is_none_or(|c| i.call_id == c || c.ends_with(&format!("/{}", i.call_id)))
            })
            .map(|i| i.tool.clone())
            .collect();
        let rules = self.tool_rules().await;
        let mut checked = vec![agent.clone()];
        checked.extend(tools.iter().map(|t| match rules.get(t) {
            Some(rule) => agent.with(rule),
            None => agent.clone(),
        }));
        for rule in checked {
            if let Some(why) = rule.refuses(who, run.started_by.as_deref()) {
                return Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", why));
            }
        }
        Ok(())
    }

    /// Each tool's own rule on who decides its calls (tools whose files name one).
    async fn tool_rules(&self) -> std::collections::HashMap<String, DecisionRule> {
        let runner = self.runner.clone();
        let dir = self.tools_dir.clone();
        let library = tokio::task::spawn_blocking(move || {
            runner
                .loaded
                .library(dir.as_deref(), |d| (runner.load_library)(d))
        })
        .await;
        match library {
            Ok(Ok(lib)) => lib
                .tools()
                .filter(|t| t.rule != DecisionRule::default())
                .map(|t| (t.spec.name.clone(), t.rule.clone()))
                .collect(),
            // The tools folder cannot be read now: the agents' rules still apply.
            _ => Default::default(),
        }
    }

    /// Refuses a new run when `who` or its tenant already has its runs at once.
    pub async fn may_start(&self, who: &Identity) -> Result<(), ApiError> {
        let Some(rates) = &self.rates else {
            return Ok(());
        };
        let (key_cap, tenant_cap) = (
            rates.config.per_key.runs_at_once,
            rates.config.per_tenant.runs_at_once,
        );
        if key_cap.is_none() && tenant_cap.is_none() {
            return Ok(());
        }
        let (tenant, user) = (who.tenant.clone(), who.name.clone());
        let (by_key, by_tenant) = self.runner.store.runs_in_progress(&tenant, &user).await?;
        if key_cap.is_some_and(|cap| by_key >= u64::from(cap))
            || tenant_cap.is_some_and(|cap| by_tenant >= u64::from(cap))
        {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "this key or its tenant has as many runs in progress as it may; retry when one ends",
            )
            .retry_after(1));
        }
        Ok(())
    }
}
