//! Runs listed with what they wait for: each paused run's pending items, read together
//! with its row, so a run object in a list is the one `show` gives for that run.

use super::runs::{find_run, pending_with_below};
use super::{PendingRow, RunRow, RunsError, Store};
use crate::protocol::RunStatus;

impl Store {
    /// Runs, newest first (as [`Store::runs`]), each with its pending items. A paused
    /// run's row is read again with its items in one snapshot (one for the whole
    /// list), so a run listed as `requires_action` always comes with the items it
    /// waits for, even when another process moves it on meanwhile.
    pub fn runs_with_pending(
        &self,
        status: Option<RunStatus>,
        conversation: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(RunRow, Vec<PendingRow>)>, RunsError> {
        let rows = self.runs(status, conversation, limit)?;
        if rows.iter().all(|r| r.status != RunStatus::RequiresAction) {
            return Ok(rows.into_iter().map(|r| (r, Vec::new())).collect());
        }
        self.read_runs(|conn| {
            let snapshot = conn.unchecked_transaction()?;
            let mut listed = Vec::with_capacity(rows.len());
            for row in rows {
                if row.status != RunStatus::RequiresAction {
                    listed.push((row, Vec::new()));
                    continue;
                }
                let row = find_run(&snapshot, &row.id)?;
                let pending = pending_with_below(&snapshot, &row)?;
                listed.push((row, pending));
            }
            snapshot.finish()?;
            Ok(listed)
        })
    }
}
