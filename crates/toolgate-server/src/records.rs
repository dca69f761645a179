//! What was recorded and what is offered: call records, usage summaries (per
//! conversation, per tool, global), the tools and agents the server has, and health.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ApiQuery, ErrorBody, PathId};
use super::{AgentInfo, AppState};
use toolgate_protocol::CallStatus;
use toolgate_store::{CallQuery, ConversationSummary, GlobalStats, Page, Scope, ToolStats};
use toolgate_tool::Permission;

/// `GET /v1/calls` filters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallsQuery {
    pub conversation_id: Option<String>,
    pub run_id: Option<String>,
    pub tool: Option<String>,
    /// `succeeded`, `failed`, `denied`, `timeout`, `cancelled` or `client`.
    #[param(value_type = Option<CallStatus>)]
    pub status: Option<String>,
    /// Page size (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u64>,
    /// Records to skip (default 0).
    #[param(minimum = 0, maximum = 9223372036854775807_i64)]
    pub offset: Option<u64>,
}

/// The call records matching the filters, newest first, one page.
#[utoipa::path(get, path = "/v1/calls", tag = "records", params(CallsQuery),
    responses((status = 200, body = Page), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn calls(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
    ApiQuery(q): ApiQuery<CallsQuery>,
) -> Result<Json<Page>, ApiError> {
    let tenant = who.scope().map(str::to_string);
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(s.parse::<CallStatus>().map_err(|_| {
            ApiError::bad_request(format!(
                "unknown status '{s}'; one of: {}",
                CallStatus::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?),
    };
    let query = CallQuery {
        conversation_id: q.conversation_id,
        run_id: q.run_id,
        tool: q.tool,
        status,
        limit: Some(in_range("limit", q.limit, 50, 1, 1000)?),
        offset: in_range("offset", q.offset, 0, 0, i64::MAX as u64)?,
        newest_first: true,
        tenant,
        ..CallQuery::default()
    };
    Ok(Json(state.runner.store.calls(&query).await?))
}

/// A query's count: its default when absent, refused outside `min..=max` (the range the
/// document gives).
pub(super) fn in_range(
    name: &str,
    value: Option<u64>,
    default: usize,
    min: u64,
    max: u64,
) -> Result<usize, ApiError> {
    match value {
        None => Ok(default),
        Some(v) if (min..=max).contains(&v) => usize::try_from(v)
            .map_err(|_| ApiError::bad_request(format!("{name} is too large for this machine"))),
        Some(v) => Err(ApiError::bad_request(format!(
            "{name} must be from {min} to {max}, not {v}"
        ))),
    }
}

/// One conversation's summary, with its runs' trees of sub-agent runs.
#[derive(Debug, Clone, serde::Serialize, ToSchema)]
pub struct ConversationStats {
    #[serde(flatten)]
    pub summary: ConversationSummary,
    /// Each top run of the conversation, oldest first, with the sub-agent runs below it:
    /// per run its calls, success rate, tokens and time.
    pub run_trees: Vec<toolgate_protocol::RunTree>,
    /// The conversation's runs and every sub-agent run below them, together.
    pub totals_with_subagents: toolgate_protocol::TreeTally,
}

/// One conversation's summary: calls by outcome, success rate, per-tool counts,
/// duration percentiles; and the tree of sub-agent runs under each of its runs, with
/// totals that include them.
#[utoipa::path(get, path = "/v1/conversations/{id}/stats", tag = "records",
    params(("id" = String, Path, description = "A conversation id")),
    responses((status = 200, body = ConversationStats), (status = 401, body = ErrorBody),
        (status = 404, description = "Nothing recorded for this conversation", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn conversation_stats(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
    PathId(id): PathId,
) -> Result<Json<ConversationStats>, ApiError> {
    state.conversation_for(&who, &id).await?;
    let conv = id.clone();
    let store = &state.runner.store;
    let runs = store.runs(Scope::All, None, Some(&conv), 1).await?.len();
    let run_trees = store.conversation_trees(&conv).await?;
    let summary = store.conversation_summary(&conv).await?;
    if summary.calls.total_calls == 0 && runs == 0 {
        return Err(ApiError::not_found(format!(
            "there is no conversation '{id}' (no runs and no calls recorded)"
        )));
    }
    let mut totals_with_subagents = toolgate_protocol::TreeTally::default();
    for t in &run_trees {
        totals_with_subagents.add(&t.totals);
    }
    Ok(Json(ConversationStats {
        summary,
        run_trees,
        totals_with_subagents,
    }))
}

/// Every call recorded, summed up, with each tool's figures.
#[utoipa::path(get, path = "/v1/stats", tag = "records",
    responses((status = 200, body = GlobalStats), (status = 401, body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn global_stats(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
) -> Result<Json<GlobalStats>, ApiError> {
    let store = &state.runner.store;
    Ok(Json(store.global_stats(Scope::of(who.scope())).await?))
}

/// One tool's figures over every conversation.
#[utoipa::path(get, path = "/v1/tools/{name}/stats", tag = "records",
    params(("name" = String, Path, description = "A tool name")),
    responses((status = 200, body = ToolStats), (status = 401, body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn tool_stats(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
    PathId(name): PathId,
) -> Result<Json<ToolStats>, ApiError> {
    let store = &state.runner.store;
    Ok(Json(store.tool_stats(Scope::of(who.scope()), &name).await?))
}

/// A tool as `GET /v1/tools` lists it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
    /// `auto`, `confirm` or `never` (an agent file may override it).
    pub permission: String,
    /// `builtin`, `client`, `command` or `http`.
    pub runs: String,
    /// Handed to the client (`submit_tool_output`), never run by toolgate.
    pub definition_only: bool,
    pub read_only: bool,
    pub category: Option<String>,
    /// The sandbox its programs start in, every setting spelled out (`fs`, `read`,
    /// `write`, `network`, `limits`), or `"off"`; absent for a tool that starts no
    /// program.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Value>,
    /// Its tool file's rules as written (`deny_if`, `confirm_if`, `auto_if`,
    /// `otherwise`), in the order they are evaluated; an agent file may replace them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleText>,
    /// Groups one of which decides its calls (its tool file's `approvers:`).
    pub approvers: Vec<String>,
    /// Whoever started a run may not decide its calls of this tool.
    pub four_eyes: bool,
    /// Where it is defined: its file, or the source it came from (`builtin`, an MCP
    /// server, an OpenAPI document) when no file of its own defines it.
    pub source: String,
    /// Its last credential check (`POST /v1/tools/{name}/validate`, `toolgate tools
    /// validate`), when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation: Option<super::tool_checks::LastCheck>,
    /// The name people see, by language (`en_US`, `zh_Hans`, ...), from its file's
    /// `label:` (a Dify tool's `identity.label`, an MCP tool's `title`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<std::collections::BTreeMap<String, String>>,
    /// A short text (an emoji) or a `data:image/...;base64,` URL: never a URL to fetch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Help for the people deciding its calls, by language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<std::collections::BTreeMap<String, String>>,
}

/// One rule of a tool: its key and its text.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RuleText {
    /// `deny_if`, `confirm_if`, `auto_if` or `otherwise`.
    pub key: String,
    /// The expression (`args.amount > 1000`), or `otherwise`'s permission word.
    pub rule: String,
}

/// The tools library: built-ins and the server's tools folder (those the caller's
/// allow-list names).
#[utoipa::path(get, path = "/v1/tools", tag = "catalogue",
    responses((status = 200, body = Vec<ToolInfo>), (status = 401, body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn tools(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
) -> Result<Json<Vec<ToolInfo>>, ApiError> {
    let runner = state.runner.clone();
    let dir = state.tools_dir.clone();
    let library = tokio::task::spawn_blocking(move || {
        runner
            .loaded
            .library(dir.as_deref(), |d| (runner.load_library)(d))
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
    .map_err(|e| ApiError::internal(format!("the tools folder cannot be loaded: {e}")))?;
    let mut checks = super::tool_checks::last_checks(&state, &who).await?;
    let mut tools: Vec<ToolInfo> = library
        .tools()
        .filter(|t| who.allow.tool(&t.spec.name))
        .map(|t| {
            let spec = &t.spec;
            ToolInfo {
                name: spec.name.clone(),
                description: spec.description.clone(),
                parameters: spec.parameters.clone(),
                permission: match spec.permission {
                    Permission::Auto => "auto",
                    Permission::Confirm => "confirm",
                    Permission::Never => "never",
                }
                .into(),
                runs: spec.entry.kind().into(),
                definition_only: spec.definition_only(),
                read_only: spec.read_only,
                category: spec.category.clone(),
                sandbox: spec.sandbox.as_ref().map(|p| p.to_json()),
                rules: t
                    .policy
                    .rules
                    .iter()
                    .flat_map(|r| r.written())
                    .map(|(key, rule)| RuleText {
                        key: key.into(),
                        rule,
                    })
                    .collect(),
                approvers: t.rule.approvers.clone(),
                four_eyes: t.rule.four_eyes,
                source: t.origin.place(),
                validation: checks.remove(&spec.name),
                label: spec.display.label.clone(),
                icon: spec.display.icon.clone(),
                help: spec.display.help.clone(),
            }
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(tools))
}

/// The agents of the server's agents folder (those the caller's allow-list names).
#[utoipa::path(get, path = "/v1/agents", tag = "catalogue",
    responses((status = 200, body = Vec<AgentInfo>), (status = 401, body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn agents(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
) -> Result<Json<Vec<AgentInfo>>, ApiError> {
    let reader = Arc::clone(&state);
    let (agents, problems) =
        tokio::task::spawn_blocking(move || reader.agents.list(&reader.runner.loaded))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
    for p in problems {
        tracing::warn!(problem = %p, "an agent file did not load");
    }
    Ok(Json(
        agents
            .iter()
            .filter(|a| who.allow.agent(&a.name))
            .map(AgentInfo::from)
            .collect(),
    ))
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
}

/// Up, and the database answers.
#[utoipa::path(get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, body = Health), (status = 500, body = ErrorBody)))]
pub async fn health(State(state): State<Arc<AppState>>) -> Result<Json<Health>, ApiError> {
    state.runner.store.runs(Scope::All, None, None, 1).await?;
    Ok(Json(Health {
        status: "ok".into(),
    }))
}
