//! A stored response after the fact, as the official SDKs reach it: `retrieve` with
//! `stream=true` (the stored response replayed as Responses stream events), `cancel`
//! (its run cancelled, the response `cancelled`), `delete`, and `input_items` (the
//! input the request sent, as items with ids).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::{IntoParams, ToSchema};

use super::super::AppState;
use super::super::error::{ApiError, ApiQuery, ErrorBody, PathId};
use super::wire::ResponseStatus;

/// `GET /v1/responses/{id}` query.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RetrieveQuery {
    /// Answer with the stored response replayed as Responses stream events
    /// (`response.created` ... its final event) instead of JSON.
    #[serde(default)]
    pub stream: Option<bool>,
}

/// `DELETE /v1/responses/{id}`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeletedResponse {
    pub id: String,
    /// Always `response.deleted`.
    pub object: String,
    /// Always true.
    pub deleted: bool,
}

/// The stored response `id` as a stream: `response.created`, `response.in_progress`,
/// each output item added and done, then `response.completed` (or `.incomplete`,
/// `.failed`) as its status says; a response still being driven ends after its items.
pub fn replay(state: &Arc<AppState>, body: Map<String, Value>) -> Response {
    let events = replay_events(body);
    super::super::sse::from_task(state, move |tx| async move {
        for e in &events {
            if tx.send(super::sse_event(e)).await.is_err() {
                return;
            }
        }
    })
    .into_response()
}

fn replay_events(body: Map<String, Value>) -> Vec<Value> {
    let mut events = Vec::new();
    let mut emit = |kind: &str, fields: Value| {
        let mut event = json!({"type": kind, "sequence_number": events.len()});
        if let (Some(e), Value::Object(fields)) = (event.as_object_mut(), fields) {
            e.extend(fields);
        }
        events.push(event);
    };
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut begun = body.clone();
    begun.insert("status".into(), json!(ResponseStatus::InProgress));
    begun.insert("output".into(), json!([]));
    emit("response.created", json!({"response": begun}));
    emit("response.in_progress", json!({"response": begun}));
    for (index, item) in output.iter().enumerate() {
        emit(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        emit(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }
    let last = match body.get("status").and_then(Value::as_str) {
        Some("completed") => Some("response.completed"),
        Some("incomplete" | "cancelled") => Some("response.incomplete"),
        Some("failed") => Some("response.failed"),
        _ => None,
    };
    if let Some(kind) = last {
        emit(kind, json!({"response": body}));
    }
    events
}

/// Cancels a response: its run, when it has not ended (a paused run included), is
/// cancelled; the response is stored and answered with status `cancelled`.
#[utoipa::path(post, path = "/v1/responses/{id}/cancel", tag = "responses",
    params(("id" = String, Path, description = "A response id, resp_...")),
    responses(
        (status = 200, description = "The response, cancelled with its run", body = super::wire::ResponseObject),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Its run has already ended: nothing to cancel", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn cancel_response(
    State(state): State<Arc<AppState>>,
    crate::scope::Caller(who): crate::scope::Caller,
    PathId(id): PathId,
) -> Result<Json<Map<String, Value>>, ApiError> {
    let (row, mut body) = stored(&state, &who, &id).await?;
    let run = state.runner.get(&row.run_id).await?;
    if run.status.is_final() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_cancellable",
            format!(
                "response {id} cannot be cancelled: its run {} is already {}",
                run.id,
                run.status.as_str()
            ),
        ));
    }
    state.runner.cancel(&run.id).await?;
    body.insert("status".into(), json!(ResponseStatus::Cancelled));
    let text = serde_json::to_string(&body).unwrap_or_default();
    state
        .runner
        .store
        .update_response(&id, ResponseStatus::Cancelled.as_str(), text)
        .await
        .map_err(|e| ApiError::internal(format!("response {id}: cannot store it: {e}")))?;
    Ok(Json(body))
}

/// Deletes a stored response (its run and records stay); a later retrieve is a 404.
#[utoipa::path(delete, path = "/v1/responses/{id}", tag = "responses",
    params(("id" = String, Path, description = "A response id, resp_...")),
    responses(
        (status = 200, description = "Deleted", body = DeletedResponse),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn delete_response(
    State(state): State<Arc<AppState>>,
    crate::scope::Caller(who): crate::scope::Caller,
    PathId(id): PathId,
) -> Result<Json<DeletedResponse>, ApiError> {
    // Another tenant's response is as unknown as one that never was.
    stored(&state, &who, &id).await?;
    let deleted = state
        .runner
        .store
        .delete_response(&id)
        .await
        .map_err(|e| ApiError::internal(format!("response {id}: cannot delete it: {e}")))?;
    if !deleted {
        return Err(ApiError::not_found(format!("there is no response '{id}'")));
    }
    Ok(Json(DeletedResponse {
        id,
        object: "response.deleted".into(),
        deleted: true,
    }))
}

/// `GET /v1/responses/{id}/input_items` query (as the SDKs page lists).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InputItemsQuery {
    /// At most this many items (1 to 100, default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// `desc` (default: newest first) or `asc`.
    #[param(inline)]
    pub order: Option<Order>,
    /// Items after this item id, in the order asked for (none after an id the list
    /// does not hold).
    pub after: Option<String>,
}

