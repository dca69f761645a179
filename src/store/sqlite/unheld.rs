//! Runs nobody drives: in progress, with no lease or one that ran out (their driver
//! gave them back at a shutdown, or died). A server takes them up.

use rusqlite::params;

use super::{RunsError, SqliteStore};
use crate::clock::now_ms;

impl SqliteStore {
    /// Up to `limit` top-level runs in progress whose lease is free, oldest change
    /// first. A sub-agent's run is left to the run above it, which continues it.
    pub fn unheld_runs(&self, limit: usize) -> Result<Vec<String>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM runs WHERE status = 'in_progress' AND depth = 0
                   AND (lease_until IS NULL OR lease_until < ?1)
                 ORDER BY updated_at LIMIT ?2",
            )?;
            let ids = stmt
                .query_map(params![now_ms(), limit as i64], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(ids)
        })
    }
}
