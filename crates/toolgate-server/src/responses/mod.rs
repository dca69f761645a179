//! The OpenAI Responses-compatible endpoint: `POST /v1/responses` and
//! `GET /v1/responses/{id}`, so that an unmodified OpenAI SDK talks to an agent
//! (`model: "agent:NAME"`). A translation layer over the same Runner and store as every
//! other door: a response is one run driven until it pauses or ends; its id maps to
//! (run, step); approvals and client outputs go through `Runner::decide`, bound to the
//! call id, at most once. It never decides anything the gate did not.
//!
//! `wire` holds the request and response shapes, `input` reads the input and matches
//! answers to waiting items, `translate` turns run events into output items and stream
//! events, `ending` sets a response's status from its run, `drive` runs one response.

pub mod attachments;
pub mod drive;
pub mod ending;
mod fetch;
pub mod input;
mod input_doc;
pub mod manage;
pub mod request_tools;
pub mod structured;
pub mod translate;
pub mod uploads;
pub mod wire;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use self::drive::{Job, Plan, Report, now_s};
use self::input::{InputError, parse_input, plan_decisions};
use self::wire::{
    AGENT_PREFIX, CreateResponse, ResponseError, ResponseObject, ResponseStatus, SERVER_LABEL,
    new_response_id,
};
use super::AppState;
use super::error::{ApiError, ApiJson, ApiQuery, ErrorBody, PathId};
use toolgate_protocol::{ItemKind, RunStatus};
use toolgate_runtime::agent::Agent;
use toolgate_tool::Permission;

/// The Responses routes.
pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(create_response))
        .routes(routes!(get_response, manage::delete_response))
        .routes(routes!(manage::cancel_response))
        .routes(routes!(manage::list_input_items))
}

impl From<InputError> for ApiError {
    fn from(e: InputError) -> Self {
        match e {
            InputError::Invalid(m) => ApiError::bad_request(m),
            InputError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "decision_conflict", m),
        }
    }
}

fn conflict(kind: &str, message: String) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, kind, message)
}

