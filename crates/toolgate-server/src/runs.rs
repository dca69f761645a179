//! The native run API: start a run, list and read runs, watch one live, and decide,
//! answer, resume or cancel a paused one. Every door goes through the shared `Runner`.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::sync::broadcast::error::RecvError;
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ApiJson, ApiQuery, ErrorBody, PathId};
use super::scope::Caller;
use super::{AppState, Drive, sse};
use toolgate_protocol::{Decision, RunObject, RunStatus};
use toolgate_runtime::run::run_object;
use toolgate_store::{Refusal, Scope};

/// `POST /v1/runs`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRun {
    /// The agent's name (`GET /v1/agents`).
    pub agent: String,
    /// The user's message: not blank.
    #[schema(pattern = r"[^ \t\n\r\f\v]")]
    pub input: String,
    /// Continue this conversation; a new one when absent.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// Overrides the agent's model; only `openai:NAME` and `anthropic:NAME` are accepted here.
    #[serde(default)]
    #[schema(pattern = r"^openai:.*[^ \t\n\r\f\v]")]
    pub model: Option<String>,
    /// Answer with an SSE stream of the run's events, the run object last.
    #[serde(default)]
    pub stream: bool,
    /// Its calls' priority under the `priority` limits strategy (default: the agent's
    /// `priority:`); higher goes first.
    #[serde(default)]
    pub priority: Option<i32>,
    /// Overrides the agent's `tool_choice`: `auto`, `required`, `none` or
    /// `{"name": TOOL}`.
    #[serde(default)]
    #[schema(value_type = Option<serde_json::Value>)]
    pub tool_choice: Option<serde_json::Value>,
}

/// `GET /v1/runs` filters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// `in_progress`, `requires_action`, `completed`, `incomplete`, `failed`, `cancelled`.
    #[param(value_type = Option<RunStatus>)]
    pub status: Option<String>,
    pub conversation_id: Option<String>,
    /// Only runs of this agent (its name).
    pub agent: Option<String>,
    /// Only runs of this tenant: any for an admin of every tenant; a caller bound to a
    /// tenant may name only its own (403 otherwise).
    pub tenant: Option<String>,
    /// At most this many, newest first (default 20).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u64>,
}

/// `POST /v1/runs/{id}/approve`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    /// Who decides (a person's name or an app's), recorded with the decision; `api`
    /// when absent.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub by: Option<String>,
    /// The call to approve; every waiting approval when absent.
    #[serde(default)]
    pub call_id: Option<String>,
    /// Also approve every later call of this tool by the same agent in the conversation.
    #[serde(default)]
    pub always: bool,
    /// Approve with these arguments instead (validated first; needs `call_id`).
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
    /// `false`: only record the decision, even when it resolves the last item.
    #[serde(default)]
    pub resume: Option<bool>,
    /// Stream the continuation as SSE.
    #[serde(default)]
    pub stream: bool,
}

/// `POST /v1/runs/{id}/deny`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyBody {
    /// Who decides (a person's name or an app's), recorded with the decision; `api`
    /// when absent.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub by: Option<String>,
    pub call_id: String,
    /// What the model reads as the call's result.
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub resume: Option<bool>,
    #[serde(default)]
    pub stream: bool,
}

/// `POST /v1/runs/{id}/submit`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitBody {
    /// Who decides (a person's name or an app's), recorded with the decision; `api`
    /// when absent.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub by: Option<String>,
    pub call_id: String,
    /// The client tool's output, as the model will read it.
    pub output: String,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default)]
    pub resume: Option<bool>,
    #[serde(default)]
    pub stream: bool,
}

/// `POST /v1/runs/{id}/resume` (the body is optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeBody {
    #[serde(default)]
    pub stream: bool,
}

fn reply(run: RunObject) -> Response {
    Json(run).into_response()
}

