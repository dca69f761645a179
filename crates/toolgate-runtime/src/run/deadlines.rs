//! Deadlines applied: an approval nobody decided in time is denied (the model is told
//! it expired) or cancels its run, as its `on_timeout` says. Every door goes through
//! here (serve's watcher, `resume`, a decision that continues a run), so an expired
//! approval never runs, with a server or without one.

use super::{RunError, Runner};
use toolgate_protocol::{OnTimeout, RequiredItem, RunStatus, events};

/// What applying the deadlines did.
#[derive(Debug, Default)]
pub struct Expiry {
    /// The items that expired, each with the run holding it.
    pub expired: Vec<(String, RequiredItem)>,
    /// Top runs cancelled by an `on_timeout: cancel_run`.
    pub cancelled: Vec<String>,
    /// Top runs whose items are now all resolved: ready to continue.
    pub ready: Vec<String>,
}

impl Runner {
    /// Applies every deadline that has passed: of `tree` (a top run) and the runs below
    /// it, or of every paused run when `None`. Emits `approval.expired` per item.
    pub async fn expire(&self, tree: Option<&str>) -> Result<Expiry, RunError> {
        let due = self.store.expire_due(tree.map(str::to_string)).await?;
        let mut expiry = Expiry::default();
        let mut tops: Vec<String> = Vec::new();
        let mut cancel: Vec<String> = Vec::new();
        for d in due {
            let item = d.pending.item;
            let on_timeout = item.on_timeout.unwrap_or_default();
            tracing::info!(run_id = %d.run_id, call_id = %item.call_id, tool = %item.tool, on_timeout = on_timeout.as_str(), "an approval expired");
            self.emit(events::ApprovalExpired {
                run_id: d.run_id.clone(),
                item: item.clone(),
            });
            if on_timeout == OnTimeout::CancelRun && !cancel.contains(&d.top_run_id) {
                cancel.push(d.top_run_id.clone());
            }
            if !tops.contains(&d.top_run_id) {
                tops.push(d.top_run_id);
            }
            expiry.expired.push((d.run_id, item));
        }
        for top in cancel {
            match self.cancel(&top).await {
                Ok(_) => expiry.cancelled.push(top),
                // Cancelled or ended meanwhile: nothing is left to run.
                Err(e) => {
                    tracing::warn!(run_id = %top, error = %e, "an expired run could not be cancelled")
                }
            }
        }
        for top in tops {
            if expiry.cancelled.contains(&top) {
                continue;
            }
            let id = top.clone();
            let (row, pending) = self.store.run(&id).await?;
            if row.status == RunStatus::RequiresAction
                && !pending
                    .iter()
                    .any(|p| p.state == toolgate_store::PendingState::Waiting)
            {
                expiry.ready.push(top);
            }
        }
        Ok(expiry)
    }
}