/// Runs an agent, or continues one with `previous_response_id`, and answers with the
/// response once the run pauses or ends (or streams it).
#[utoipa::path(post, path = "/v1/responses", tag = "responses", request_body = CreateResponse,
    responses(
        (status = 200, description = "The response once the run completed, paused (its output then ends with the mcp_approval_request and function_call items it waits for) or failed; with `stream`, the Responses stream events (`response.created` ... `response.completed`)",
            content((ResponseObject = "application/json"), (String = "text/event-stream")),
            links(("GetResponse" = (operation_id = "get_response", parameters(("id" = "$response.body#/id")))))),
        (status = 400, description = "A model that is not agent:NAME, or an input toolgate does not take", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such agent, or no such previous response", body = ErrorBody),
        (status = 409, description = "An answer for a call that does not wait, a new message while the run waits, or a run held by another request", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn create_response(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
    ApiJson(body): ApiJson<CreateResponse>,
) -> Result<Response, ApiError> {
    let agent_name = agent_name(&body.model)?;
    if body.instructions.as_ref().is_some_and(|i| !i.is_null()) {
        return Err(ApiError::bad_request(
            "'instructions' is not accepted: an agent's instructions come from its agent file",
        ));
    }
    let mut input = parse_input(body.input.as_ref())?;
    let declared = request_tools::read(body.tools.as_ref())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let format =
        structured::read(body.text.as_ref()).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if let (Some(format), Some(message)) = (&format, input.message.as_mut()) {
        // The model is asked for the format along with the message.
        message.push_str("\n\n");
        message.push_str(&format.instruction());
    }
    let agent = state.agent_for(&who, agent_name)?;
    let (agent_tools, agent_names) = tools_of(&state, &agent).await;
    if let Some(name) = declared
        .as_deref()
        .and_then(|d| request_tools::clash(d, &agent_names))
    {
        return Err(ApiError::bad_request(format!(
            "tools: '{name}' is already a tool of agent '{agent_name}'; give your function tool another name"
        )));
    }
    // Attachments are fetched and checked before anything is decided or started.
    let ready = attachments::fetch(std::mem::take(&mut input.attachments)).await?;
    if !ready.is_empty() && input.message.as_deref().is_none_or(super::blank) {
        input.message = Some("See the attachments.".into());
    }
    let response_id = new_response_id();
    let mut response = ResponseObject::begin(
        &response_id,
        &body.model,
        now_s(),
        body.previous_response_id.as_deref(),
    );
    if let Some(metadata) = &body.metadata {
        response.metadata = metadata.clone();
    }
    if let Some(format) = &format {
        response.text = format.requested.clone();
    }
    let (mut plan, answered, earlier) = match &body.previous_response_id {
        None => start_fresh(&state, &who, agent_name, input).await?,
        Some(previous) => continue_from(&state, &who, agent_name, previous, input).await?,
    };
    response.tool_choice = choose(body.tool_choice.as_ref(), &mut plan, &agent)?;
    let images = match &mut plan {
        Plan::Start(start) => attach(start, ready, &agent).await?,
        _ if ready.is_empty() => Vec::new(),
        _ => {
            return Err(ApiError::bad_request(
                "attachments go with a user message, and this request continues a paused run",
            ));
        }
    };
    // A request without `tools` keeps the client tools of the run it continues.
    let client_tools = match (&declared, &earlier) {
        (Some(declared), _) => declared.clone(),
        (None, Some(run_id)) => state.runner.client_tools(run_id).await?,
        (None, None) => Vec::new(),
    };
    response.tools = agent_tools;
    response
        .tools
        .extend(client_tools.iter().map(request_tools::listed));
    let additions = toolgate_runtime::run::Additions {
        tools: Some(client_tools),
        // Sent to OpenAI models as `response_format`; a request without `text` keeps
        // the run's.
        response_format: body.text.as_ref().filter(|t| !t.is_null()).map(|_| {
            format
                .as_ref()
                .map(structured::OutputFormat::response_format)
        }),
        images,
    };
    let job = Job {
        response,
        previous: body.previous_response_id.clone(),
        answered,
        format,
        input: manage::input_items(&response_id, body.input.as_ref()),
        additions,
    };
    let reports = drive::spawn(&state, plan, job);
    if body.stream.unwrap_or(false) {
        stream(&state, reports).await
    } else {
        whole(reports).await
    }
}

/// The request's `tool_choice`, given to the run it starts (a run it continues keeps
/// its agent's); returns the choice the response shows.
fn choose(asked: Option<&Value>, plan: &mut Plan, agent: &Agent) -> Result<String, ApiError> {
    let choice = match asked {
        Some(v) if !v.is_null() => Some(
            toolgate_model::ToolChoice::read(v)
                .map_err(|e| ApiError::bad_request(e.to_string()))?,
        ),
        _ => None,
    };
    Ok(match (choice, plan) {
        (Some(choice), Plan::Start(start)) => {
            start.agent.tool_choice = choice;
            start.agent.tool_choice.label().to_string()
        }
        _ => agent.tool_choice.label().to_string(),
    })
}

/// The images of `ready`, for the model; its files saved in the run's workspace, the
/// message telling the model where.
async fn attach(
    start: &mut toolgate_runtime::run::StartRun,
    ready: Vec<attachments::Ready>,
    agent: &Agent,
) -> Result<Vec<toolgate_model::ImagePart>, ApiError> {
    let workspace = toolgate_runtime::run::Runner::workspace_for(
        start.workspace.as_deref(),
        agent,
        start.owner.as_ref(),
    );
    let mut images = Vec::new();
    for item in ready {
        match item {
            attachments::Ready::Image(image) => images.push(image),
            attachments::Ready::File { filename, bytes } => {
                let ws = workspace.clone();
                let size = bytes.len();
                let saved = tokio::task::spawn_blocking(move || {
                    uploads::save(&ws, &filename, &bytes).map(|path| (filename, path))
                })
                .await
                .map_err(|e| ApiError::internal(format!("saving an attachment stopped: {e}")))?
                .map_err(|e| ApiError::internal(e.to_string()))?;
                start.message.push_str(&format!(
                    "\n\n[The user attached the file '{}' ({size} bytes); it is saved in your workspace as {}]",
                    saved.0, saved.1
                ));
            }
        }
    }
    Ok(images)
}

/// The agent a `model` names.
fn agent_name(model: &str) -> Result<&str, ApiError> {
    match model.strip_prefix(AGENT_PREFIX) {
        Some(name) if !super::blank(name) => Ok(name),
        _ => Err(ApiError::bad_request(format!(
            "model '{model}' is not an agent: use agent:NAME (GET /v1/agents lists them)"
        ))),
    }
}

/// What a request with `previous_response_id` does: decide the paused run's items (and
/// continue it once none waits), or start a new run in its conversation. With the plan:
/// the calls the client answers, and the previous response's run.
async fn continue_from(
    state: &Arc<AppState>,
    who: &toolgate_protocol::identity::Identity,
    agent_name: &str,
    previous: &str,
    input: input::Input,
) -> Result<(Plan, HashMap<String, bool>, Option<String>), ApiError> {
    let id = previous.to_string();
    let unknown = || ApiError::not_found(format!("there is no response '{previous}'"));
    let row = state
        .runner
        .store
        .response(&id)
        .await?
        .ok_or_else(unknown)?;
    let run = state
        .run_for(who, &row.run_id)
        .await
        .map_err(|_| unknown())?;
    if run.agent != agent_name {
        return Err(ApiError::bad_request(format!(
            "response {previous} belongs to agent '{}'; continue it with model {AGENT_PREFIX}{}",
            run.agent, run.agent
        )));
    }
    match run.status {
        RunStatus::RequiresAction => answer_paused(state, who, run, previous, input).await,
        RunStatus::InProgress => Err(conflict(
            "lease_held",
            format!(
                "the run of response {previous} ({}) is in progress; wait for its response to end",
                run.id
            ),
        )),
        _ => {
            if !input.answers.is_empty() {
                return Err(conflict(
                    "decision_conflict",
                    format!(
                        "run {} of response {previous} is {}: nothing is waiting for a decision",
                        run.id,
                        run.status.as_str()
                    ),
                ));
            }
            let message = input.message.unwrap_or_default();
            let start = state
                .start_request(
                    who,
                    agent_name,
                    message,
                    Some(run.conversation_id.clone()),
                    None,
                )
                .await?;
            Ok((
                Plan::Start(Box::new(start)),
                HashMap::new(),
                Some(run.id.clone()),
            ))
        }
    }
}

/// What a request without `previous_response_id` does: start a new run (no answers
/// to give, and not with an approver key).
async fn start_fresh(
    state: &Arc<AppState>,
    who: &toolgate_protocol::identity::Identity,
    agent_name: &str,
    input: input::Input,
) -> Result<(Plan, HashMap<String, bool>, Option<String>), ApiError> {
    if !input.answers.is_empty() {
        return Err(ApiError::bad_request(
            "mcp_approval_response and function_call_output answer a paused response: send them with its previous_response_id",
        ));
    }
    if !who.roles.any_of(&[
        toolgate_protocol::identity::Role::Client,
        toolgate_protocol::identity::Role::Admin,
    ]) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "{} is an approver key; starting a run needs the role client or admin",
                who.name
            ),
        ));
    }
    state.may_start(who).await?;
    let message = input.message.unwrap_or_default();
    let start = state
        .start_request(who, agent_name, message, None, None)
        .await?;
    Ok((Plan::Start(Box::new(start)), HashMap::new(), None))
}

