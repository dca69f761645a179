//! MCP tasks over streamable HTTP (`/mcp/{agent}`): a POST carrying a task request is
//! answered here, before rmcp (which speaks a later draft of tasks): JSON for all but
//! `tasks/result`, which answers as an SSE stream of the task's status notifications
//! ending with the result. The answers rmcp gives to `initialize` and `tools/list` get
//! task support added on their way out, as they stream.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::mcp_gateway::tasks::{self, Inbound, Patch, Tasks};

/// The largest message body read here (rmcp's own limit is of the same order).
const BODY_LIMIT: usize = 4 << 20;

/// A POST to `/mcp/{agent}`, read and sorted.
pub(super) enum Sorted {
    /// A task request, answered here.
    Task {
        id: Value,
        method: String,
        params: Value,
        /// The `Mcp-Session-Id` it came with.
        session: Option<String>,
    },
    /// For rmcp, as it came; its answer needs `patch` (when some).
    Rmcp(Request, Option<Patch>),
}

/// Reads a POST's body to see whether it is a task request; other requests pass as
/// they are.
pub(super) async fn sort(request: Request) -> Result<Sorted, Response> {
    if request.method() != axum::http::Method::POST {
        return Ok(Sorted::Rmcp(request, None));
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, BODY_LIMIT).await.map_err(|e| {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("cannot read the message: {e}"),
        )
            .into_response()
    })?;
    let message: Option<Value> = serde_json::from_slice(&bytes).ok();
    let sorted = message.as_ref().map(tasks::classify);
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match sorted {
        Some(Inbound::Task { id, method, params }) => Ok(Sorted::Task {
            id,
            method,
            params,
            session,
        }),
        Some(Inbound::Rmcp { patch, .. }) => Ok(Sorted::Rmcp(
            Request::from_parts(parts, Body::from(bytes)),
            patch,
        )),
        None => Ok(Sorted::Rmcp(
            Request::from_parts(parts, Body::from(bytes)),
            None,
        )),
    }
}

/// The refusal of a task request outside a live MCP session (as rmcp refuses others).
pub(super) fn no_session(session: Option<&str>) -> Response {
    let (status, message) = match session {
        None => (
            StatusCode::BAD_REQUEST,
            "Bad Request: the Mcp-Session-Id header is required",
        ),
        Some(_) => (StatusCode::NOT_FOUND, "Not Found: no such MCP session"),
    };
    (
        status,
        axum::Json(
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message}}),
        ),
    )
        .into_response()
}

/// Answers a task request: JSON, or for `tasks/result` an SSE stream of the task's
/// status notifications and then the answer. The wait stops when the client goes.
pub(super) fn answer(tasks: Tasks, id: Value, method: String, params: Value) -> Response {
    if method != "tasks/result" {
        return async_json(tasks, id, method, params);
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let notes_tx = tx.clone();
    let notes: tasks::Notes = Arc::new(move |note| {
        let _ = notes_tx.send(note);
    });
    let waiting = tokio::spawn(async move {
        let answer = tasks.answer(&method, params, &notes).await;
        let _ = tx.send(tasks::answer_message(&id, answer));
    });
    // The wait ends with the stream (the client went away).
    let guard = tokio_util::task::AbortOnDropHandle::new(waiting);
    let events = futures_util::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        let message = rx.recv().await?;
        let event = format!("event: message\ndata: {message}\n\n");
        Some((Ok::<_, Infallible>(Bytes::from(event)), (rx, guard)))
    });
    sse(Body::from_stream(events))
}

/// A JSON answer, once the answer is there.
fn async_json(tasks: Tasks, id: Value, method: String, params: Value) -> Response {
    let body = futures_util::stream::once(async move {
        let noop: tasks::Notes = Arc::new(|_| {});
        let answer = tasks.answer(&method, params, &noop).await;
        Ok::<_, Infallible>(Bytes::from(tasks::answer_message(&id, answer).to_string()))
    });
    let mut response = Response::new(Body::from_stream(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A response streaming `body` as server-sent events.
fn sse(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// rmcp's answer with task support added: each JSON-RPC message in it (the JSON body,
/// or each SSE `data:` line) patched as it streams.
pub(super) fn patched(response: Response, patch: Patch) -> Response {
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    let stream = body.into_data_stream();
    let body = if is_json {
        Body::from_stream(futures_util::stream::once(async move {
            let chunks: Vec<_> = stream.collect().await;
            let mut all = Vec::new();
            for chunk in chunks {
                all.extend_from_slice(&chunk.map_err(std::io::Error::other)?);
            }
            Ok::<_, std::io::Error>(Bytes::from(patch_text(&all, patch)))
        }))
    } else {
        let lines = futures_util::stream::unfold(
            (stream, Vec::<u8>::new(), false),
            move |(mut stream, mut carry, done)| async move {
                if done {
                    return None;
                }
                match stream.next().await {
                    Some(Ok(chunk)) => {
                        carry.extend_from_slice(&chunk);
                        let cut = carry.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                        let rest = carry.split_off(cut);
                        let out = patch_lines(&carry, patch);
                        Some((
                            Ok::<_, std::io::Error>(Bytes::from(out)),
                            (stream, rest, false),
                        ))
                    }
                    Some(Err(e)) => Some((Err(std::io::Error::other(e)), (stream, carry, true))),
                    None if carry.is_empty() => None,
                    None => {
                        let out = patch_lines(&carry, patch);
                        Some((Ok(Bytes::from(out)), (stream, Vec::new(), true)))
                    }
                }
            },
        );
        Body::from_stream(lines)
    };
    Response::from_parts(parts, body)
}

/// A whole JSON-RPC message, patched (left as it is when it is not JSON).
fn patch_text(text: &[u8], patch: Patch) -> Vec<u8> {
    match serde_json::from_slice::<Value>(text) {
        Ok(mut message) => {
            tasks::patch(patch, &mut message);
            message.to_string().into_bytes()
        }
        Err(_) => text.to_vec(),
    }
}

/// Whole SSE lines, each `data:` line's message patched.
fn patch_lines(lines: &[u8], patch: Patch) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() + 64);
    for line in lines.split_inclusive(|b| *b == b'\n') {
        match line.strip_prefix(b"data:") {
            Some(data) => {
                let trimmed = data.trim_ascii();
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(&patch_text(trimmed, patch));
                out.push(b'\n');
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}
