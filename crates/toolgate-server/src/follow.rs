//! Runs changed by other processes, followed through the store's change feed: a run
//! another server, `toolgate approve` or `toolgate resume` drove to a pause or an end
//! settles here as if this server had driven it (the inbox, `GET /v1/events` and the
//! notifications see it), its end is announced as the run event a drive here would
//! have sent, and every other change made elsewhere (a run created, a step saved, an
//! item added or decided) goes to the inbox's feed.

use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;

use super::AppState;
use toolgate_protocol::{RunEvent, RunObject, RunStatus, events};
use toolgate_store::{Change, ChangeKind};

/// Follows the feed until shutdown.
pub fn spawn(state: Arc<AppState>) {
    let mut changes = state.runner.store.watch();
    tokio::spawn(async move {
        loop {
            let change = tokio::select! {
                c = changes.recv() => c,
                _ = state.shutdown.cancelled() => return,
            };
            match change {
                Ok(c) => seen(&state, c).await,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(
                        missed = n,
                        "the change feed fell behind; {n} changes made elsewhere were not followed"
                    );
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
}

/// One change: passed on unless a drive here made it (that drive tells of it itself).
async fn seen(state: &AppState, change: Change) {
    if change.made_here() || state.runner.active.has(&change.run_id) {
        return;
    }
    // Items are added only by the run's driver, in the save that pauses it: that save's
    // status change tells of them (and names the driver; the added row, written after
    // the lease was let go, does not).
    if change.kind == ChangeKind::PendingAdded {
        return;
    }
    let ends = change.kind == ChangeKind::Status && change.status != RunStatus::InProgress;
    // Nobody to tell (no event stream, inbox or notifier open): the read is not made.
    let followed = if ends {
        state.hub.ends_followed()
    } else {
        state.hub.changes_followed()
    };
    if !followed {
        return;
    }
    let run = match state.runner.get(&change.run_id).await {
        Ok(run) => run,
        Err(e) => {
            tracing::debug!(run_id = %change.run_id, error = %e, "a run changed elsewhere cannot be read");
            return;
        }
    };
    if ends && run.status == change.status {
        if let Some(event) = end_event(&run) {
            state.hub.announce(event);
        }
        state.hub.settle(run);
    } else if !ends {
        // Created, a step saved, taken up again, an item added or decided.
        state.hub.changed(run);
    }
}

/// The run event a drive here would have sent at this end.
fn end_event(run: &RunObject) -> Option<RunEvent> {
    let run_id = run.id.clone();
    let reason = || run.last_error.clone().unwrap_or_default();
    Some(match run.status {
        RunStatus::RequiresAction => RunEvent::RunRequiresAction(events::RunRequiresAction {
            run_id,
            items: run
                .required_action
                .as_ref()
                .map(|a| a.items.clone())
                .unwrap_or_default(),
        }),
        RunStatus::Completed => RunEvent::RunCompleted(events::RunCompleted { run_id }),
        RunStatus::Incomplete => RunEvent::RunIncomplete(events::RunIncomplete {
            run_id,
            reason: reason(),
        }),
        RunStatus::Failed => RunEvent::RunFailed(events::RunFailed {
            run_id,
            error: reason(),
        }),
        RunStatus::Cancelled => RunEvent::RunCancelled(events::RunCancelled { run_id }),
        RunStatus::InProgress => return None,
    })
}

/// Waits for run `id` to pause or end (through the change feed), and returns it: what a
/// request to continue a run this server already drives (it took it up) answers.
pub async fn until_settled(state: &AppState, id: &str) -> Result<RunObject, super::ApiError> {
    let mut changes = state.runner.store.watch();
    loop {
        let run = state.runner.get(id).await?;
        if run.status != RunStatus::InProgress {
            return Ok(run);
        }
        if !toolgate_store::next_change_of(&mut changes, id).await {
            return Ok(run);
        }
    }
}
