//! `GET /v1/events`: every run, live, on one stream: each run's events by their names
//! (a run driven by another process: its end, as the run event), and `event: run` with
//! the run object each time a drive stops (paused, ended or failed, as saved; here or
//! in another process) or an item is added or decided elsewhere. What the inbox
//! follows to update without a reload.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use tokio::sync::broadcast::error::RecvError;

use super::AppState;
use super::error::ErrorBody;
use super::sse;

/// All runs' events, live: `event: run` (a run object, each time a drive pauses or
/// ends), the runs' own events (`run.started`, `tool.finished`, ...), and `event: lagged`
/// when this client fell behind and missed some (read the runs again).
#[utoipa::path(get, path = "/v1/events", tag = "runs",
    responses((status = 200, description = "SSE: every run's events as they happen; `event: run` with the run object each time a drive pauses or ends; `event: lagged` when events were missed", content_type = "text/event-stream", body = String),
        (status = 401, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn all_events(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
) -> Response {
    let mut events = state.hub.subscribe_all();
    let mut settled = state.hub.subscribe_settled();
    let mut changed = state.hub.subscribe_changed();
    let reader = Arc::clone(&state);
    sse::from_task(&state, move |tx| async move {
        // Each run's tenant, read once: a caller sees only its tenant's runs.
        let mut tenants: HashMap<String, bool> = HashMap::new();
        // A comment first, so that the client knows the stream is open.
        if tx.send(sse::Frame::comment("open")).await.is_err() {
            return;
        }
        loop {
            let event = tokio::select! {
                e = events.recv() => match e {
                    Ok(e) => {
                        if who.scope().is_some() {
                            let id = e.run_id().to_string();
                            let seen = match tenants.get(&id) {
                                Some(seen) => *seen,
                                None => match reader.runner.get(&id).await {
                                    Ok(run) => {
                                        let seen = who.sees(&run.tenant);
                                        tenants.insert(id, seen);
                                        seen
                                    }
                                    // Not readable (yet): not shown, asked again next time.
                                    Err(_) => false,
                                },
                            };
                            if !seen {
                                continue;
                            }
                        }
                        sse::run_event(&e)
                    }
                    Err(RecvError::Lagged(n)) => sse::lagged(n),
                    Err(RecvError::Closed) => return,
                },
                r = settled.recv() => match r {
                    Ok(run) if who.sees(&run.tenant) => sse::run_object(&run),
                    Ok(_) => continue,
                    Err(RecvError::Lagged(n)) => sse::lagged(n),
                    Err(RecvError::Closed) => return,
                },
                r = changed.recv() => match r {
                    Ok(run) if who.sees(&run.tenant) => sse::run_object(&run),
                    Ok(_) => continue,
                    Err(RecvError::Lagged(n)) => sse::lagged(n),
                    Err(RecvError::Closed) => return,
                },
            };
            if tx.send(event).await.is_err() {
                return;
            }
        }
    })
}
