//! Runs nobody drives: in progress, with no lease or one that ran out (their driver
//! gave them back at a shutdown, or died), and paused runs whose every item was decided
//! by someone who claimed the run to continue it and died before it did. A server takes
//! them up.

use rusqlite::params;

use super::{RunsError, SqliteStore};
use toolgate_protocol::clock::now_ms;

impl SqliteStore {
    /// Up to `limit` top-level runs in progress whose lease is free, or paused with a
    /// decider's claim that ran out and nothing waiting, oldest change first. A
    /// sub-agent's run is left to the run above it, which continues it.
    pub fn unheld_runs(&self, limit: usize) -> Result<Vec<String>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM runs r WHERE depth = 0 AND (
                     (status = 'in_progress' AND (lease_until IS NULL OR lease_until < ?1))
                     OR (status = 'requires_action' AND lease_owner IS NOT NULL AND lease_until < ?1
                         AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.run_id = r.id AND p.state = 'waiting')))
                 ORDER BY updated_at LIMIT ?2",
            )?;
            let ids = stmt
                .query_map(params![now_ms(), limit as i64], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(ids)
        })
    }
}