/// A request answering the paused run of response `previous`: decides the items it
/// answers, and continues the run once none waits.
async fn answer_paused(
    state: &Arc<AppState>,
    who: &toolgate_protocol::identity::Identity,
    run: toolgate_protocol::RunObject,
    previous: &str,
    input: input::Input,
) -> Result<(Plan, HashMap<String, bool>, Option<String>), ApiError> {
    let waiting = run
        .required_action
        .as_ref()
        .map(|r| r.items.clone())
        .unwrap_or_default();
    if input.message.is_some() {
        return Err(conflict(
            "still_waiting",
            format!(
                "response {previous} waits for {} item(s) of run {}: answer them with mcp_approval_response or function_call_output items first",
                waiting.len(),
                run.id
            ),
        ));
    }
    if input.answers.is_empty() {
        return Err(ApiError::bad_request("the input is empty"));
    }
    // Answering an approval is a decision: the agent's rule applies.
    if waiting.iter().any(|i| i.kind == ItemKind::Approval) {
        state.may_decide(who, &run, None).await?;
    }
    let plan = plan_decisions(&run.id, &input.answers, &waiting)?;
    // Every item the run waited for is the client's to answer, in this request or
    // an earlier one: none gets an item of its own when it is resolved, and an
    // approval item that runs links its request.
    let run_id = run.id.clone();
    let (_, pending) = state.runner.store.run(&run_id).await?;
    let answered: HashMap<String, bool> = pending
        .iter()
        .filter(|p| {
            p.state == toolgate_store::PendingState::Waiting
                || p.state == toolgate_store::PendingState::Decided
        })
        .map(|p| (p.item.call_id.clone(), p.item.kind == ItemKind::Approval))
        .collect();
    let mut left = waiting.len();
    for (call_id, decision) in plan {
        let decider = toolgate_store::Decider {
            by: who.name.clone(),
            key_id: who.key_id.clone(),
            shown: None,
        };
        left = state
            .runner
            .decide_as(&run.id, Some(&call_id), decision, decider)
            .await?
            .waiting;
    }
    if left == 0 {
        let plan = Plan::Resume {
            run_id: run.id.clone(),
            before: run.usage,
        };
        return Ok((plan, answered, Some(run.id.clone())));
    }
    let now = state.runner.get(&run.id).await?;
    let waiting = now
        .required_action
        .as_ref()
        .map(|r| r.items.clone())
        .unwrap_or_default();
    let plan = Plan::Waiting {
        run: Box::new(now),
        waiting,
    };
    Ok((plan, answered, Some(run.id.clone())))
}

