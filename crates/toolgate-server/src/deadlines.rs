//! Approval deadlines while `serve` runs, and across its restarts: at start and then
//! every [`TICK`], approvals about to expire are announced (`approval.expiring`, once
//! each, at the `--approval-warning` lead) and those past their deadline applied
//! (`approval.expired`: the call denied and its run continued, or the run cancelled),
//! as events on `/v1/events` and as signed notifications.

use std::sync::Arc;
use std::time::Duration;

use super::notify::{Notification, Notifier};
use super::{AppState, Drive};
use toolgate_protocol::{RequiredItem, RunEvent, events};
use toolgate_runtime::run::RunError;

/// How often deadlines are looked at.
pub const TICK: Duration = Duration::from_millis(500);

/// Watches the deadlines until the server shuts down.
pub fn spawn(state: Arc<AppState>, lead: Duration, notifier: Option<Notifier>) {
    tokio::spawn(async move {
        loop {
            if let Err(e) = tick(&state, lead, notifier.as_ref()).await {
                tracing::warn!(error = %e, "approval deadlines could not be checked; trying again");
            }
            tokio::select! {
                _ = tokio::time::sleep(TICK) => {}
                _ = state.shutdown.cancelled() => return,
            }
        }
    });
}

/// One look: warnings, then expiries.
async fn tick(
    state: &Arc<AppState>,
    lead: Duration,
    notifier: Option<&Notifier>,
) -> Result<(), RunError> {
    let lead_ms = i64::try_from(lead.as_millis()).unwrap_or(i64::MAX);
    for due in state.runner.store.warn_due(lead_ms).await? {
        let event = RunEvent::ApprovalExpiring(events::ApprovalExpiring {
            run_id: due.run_id.clone(),
            item: due.pending.item.clone(),
        });
        state.hub.publish(&event);
        notify(
            state,
            notifier,
            "approval.expiring",
            &due.top_run_id,
            due.pending.item,
        )
        .await;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let expiry = state.runner.with_events(tx).expire(None).await?;
    while let Ok(event) = rx.try_recv() {
        state.hub.publish(&event);
    }
    for (run_id, item) in expiry.expired {
        let top = state.runner.store.root_run(&run_id).await?.id;
        notify(state, notifier, "approval.expired", &top, item).await;
    }
    for top in &expiry.cancelled {
        if let Ok(run) = state.runner.get(top).await {
            state.hub.settle(run);
        }
    }
    for top in expiry.ready {
        // The denial is recorded: the run goes on, its events to its watchers.
        drop(state.spawn_drive(Drive::Resume(top)));
    }
    Ok(())
}

async fn notify(
    state: &AppState,
    notifier: Option<&Notifier>,
    event: &'static str,
    top: &str,
    item: RequiredItem,
) {
    let Some(notifier) = notifier else { return };
    match state.runner.get(top).await {
        Ok(run) => notifier.send(Notification::about_item(
            event,
            &run,
            item,
            &notifier.config.public_url,
        )),
        Err(e) => {
            tracing::warn!(run_id = %top, error = %e, "a deadline notification could not be made")
        }
    }
}
