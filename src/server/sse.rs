//! Server-sent events: a run's events by their names (`run.started`, `text.delta`, ...,
//! the same as `run --json`), the run object last as `event: run`, or `event: error`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use tokio::sync::mpsc;

use super::error::ApiError;
use super::{AppState, Driving, joined};
use crate::protocol::{RunEvent, RunObject};

/// An SSE response.
pub type EventStream = axum::response::Response;

/// One run event.
pub fn run_event(e: &RunEvent) -> Event {
    Event::default()
        .event(e.name())
        .data(serde_json::to_string(e).unwrap_or_default())
}

/// The run object.
pub fn run_object(run: &RunObject) -> Event {
    Event::default()
        .event("run")
        .data(serde_json::to_string(run).unwrap_or_default())
}

/// A failure, in the API's error shape.
pub fn error(e: &ApiError) -> Event {
    Event::default()
        .event("error")
        .data(serde_json::to_string(&e.body()).unwrap_or_default())
}

/// A stream fed by a task: the task writes events, the stream ends when it returns or
/// the server shuts down.
pub fn from_task<F, Fut>(state: &Arc<AppState>, task: F) -> EventStream
where
    F: FnOnce(mpsc::Sender<Event>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Event>(256);
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = task(tx) => {}
            _ = shutdown.cancelled() => {}
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// A drive as SSE: its events as they happen, then the run object (or the error).
pub fn drive(state: &Arc<AppState>, driving: Driving) -> EventStream {
    from_task(state, move |tx| async move {
        let Driving { mut events, done } = driving;
        while let Some(e) = events.recv().await {
            // A client gone away stops the stream, not the run.
            let _ = tx.send(run_event(&e)).await;
        }
        let last = match joined(done.await) {
            Ok(run) => run_object(&run),
            Err(e) => error(&e),
        };
        let _ = tx.send(last).await;
    })
}