/// The agent's tools as the response lists them (one `mcp` entry for the tools toolgate
/// runs, one `function` entry per client tool), and their names.
async fn tools_of(state: &Arc<AppState>, agent: &Agent) -> (Vec<Value>, Vec<String>) {
    let runner = state.runner.clone();
    let tools_dir = state.tools_dir.clone();
    let agent = agent.clone();
    tokio::task::spawn_blocking(move || {
        let library = runner
            .loaded
            .library(tools_dir.as_deref(), |dir| (runner.load_library)(dir))
            .ok()?;
        let toolkit = agent.toolkit(&library).ok()?;
        let (mut always, mut never, mut functions) = (Vec::new(), Vec::new(), Vec::new());
        for tool in toolkit.tools() {
            let spec = &tool.spec;
            if spec.definition_only() {
                functions.push(json!({
                    "type": "function",
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                    "strict": false,
                }));
            } else if toolkit.permission(&spec.name) == Permission::Auto {
                never.push(spec.name.clone());
            } else {
                always.push(spec.name.clone());
            }
        }
        let mut tools = Vec::new();
        if !always.is_empty() || !never.is_empty() {
            let allowed: Vec<&String> = never.iter().chain(&always).collect();
            tools.push(json!({
                "type": "mcp",
                "server_label": SERVER_LABEL,
                "allowed_tools": allowed,
                "require_approval": {"always": {"tool_names": always}, "never": {"tool_names": never}},
            }));
        }
        tools.extend(functions);
        Some((tools, toolkit.names().to_vec()))
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_default()
}

/// Waits for the final response.
async fn whole(mut reports: UnboundedReceiver<Report>) -> Result<Response, ApiError> {
    while let Some(report) = reports.recv().await {
        match report {
            Report::Events(_) => {}
            Report::Done(response) => return Ok(Json(*response).into_response()),
            Report::Refused(e) => return Err(e),
        }
    }
    Err(ApiError::internal(
        "the response's task stopped before it ended",
    ))
}

pub(super) fn sse_event(event: &Value) -> super::sse::Frame {
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    super::sse::Frame::new(kind, serde_json::to_string(event).unwrap_or_default())
}

/// Streams the response's events; a refusal before anything was driven is a plain
/// JSON error instead.
async fn stream(
    state: &Arc<AppState>,
    mut reports: UnboundedReceiver<Report>,
) -> Result<Response, ApiError> {
    let first = match reports.recv().await {
        Some(Report::Refused(e)) => return Err(e),
        Some(Report::Events(events)) => events,
        Some(Report::Done(_)) | None => {
            return Err(ApiError::internal(
                "the response's task stopped before it began",
            ));
        }
    };
    Ok(super::sse::from_task(state, move |tx| async move {
        for e in &first {
            if tx.send(sse_event(e)).await.is_err() {
                // The client went away: the run goes on, and the response is stored.
                return;
            }
        }
        while let Some(report) = reports.recv().await {
            let Report::Events(events) = report else {
                break;
            };
            for e in &events {
                if tx.send(sse_event(e)).await.is_err() {
                    return;
                }
            }
        }
    }))
}

/// A response as last stored: after it ended, the whole response; while its run is
/// driven, the response as begun; one whose server stopped before finishing it, failed
/// (its run goes on with `previous_response_id`). With `stream=true`, the same response
/// replayed as stream events.
#[utoipa::path(get, path = "/v1/responses/{id}", tag = "responses",
    params(("id" = String, Path, description = "A response id, resp_..."), manage::RetrieveQuery),
    responses((status = 200, description = "The response; with `stream=true`, its stream events",
            content((ResponseObject = "application/json"), (String = "text/event-stream"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn get_response(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
    PathId(id): PathId,
    ApiQuery(query): ApiQuery<manage::RetrieveQuery>,
) -> Result<Response, ApiError> {
    let body = stored_response(&state, &who, &id).await?;
    if query.stream.unwrap_or(false) {
        return Ok(manage::replay(&state, body));
    }
    Ok(Json(body).into_response())
}

/// The stored response `id`, failed when its server stopped before finishing it.
async fn stored_response(
    state: &Arc<AppState>,
    who: &toolgate_protocol::identity::Identity,
    id: &str,
) -> Result<Map<String, Value>, ApiError> {
    let (row, mut body) = manage::stored(state, who, id).await?;
    if row.status == ResponseStatus::InProgress.as_str()
        && let Ok(run) = state.runner.get(&row.run_id).await
        && abandoned(
            run.status,
            run.updated_at,
            toolgate_protocol::clock::now_ms(),
        )
    {
        body.insert("status".into(), json!(ResponseStatus::Failed));
        body.insert(
            "error".into(),
            json!(ResponseError {
                code: "server_error".into(),
                message: format!(
                    "the server stopped before this response was finished; its run {} is now {} (continue with previous_response_id {id})",
                    run.id,
                    run.status.as_str()
                ),
            }),
        );
    }
    Ok(body)
}

/// How long after its run's last change a response may still be in progress: the drive
/// stores the response a moment after the run's last save.
const FINISH_GRACE_MS: i64 = 10_000;

/// Whether a response stored as in progress was left so by a server that stopped: its
/// run is no longer driven, and has not been for a while.
fn abandoned(run: RunStatus, run_updated_at: i64, now_ms: i64) -> bool {
    run != RunStatus::InProgress && now_ms - run_updated_at > FINISH_GRACE_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_abandoned_only_when_its_run_stopped_a_while_ago() {
        assert!(!abandoned(RunStatus::InProgress, 0, 1_000_000));
        assert!(!abandoned(RunStatus::Completed, 1_000_000, 1_000_500));
        assert!(abandoned(RunStatus::Completed, 1_000_000, 1_020_000));
        assert!(abandoned(RunStatus::RequiresAction, 1_000_000, 1_020_000));
    }

    #[test]
    fn models_name_agents() {
        assert_eq!(agent_name("agent:helper").ok(), Some("helper"));
        for bad in ["helper", "agent:", "agent: ", "gpt-4o", "openai:gpt-4o"] {
            assert!(agent_name(bad).is_err(), "{bad}");
        }
    }
}
