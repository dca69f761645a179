//! Runs listed with what they wait for: each paused run's pending items, read together
//! with its row, so a run object in a list is the one `show` gives for that run.

use super::runs::{find_run, pending_with_below};
use super::{PendingRow, RunRow, RunsError, SqliteStore};
use crate::Scope;
use toolgate_protocol::RunStatus;

impl SqliteStore {
    /// [`SqliteStore::runs`], each paused run with its pending items.
    pub fn runs_with_pending(
        &self,
        scope: Scope<'_>,
        status: Option<RunStatus>,
        conversation: Option<&str>,
        agent: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(RunRow, Vec<PendingRow>)>, RunsError> {
        let rows = self.runs_of(scope, status, conversation, agent, limit)?;
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

impl SqliteStore {
    /// Runs in progress (not paused, not ended) started by `user` in `tenant`, and in
    /// `tenant` in all: what `runs_at_once` limits.
    pub fn runs_in_progress(&self, tenant: &str, user: &str) -> Result<(u64, u64), RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .prepare_cached("SELECT count(*) FILTER (WHERE started_by = ?2), count(*) FROM runs WHERE tenant = ?1 AND status = 'in_progress' AND depth = 0")?
                .query_row([tenant, user], |r| {
                    Ok((r.get::<_, i64>(0)?.max(0) as u64, r.get::<_, i64>(1)?.max(0) as u64))
                })?)
        })
    }
}