/// Starts a run and answers when it completes, pauses or fails (or streams it).
#[utoipa::path(post, path = "/v1/runs", tag = "runs", request_body = CreateRun,
    responses(
        (status = 200, description = "The run object once it completed, paused or failed; with `stream`, an SSE stream of its events with the run object last (`event: run`)", 
            content((RunObject = "application/json"), (String = "text/event-stream")),
            links(
                ("GetRun" = (operation_id = "get_run", parameters(("id" = "$response.body#/id")))),
                ("WatchRun" = (operation_id = "watch_run", parameters(("id" = "$response.body#/id")))),
                ("Timeline" = (operation_id = "timeline", parameters(("id" = "$response.body#/id")))),
                ("Approve" = (operation_id = "approve", parameters(("id" = "$response.body#/id")))),
                ("Deny" = (operation_id = "deny", parameters(("id" = "$response.body#/id")))),
                ("Submit" = (operation_id = "submit", parameters(("id" = "$response.body#/id")))),
                ("Resume" = (operation_id = "resume", parameters(("id" = "$response.body#/id")))),
                ("Cancel" = (operation_id = "cancel", parameters(("id" = "$response.body#/id")))),
                ("Calls" = (operation_id = "calls", parameters(("run_id" = "$response.body#/id")))),
                ("ConversationStats" = (operation_id = "conversation_stats", parameters(("id" = "$response.body#/conversation_id")))),
            )),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 409, description = "The conversation has an unfinished run", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn create_run(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<CreateRun>,
) -> Result<Response, ApiError> {
    if let Some(c) = &body.conversation_id {
        state.conversation_for(&who, c).await?;
    }
    state.may_start(&who).await?;
    let mut start = state
        .start_request(
            &who,
            &body.agent,
            body.input,
            body.conversation_id,
            body.model,
        )
        .await?;
    start.priority = body.priority;
    if let Some(choice) = &body.tool_choice {
        start.agent.tool_choice = toolgate_model::ToolChoice::read(choice)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
    }
    let drive = Drive::Start(Box::new(start));
    if body.stream {
        return Ok(sse::drive(&state, state.spawn_drive(drive)).into_response());
    }
    Ok(reply(state.drive(drive).await?))
}

/// Lists runs, newest first, each as its full run object.
#[utoipa::path(get, path = "/v1/runs", tag = "runs", params(RunsQuery),
    responses((status = 200, body = Vec<RunObject>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn list_runs(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    ApiQuery(q): ApiQuery<RunsQuery>,
) -> Result<Json<Vec<RunObject>>, ApiError> {
    let tenant = match (who.scope(), q.tenant) {
        (Some(own), Some(asked)) if own != asked => {
            return Err(ApiError::new(
                axum::http::StatusCode::FORBIDDEN,
                "forbidden",
                format!("{} may read only the runs of its tenant '{own}'", who.name),
            ));
        }
        (Some(own), _) => Some(own.to_string()),
        (None, asked) => asked,
    };
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(s.parse::<RunStatus>().map_err(|_| {
            ApiError::bad_request(format!(
                "unknown status '{s}'; one of: {}",
                RunStatus::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?),
    };
    let limit = super::records::in_range("limit", q.limit, 20, 1, 1000)?;
    let conversation = q.conversation_id;
    let runs = state
        .runner
        .store
        .runs_with_pending(
            Scope::of(tenant.as_deref()),
            status,
            conversation.as_deref(),
            q.agent.as_deref(),
            limit,
        )
        .await?
        .iter()
        .map(|(row, pending)| run_object(row, pending))
        .collect();
    Ok(Json(runs))
}

/// One run (an id or a unique prefix).
#[utoipa::path(get, path = "/v1/runs/{id}", tag = "runs",
    params(("id" = String, Path, description = "A run id or a unique prefix")),
    responses((status = 200, body = RunObject), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "The prefix names more than one run", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn get_run(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
) -> Result<Json<RunObject>, ApiError> {
    Ok(Json(state.run_for(&who, &id).await?))
}

/// A run's execution summary with the sub-agent runs below it: per run its calls,
/// success rate, tokens and time, per tool its tally, and totals including children.
#[utoipa::path(get, path = "/v1/runs/{id}/tree", tag = "runs",
    params(("id" = String, Path, description = "A run id or a unique prefix")),
    responses((status = 200, body = toolgate_protocol::RunTree), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "The prefix names more than one run", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn run_tree(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
) -> Result<Json<toolgate_protocol::RunTree>, ApiError> {
    let id = state.run_for(&who, &id).await?.id;
    Ok(Json(state.runner.tree(&id).await?))
}

/// Watches a run: its current run object, then its events live until it pauses or
/// ends, then the run object again. A run driven by another process is followed
/// through the store's change feed (`event: run` each time it changes).
#[utoipa::path(get, path = "/v1/runs/{id}/events", tag = "runs",
    params(("id" = String, Path, description = "A run id or a unique prefix")),
    responses((status = 200, description = "SSE: `event: run` (the run object), the run's events, `event: run` last", content_type = "text/event-stream", body = String),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn watch_run(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let id = state.run_for(&who, &id).await?.id;
    // Subscribed before the run is read, so that nothing falls between the two.
    let live = state.hub.subscribe(&id);
    let mut changes = state.runner.store.watch();
    let current = state.runner.get(&id).await?;
    let watcher = Arc::clone(&state);
    Ok(sse::from_task(&state, move |tx| async move {
        let mut last = (current.updated_at, current.status);
        if tx.send(sse::run_object(&current)).await.is_err() {
            return;
        }
        if current.status != RunStatus::InProgress {
            return;
        }
        if let Some(mut rx) = live {
            loop {
                match rx.recv().await {
                    Ok(e) => {
                        if tx.send(sse::run_event(&e)).await.is_err() {
                            return;
                        }
                        // A sub-agent's run ending is not this run's end.
                        if e.is_last() && e.run_id() == id {
                            break;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        if let Ok(run) = watcher.runner.get(&id).await
                            && tx.send(sse::run_object(&run)).await.is_err()
                        {
                            return;
                        }
                    }
                    Err(RecvError::Closed) => break,
                }
            }
        }
        // Driven elsewhere, or its drive here has told its end: the run object each
        // time the store says the run changed, until it is no longer in progress (the
        // drive here saves before it reports its end: that save comes through too).
        loop {
            let run = match watcher.runner.get(&id).await {
                Ok(run) => run,
                Err(e) => {
                    let _ = tx.send(sse::error(&e.into())).await;
                    return;
                }
            };
            if (run.updated_at, run.status) != last {
                last = (run.updated_at, run.status);
                if tx.send(sse::run_object(&run)).await.is_err() {
                    return;
                }
            }
            if run.status != RunStatus::InProgress {
                return;
            }
            if !toolgate_store::next_change_of(&mut changes, &id).await {
                return;
            }
        }
    })
    .into_response())
}

/// Who decides: the caller's identity, with the name a person typed (`by`) kept beside
/// it, never instead of it.
fn decider(
    who: &toolgate_protocol::identity::Identity,
    by: Option<String>,
) -> Result<toolgate_store::Decider, ApiError> {
    let shown = match by.map(|b| b.trim().to_string()) {
        Some(b) if b.chars().count() > 200 => {
            return Err(ApiError::bad_request("'by' is longer than 200 characters"));
        }
        Some(b) if !b.is_empty() => Some(b),
        _ => None,
    };
    Ok(toolgate_store::Decider {
        by: who.name.clone(),
        key_id: who.key_id.clone(),
        shown,
    })
}

/// Records a decision; continues the run when it resolved the last item (unless
/// `resume` is false).
async fn decided(
    state: Arc<AppState>,
    run_id: &str,
    call_id: Option<&str>,
    decision: Decision,
    decider: toolgate_store::Decider,
    resume: Option<bool>,
    stream: bool,
) -> Result<Response, ApiError> {
    let d = if resume == Some(false) {
        state
            .runner
            .record_only(run_id, call_id, decision, decider)
            .await?
    } else {
        state
            .runner
            .decide_as(run_id, call_id, decision, decider)
            .await?
    };
    if d.waiting > 0 || resume == Some(false) {
        let run = state.runner.get(run_id).await?;
        return Ok(if stream {
            sse::from_task(&state, move |tx| async move {
                let _ = tx.send(sse::run_object(&run)).await;
            })
            .into_response()
        } else {
            reply(run)
        });
    }
    continued(state, run_id, stream).await
}

/// Continues a run (`run_id` is its full id); when another request or process took it
/// over first (it resolved the same run's last item at the same moment), answers the
/// run as it stands.
async fn continued(state: Arc<AppState>, run_id: &str, stream: bool) -> Result<Response, ApiError> {
    let id = run_id.to_string();
    if stream {
        return Ok(sse::drive(&state, state.spawn_drive(Drive::Resume(id))).into_response());
    }
    match state.drive(Drive::Resume(id.clone())).await {
        Ok(run) => Ok(reply(run)),
        Err(e) if e.kind == Refusal::LeaseHeld.as_str() => Ok(reply(state.runner.get(&id).await?)),
        Err(e) => Err(e),
    }
}

/// Approves a paused run's call (or every waiting approval), optionally for good or
/// with edited arguments.
#[utoipa::path(post, path = "/v1/runs/{id}/approve", tag = "decisions", request_body = ApproveBody,
    params(("id" = String, Path, description = "The run's full id")),
    responses((status = 200, description = "The run object (continued when this resolved its last item)", 
            content((RunObject = "application/json"), (String = "text/event-stream"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 403, description = "This caller may not decide these calls (its role, the agent's approvers, four eyes); nothing is recorded", body = ErrorBody),
        (status = 409, description = "The run is not waiting for this decision, or another process holds it", body = ErrorBody),
        (status = 422, description = "The edited arguments do not fit the tool's schema", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn approve(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
    ApiJson(body): ApiJson<ApproveBody>,
) -> Result<Response, ApiError> {
    let decision = match (body.arguments, body.always) {
        (Some(_), true) => {
            return Err(ApiError::bad_request(
                "give either edited arguments or always, not both",
            ));
        }
        (Some(arguments), false) => Decision::Edit { arguments },
        (None, true) => Decision::ApproveAlways,
        (None, false) => Decision::Approve,
    };
    let run = exact_run(&state, &who, &id).await?;
    state
        .may_decide(&who, &run, body.call_id.as_deref())
        .await?;
    decided(
        state,
        &run.id,
        body.call_id.as_deref(),
        decision,
        decider(&who, body.by)?,
        body.resume,
        body.stream,
    )
    .await
}

/// Denies a paused run's call; the reason is what the model reads.
#[utoipa::path(post, path = "/v1/runs/{id}/deny", tag = "decisions", request_body = DenyBody,
    params(("id" = String, Path, description = "A run id or a unique prefix")),
    responses((status = 200,
            content((RunObject = "application/json"), (String = "text/event-stream"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn deny(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
    ApiJson(body): ApiJson<DenyBody>,
) -> Result<Response, ApiError> {
    let decision = Decision::Deny {
        reason: body.reason,
    };
    let run = exact_run(&state, &who, &id).await?;
    state.may_decide(&who, &run, Some(&body.call_id)).await?;
    decided(
        state,
        &run.id,
        Some(&body.call_id),
        decision,
        decider(&who, body.by)?,
        body.resume,
        body.stream,
    )
    .await
}

/// Gives a client tool's output to a paused run.
#[utoipa::path(post, path = "/v1/runs/{id}/submit", tag = "decisions", request_body = SubmitBody,
    params(("id" = String, Path, description = "A run id or a unique prefix")),
    responses((status = 200,
            content((RunObject = "application/json"), (String = "text/event-stream"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn submit(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
    ApiJson(body): ApiJson<SubmitBody>,
) -> Result<Response, ApiError> {
    let decision = Decision::Submit {
        output: body.output,
        is_error: body.is_error,
    };
    let id = exact_run(&state, &who, &id).await?.id;
    decided(
        state,
        &id,
        Some(&body.call_id),
        decision,
        decider(&who, body.by)?,
        body.resume,
        body.stream,
    )
    .await
}

/// Continues a run whose items are all resolved, that failed, or whose process died.
#[utoipa::path(post, path = "/v1/runs/{id}/resume", tag = "runs", request_body(content = Option<ResumeBody>),
    params(("id" = String, Path, description = "A run id or a unique prefix")),
    responses((status = 200,
            content((RunObject = "application/json"), (String = "text/event-stream"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "Items still wait, the run ended, or another process holds it", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn resume(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let body: ResumeBody = if body.iter().all(u8::is_ascii_whitespace) {
        ResumeBody::default()
    } else {
        serde_json::from_slice::<Option<ResumeBody>>(&body)
            .map_err(|e| ApiError::bad_request(format!("the body is not a resume request: {e}")))?
            .unwrap_or_default()
    };
    let id = exact_run(&state, &who, &id).await?.id;
    if !body.stream && state.runner.active.has(&id) {
        // This server drives it already (it took it up): its next pause or end.
        return Ok(reply(super::follow::until_settled(&state, &id).await?));
    }
    if body.stream {
        return Ok(sse::drive(&state, state.spawn_drive(Drive::Resume(id))).into_response());
    }
    Ok(reply(state.drive(Drive::Resume(id)).await?))
}

/// Cancels a run that has not ended (a running one stops at its next step).
#[utoipa::path(post, path = "/v1/runs/{id}/cancel", tag = "runs",
    params(("id" = String, Path, description = "A run id or a unique prefix")),
    responses((status = 200, body = RunObject), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "The run has ended", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
) -> Result<Json<RunObject>, ApiError> {
    let id = exact_run(&state, &who, &id).await?.id;
    Ok(Json(state.runner.cancel(&id).await?))
}

/// The run `id` names whole: a change of state never takes a prefix (a short prefix
/// can be guessed), only reads do. Anything but a full run id is not found, the same
/// answer as for an unknown run (no hint of which prefixes exist).
async fn exact_run(
    state: &AppState,
    who: &toolgate_protocol::identity::Identity,
    id: &str,
) -> Result<RunObject, ApiError> {
    if !toolgate_runtime::run::is_run_id(id) {
        return Err(toolgate_runtime::run::RunError::NotFound(id.to_string()).into());
    }
    state.run_for(who, id).await
}
