//! The stdio gateway's plumbing: stdin is read a line (one JSON-RPC message) at a time;
//! the task methods are answered here (`tasks/`), each on a task of its own since
//! `tasks/result` waits, and everything else goes to rmcp through an in-memory pipe.
//! rmcp's answers come back through it, `initialize` and `tools/list` get task support
//! added, and one writer puts every outgoing message on stdout, a line each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::task::AbortOnDropHandle;

use super::tasks::{self, Inbound, Patch, Tasks};

/// The answers of rmcp that get task support added, by request id.
type Patches = Arc<Mutex<HashMap<String, Patch>>>;

/// The pumps between stdin/stdout and rmcp; they stop when this drops.
pub(super) struct Plumbing {
    _pumps: Vec<AbortOnDropHandle<()>>,
}

/// Connects `input` (stdin) and `output` (stdout) to rmcp, answering task methods with
/// `tasks`; returns rmcp's side of the pipe.
pub(super) fn plumb<R, W>(
    input: R,
    output: W,
    tasks: Arc<Tasks>,
) -> (
    Plumbing,
    (
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ),
)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_side, ours) = tokio::io::duplex(1 << 16);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    let (out, lines) = unbounded_channel::<String>();
    let patches = Patches::default();
    let pumps = vec![
        AbortOnDropHandle::new(tokio::spawn(write_out(lines, output))),
        AbortOnDropHandle::new(tokio::spawn(inbound(
            input,
            to_rmcp,
            out.clone(),
            Arc::clone(&patches),
            tasks,
        ))),
        AbortOnDropHandle::new(tokio::spawn(outbound(from_rmcp, out, patches))),
    ];
    (Plumbing { _pumps: pumps }, tokio::io::split(rmcp_side))
}

/// Writes each message, a line each, in the order they were sent.
async fn write_out<W: AsyncWrite + Unpin>(mut lines: UnboundedReceiver<String>, mut output: W) {
    while let Some(line) = lines.recv().await {
        let written = async {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
            output.flush().await
        };
        if let Err(e) = written.await {
            tracing::debug!(error = %e, "stdout closed");
            return;
        }
    }
}

/// Reads the client's messages: task requests answered here, the rest passed to rmcp.
/// The end of stdin is the end of rmcp's input.
async fn inbound<R, W>(
    input: R,
    mut to_rmcp: W,
    out: UnboundedSender<String>,
    patches: Patches,
    tasks: Arc<Tasks>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(input).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Option<Value> = serde_json::from_str(&line).ok();
        match message.as_ref().map(tasks::classify) {
            Some(Inbound::Task { id, method, params }) => {
                let (tasks, out) = (Arc::clone(&tasks), out.clone());
                tokio::spawn(async move {
                    let notes_out = out.clone();
                    let notes: tasks::Notes = Arc::new(move |note: Value| {
                        let _ = notes_out.send(note.to_string());
                    });
                    let answer = tasks.answer(&method, params, &notes).await;
                    let _ = out.send(tasks::answer_message(&id, answer).to_string());
                });
                continue;
            }
            Some(Inbound::Rmcp { id, patch: Some(p) }) => {
                if let Ok(mut patches) = patches.lock() {
                    patches.insert(id.to_string(), p);
                }
            }
            _ => {}
        }
        let passed = async {
            to_rmcp.write_all(line.as_bytes()).await?;
            to_rmcp.write_all(b"\n").await?;
            to_rmcp.flush().await
        };
        if passed.await.is_err() {
            return;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Passes rmcp's messages out, adding task support to the answers that need it.
async fn outbound<R: AsyncRead + Unpin>(
    from_rmcp: R,
    out: UnboundedSender<String>,
    patches: Patches,
) {
    let mut lines = BufReader::new(from_rmcp).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let patch = serde_json::from_str::<Value>(&line).ok().and_then(|m| {
            let is_answer = m.get("method").is_none();
            let id = m.get("id")?.to_string();
            let p = patches.lock().ok()?.remove(&id).filter(|_| is_answer)?;
            Some((p, m))
        });
        let line = match patch {
            Some((p, mut message)) => {
                tasks::patch(p, &mut message);
                message.to_string()
            }
            None => line,
        };
        if out.send(line).is_err() {
            return;
        }
    }
}
