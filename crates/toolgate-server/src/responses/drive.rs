//! One response, driven: the run started or resumed with its events in a channel, each
//! event translated as it comes, `mcp_call`s finished from their committed records,
//! the response stored when the run begins and again when it pauses or ends. The same
//! path serves streamed and whole responses; only what the caller does with the
//! stream events differs.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::ending::{Ending, ending};
use super::translate::{StreamEvent, Translator};
use super::wire::{
    OutputContent, OutputItem, ResponseError, ResponseObject, ResponseStatus, ResponseUsage,
};
use crate::{AppState, Drive, Driving, joined};
use toolgate_protocol::{RequiredItem, RunEvent, RunObject, Usage, events};
use toolgate_runtime::run::{Runner, StartRun};

/// What a request asks of a run, once its input is checked and its answers recorded.
pub enum Plan {
    /// A new run: a first message, or one that continues a conversation.
    Start(Box<StartRun>),
    /// Every item the run waited for is resolved: continue it.
    Resume {
        run_id: String,
        /// The run's usage before, so that the response counts only its own tokens.
        before: Usage,
    },
    /// Answers were recorded, but the run still waits for these.
    Waiting {
        run: Box<RunObject>,
        waiting: Vec<RequiredItem>,
    },
}

/// What the driving task reports, in order: stream events, then the final response;
/// or, before anything was driven, why the request was refused.
pub enum Report {
    Events(Vec<StreamEvent>),
    Done(Box<ResponseObject>),
    Refused(crate::ApiError),
}

/// The response being built and where it goes.
pub struct Job {
    pub response: ResponseObject,
    pub previous: Option<String>,
    /// Calls the client answers (true: approval items).
    pub answered: HashMap<String, bool>,
    /// The `text.format` the final answer is checked against.
    pub format: Option<super::structured::OutputFormat>,
    /// The request's input items (ids added), kept for `input_items`.
    pub input: serde_json::Value,
    /// The client's tools, output format and images, for the run.
    pub additions: toolgate_runtime::run::Additions,
}

/// Starts driving `plan` on a task of its own (one the server waits for at shutdown),
/// so that a client that goes away does not stop the run; the reports arrive on the
/// returned channel.
pub fn spawn(state: &Arc<AppState>, plan: Plan, job: Job) -> UnboundedReceiver<Report> {
    let (tx, rx) = mpsc::unbounded_channel();
    let state = Arc::clone(state);
    state.drives.clone().spawn(async move {
        let response = drive(&state, plan, job, &tx).await;
        if let Some(response) = response {
            let _ = tx.send(Report::Done(Box::new(response)));
        }
    });
    rx
}

/// Drives the plan; `None` when the run could not be started or resumed (the refusal
/// was reported).
async fn drive(
    state: &Arc<AppState>,
    plan: Plan,
    job: Job,
    tx: &UnboundedSender<Report>,
) -> Option<ResponseObject> {
    let runner = &state.runner;
    let mut t = Translator::new(job.response.clone(), job.answered.clone());
    let (driving, before) = match plan {
        Plan::Waiting { run, waiting } => {
            note_run(&mut t, &run.id, &run.conversation_id);
            let report = begin(runner, &mut t, &run.id, job.previous.as_deref(), &job.input).await;
            let _ = tx.send(Report::Events(report));
            let end = Ending {
                status: ResponseStatus::Completed,
                error: None,
                incomplete: None,
                usage: ResponseUsage::default(),
                waiting,
                files: Vec::new(),
                at: now_s(),
            };
            let out = t.finish(end);
            let _ = tx.send(Report::Events(out));
            store_final(runner, t.response()).await;
            return Some(t.response().clone());
        }
        Plan::Start(start) => (
            state.spawn_drive(Drive::StartWith(start, Box::new(job.additions.clone()))),
            Usage::default(),
        ),
        Plan::Resume { run_id, before } => (
            state.spawn_drive(Drive::ResumeWith(run_id, Box::new(job.additions.clone()))),
            before,
        ),
    };
    let Driving { events, done } = driving;
    let started = pump(runner, &mut t, events, (&job.previous, &job.input), tx).await;
    let result = joined(done.await);
    let Some(run_id) = started else {
        // Nothing began: the request is refused as a whole.
        let err = result
            .err()
            .unwrap_or_else(|| crate::ApiError::internal("the run ended without starting"));
        let _ = tx.send(Report::Refused(err));
        return None;
    };
    // Records of calls that finished last (committed by the final save).
    let out = fetch_records(runner, &mut t, &run_id).await;
    let _ = tx.send(Report::Events(out));
    let (run, error) = match result {
        Ok(run) => (Some(run), None),
        Err(e) => (runner.get(&run_id).await.ok(), Some(e.message)),
    };
    let mut end = ending(run.as_ref(), error.as_deref(), before, now_s());
    if let Some(format) = &job.format
        && end.status == ResponseStatus::Completed
        && end.waiting.is_empty()
        && let Err(why) = format.check(&final_text(t.response()))
    {
        end.status = ResponseStatus::Failed;
        end.error = Some(ResponseError {
            code: "server_error".into(),
            message: why.to_string(),
        });
    }
    let out = t.finish(end);
    let _ = tx.send(Report::Events(out));
    store_final(runner, t.response()).await;
    Some(t.response().clone())
}