/// The order of a listed page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    Asc,
    Desc,
}

/// A page of input items.
#[derive(Debug, Serialize, ToSchema)]
pub struct InputItemList {
    /// Always `list`.
    pub object: String,
    #[schema(value_type = Vec<Object>)]
    pub data: Vec<Value>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    pub has_more: bool,
}

/// The request's `input` as items with ids, as `input_items` lists them: a string is
/// one user message; messages get their content as `input_text` parts.
pub fn input_items(response_id: &str, input: Option<&Value>) -> Value {
    let suffix = response_id.trim_start_matches("resp_");
    let message = |i: usize, content: Value| {
        let parts = match content {
            Value::String(text) => json!([{"type": "input_text", "text": text}]),
            other => other,
        };
        json!({"id": format!("msg_{suffix}_in{i}"), "type": "message", "role": "user",
               "status": "completed", "content": parts})
    };
    let items: Vec<Value> = match input {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => vec![message(0, json!(text))],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let kind = item
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("message");
                if kind == "message" || item.get("role").is_some() {
                    let mut m = message(i, item.get("content").cloned().unwrap_or(json!("")));
                    if let Some(role) = item.get("role") {
                        m["role"] = role.clone();
                    }
                    if let Some(id) = item.get("id") {
                        m["id"] = id.clone();
                    }
                    m
                } else {
                    let mut other = item.clone();
                    if other.get("id").is_none_or(Value::is_null) {
                        other["id"] = json!(format!("item_{suffix}_in{i}"));
                    }
                    if matches!(kind, "function_call_output" | "custom_tool_call_output")
                        && other.get("status").is_none()
                    {
                        other["status"] = json!("completed");
                    }
                    other
                }
            })
            .collect(),
        Some(other) => vec![other.clone()],
    };
    Value::Array(items)
}

/// The input items of a response: what its request sent.
#[utoipa::path(get, path = "/v1/responses/{id}/input_items", tag = "responses",
    params(("id" = String, Path, description = "A response id, resp_..."), InputItemsQuery),
    responses(
        (status = 200, description = "A page of the request's input items", body = InputItemList),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn list_input_items(
    State(state): State<Arc<AppState>>,
    crate::scope::Caller(who): crate::scope::Caller,
    PathId(id): PathId,
    ApiQuery(query): ApiQuery<InputItemsQuery>,
) -> Result<Json<InputItemList>, ApiError> {
    stored(&state, &who, &id).await?;
    let key = id.clone();
    let stored = state
        .runner
        .store
        .response_input(&key)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("there is no response '{id}'")))?;
    let mut items: Vec<Value> = serde_json::from_str(&stored).unwrap_or_default();
    if query.order.unwrap_or(Order::Desc) == Order::Desc {
        items.reverse();
    }
    if let Some(after) = query.after.as_ref().filter(|a| !a.is_empty()) {
        // After an item the list does not hold: nothing follows it.
        match items
            .iter()
            .position(|i| i.get("id").and_then(Value::as_str) == Some(after.as_str()))
        {
            Some(at) => drop(items.drain(..=at)),
            None => items.clear(),
        }
    }
    let limit = query.limit.unwrap_or(20).clamp(1, 100) as usize;
    let has_more = items.len() > limit;
    items.truncate(limit);
    let id_of = |i: Option<&Value>| {
        i.and_then(|i| i.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    Ok(Json(InputItemList {
        object: "list".into(),
        first_id: id_of(items.first()),
        last_id: id_of(items.last()),
        has_more,
        data: items,
    }))
}

/// The stored row and body of response `id`.
/// Another tenant's response answers 404, as an unknown one does.
pub(super) async fn stored(
    state: &Arc<AppState>,
    who: &toolgate_protocol::identity::Identity,
    id: &str,
) -> Result<(toolgate_store::ResponseRow, Map<String, Value>), ApiError> {
    let key = id.to_string();
    let unknown = || ApiError::not_found(format!("there is no response '{id}'"));
    let row = state
        .runner
        .store
        .response(&key)
        .await?
        .ok_or_else(unknown)?;
    if who.scope().is_some() && state.run_for(who, &row.run_id).await.is_err() {
        return Err(unknown());
    }
    let body: Map<String, Value> = serde_json::from_str(&row.body).map_err(|e| {
        ApiError::internal(format!(
            "response {id}: its stored body cannot be read: {e}"
        ))
    })?;
    Ok((row, body))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_replay_adds_each_item_and_ends_as_the_response_did() {
        let body = json!({"id": "resp_1", "status": "completed",
            "output": [{"type": "message", "id": "msg_1"}]});
        let events = replay_events(body.as_object().unwrap().clone());
        let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.output_item.done",
                "response.completed"
            ]
        );
        assert_eq!(events[4]["sequence_number"], 4);
        assert_eq!(events[0]["response"]["status"], "in_progress");
    }
}
