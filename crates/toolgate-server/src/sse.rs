//! Server-sent events: a run's events by their names (`run.started`, `text.delta`, ...,
//! the same as `run --json`), the run object last as `event: run`, or `event: error`.
//! Each stream's queue is bounded by bytes: a reader that falls that far behind gets
//! `event: lagged` and its stream ends, so a reader that never reads holds at most
//! [`QUEUE_BYTES`] of this server's memory.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use tokio::sync::mpsc;

use super::error::ApiError;
use super::{AppState, Driving, joined};
use toolgate_protocol::{RunEvent, RunObject};

/// An SSE response.
pub type EventStream = axum::response::Response;

/// The bytes of events one stream may have waiting for its reader.
pub const QUEUE_BYTES: usize = 1 << 20;

/// One event and about as many bytes as it takes on the wire.
pub struct Frame {
    event: Event,
    bytes: usize,
}

impl Frame {
    /// `event: NAME` with `data` (JSON text, one line).
    pub fn new(name: &str, data: String) -> Frame {
        let bytes = name.len() + data.len() + 16;
        Frame {
            event: Event::default().event(name).data(data),
            bytes,
        }
    }

    /// A comment line (`: text`).
    pub fn comment(text: &str) -> Frame {
        Frame {
            event: Event::default().comment(text),
            bytes: text.len() + 4,
        }
    }
}

/// One run event.
pub fn run_event(e: &RunEvent) -> Frame {
    Frame::new(e.name(), serde_json::to_string(e).unwrap_or_default())
}

/// The run object.
pub fn run_object(run: &RunObject) -> Frame {
    Frame::new("run", serde_json::to_string(run).unwrap_or_default())
}

/// A failure, in the API's error shape.
pub fn error(e: &ApiError) -> Frame {
    Frame::new(
        "error",
        serde_json::to_string(&e.body()).unwrap_or_default(),
    )
}

/// `event: lagged`: `missed` events were not sent to this reader.
pub fn lagged(missed: u64) -> Frame {
    Frame::new(
        "lagged",
        serde_json::json!({ "missed": missed }).to_string(),
    )
}

/// The reader is gone, or was dropped for falling behind: stop writing to it.
#[derive(Debug)]
pub struct Gone;

/// The writing side of one stream.
pub struct Outbox {
    tx: mpsc::UnboundedSender<Frame>,
    queued: Arc<AtomicUsize>,
    dropped: AtomicBool,
}

impl Outbox {
    /// Queues `frame`; when the reader has [`QUEUE_BYTES`] waiting already, queues
    /// `event: lagged` instead and ends the stream.
    pub async fn send(&self, frame: Frame) -> Result<(), Gone> {
        if self.dropped.load(Ordering::Relaxed) {
            return Err(Gone);
        }
        let size = frame.bytes;
        if self.queued.load(Ordering::Relaxed) + size > QUEUE_BYTES {
            self.dropped.store(true, Ordering::Relaxed);
            tracing::warn!(
                queued_bytes = self.queued.load(Ordering::Relaxed),
                "an event stream's reader fell {QUEUE_BYTES} bytes behind: sent `lagged` and ended its stream"
            );
            let _ = self.tx.send(lagged(1));
            return Err(Gone);
        }
        self.queued.fetch_add(size, Ordering::Relaxed);
        self.tx.send(frame).map_err(|_| Gone)
    }
}

/// A stream and its outbox.
fn channel() -> (
    Outbox,
    impl futures_util::Stream<Item = Result<Event, Infallible>>,
) {
    let (tx, rx) = mpsc::unbounded_channel::<Frame>();
    let queued = Arc::new(AtomicUsize::new(0));
    let outbox = Outbox {
        tx,
        queued: Arc::clone(&queued),
        dropped: AtomicBool::new(false),
    };
    let stream = futures_util::stream::unfold(rx, move |mut rx| {
        let queued = Arc::clone(&queued);
        async move {
            let frame = rx.recv().await?;
            queued.fetch_sub(frame.bytes, Ordering::Relaxed);
            Some((Ok::<_, Infallible>(frame.event), rx))
        }
    });
    (outbox, stream)
}

/// A stream fed by a task: the task writes events, the stream ends when it returns,
/// when its reader falls too far behind, or when the server shuts down.
pub fn from_task<F, Fut>(state: &Arc<AppState>, task: F) -> EventStream
where
    F: FnOnce(Outbox) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (outbox, stream) = channel();
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = task(outbox) => {}
            _ = shutdown.cancelled() => {}
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// A drive as SSE: its events as they happen, then the run object (or the error).
pub fn drive(state: &Arc<AppState>, driving: Driving) -> EventStream {
    from_task(state, move |tx| async move {
        let Driving { mut events, done } = driving;
        let mut reading = true;
        while let Some(e) = events.recv().await {
            // A client gone away (or dropped) stops the stream, not the run.
            if reading {
                reading = tx.send(run_event(&e)).await.is_ok();
            }
        }
        let last = match joined(done.await) {
            Ok(run) => run_object(&run),
            Err(e) => error(&e),
        };
        let _ = tx.send(last).await;
    })
}