/// The text of the response's last message: the final answer.
fn final_text(response: &ResponseObject) -> String {
    response
        .output
        .iter()
        .rev()
        .find_map(|item| match item {
            OutputItem::Message { content, .. } => Some(
                content
                    .iter()
                    .map(|c| match c {
                        OutputContent::OutputText { text, .. } => text.as_str(),
                    })
                    .collect::<String>(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

/// Feeds the run's events to the translator until the drive ends; returns the run id
/// once the run began (`None`: it never did).
async fn pump(
    runner: &Runner,
    t: &mut Translator,
    mut events: UnboundedReceiver<RunEvent>,
    (previous, input): (&Option<String>, &serde_json::Value),
    tx: &UnboundedSender<Report>,
) -> Option<String> {
    let mut run_id: Option<String> = None;
    // A finished `mcp_call` waits for its record, committed with the step a moment
    // after the batch's last call ends: the store's change feed says when a step of the
    // run is saved.
    let mut changes = runner.store.watch();
    let mut feed_open = true;
    loop {
        let next = if t.awaiting().is_empty() || run_id.is_none() || !feed_open {
            events.recv().await
        } else {
            tokio::select! {
                e = events.recv() => e,
                saved = changes.recv() => {
                    use tokio::sync::broadcast::error::RecvError;
                    let ours = match &saved {
                        Ok(c) => Some(&c.run_id) == run_id.as_ref(),
                        Err(RecvError::Lagged(_)) => true,
                        Err(RecvError::Closed) => {
                            feed_open = false;
                            false
                        }
                    };
                    if ours && let Some(id) = &run_id {
                        let out = fetch_records(runner, t, id).await;
                        if !out.is_empty() {
                            let _ = tx.send(Report::Events(out));
                        }
                    }
                    continue;
                }
            }
        };
        let Some(event) = next else {
            return run_id;
        };
        let mut out = Vec::new();
        if let RunEvent::RunStarted(events::RunStarted {
            run_id: id,
            conversation_id,
            ..
        }) = &event
            && run_id.is_none()
        {
            note_run(t, id, conversation_id);
            out.extend(begin(runner, t, id, previous.as_deref(), input).await);
            run_id = Some(id.clone());
        }
        if let Some(id) = &run_id
            && !matches!(
                event,
                RunEvent::ToolStarted(_) | RunEvent::ToolOutput(_) | RunEvent::ToolFinished(_)
            )
            && !t.awaiting().is_empty()
        {
            // Anything after a batch comes after the save that committed its records.
            out.extend(fetch_records(runner, t, id).await);
        }
        out.extend(t.event(&event));
        if !out.is_empty() {
            let _ = tx.send(Report::Events(out));
        }
    }
}

fn note_run(t: &mut Translator, run_id: &str, conversation_id: &str) {
    let metadata = &mut t.response_mut().metadata;
    metadata.insert("toolgate_run_id".into(), run_id.into());
    metadata.insert("toolgate_conversation_id".into(), conversation_id.into());
}

/// Stores the response as begun (mapped to its run and the run's next step) and
/// returns its first stream events.
async fn begin(
    runner: &Runner,
    t: &mut Translator,
    run_id: &str,
    previous: Option<&str>,
    input: &serde_json::Value,
) -> Vec<StreamEvent> {
    let body = serde_json::to_string(t.response()).unwrap_or_default();
    if let Err(e) = runner
        .store
        .create_response(
            &t.response().id,
            run_id,
            previous,
            "in_progress",
            body,
            input.to_string(),
        )
        .await
    {
        tracing::warn!(response_id = %t.response().id, run_id, "the response could not be stored: {e}");
    }
    t.start()
}

/// Finishes the `mcp_call`s whose records are committed.
async fn fetch_records(runner: &Runner, t: &mut Translator, run_id: &str) -> Vec<StreamEvent> {
    let ids = t.awaiting().to_vec();
    if ids.is_empty() {
        return Vec::new();
    }
    let run = run_id.to_string();
    let records = runner.store.run_call_records(&run, &ids).await;
    match records {
        Ok(records) => records.iter().flat_map(|r| t.record(r)).collect(),
        Err(e) => {
            tracing::warn!(run_id, "call records could not be read: {e}");
            Vec::new()
        }
    }
}

async fn store_final(runner: &Runner, response: &ResponseObject) {
    let body = serde_json::to_string(response).unwrap_or_default();
    if let Err(e) = runner
        .store
        .update_response(&response.id, response.status.as_str(), body)
        .await
    {
        tracing::warn!(response_id = %response.id, "the response could not be stored: {e}");
    }
}

pub fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
