//! What waits for a person now: the approval items of paused runs, counted with the
//! time the oldest was requested (the metrics read it at each scrape).

use super::{SqliteStore, StoreError};

/// Approval items waiting now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Waiting {
    pub approvals: u64,
    /// When the oldest was requested (Unix milliseconds); `None` when none waits.
    pub oldest_ms: Option<i64>,
}

impl SqliteStore {
    /// The approval items of paused runs that wait for a decision.
    pub fn waiting_approvals(&self) -> Result<Waiting, StoreError> {
        self.read(|conn| {
            conn.prepare_cached(
                "SELECT count(*), min(COALESCE(p.requested_at, r.updated_at)) FROM pending p JOIN runs r ON r.id = p.run_id
                 WHERE p.state = 'waiting' AND p.kind = 'approval' AND r.status = 'requires_action'",
            )?
            .query_row([], |r| {
                Ok(Waiting {
                    approvals: r.get::<_, i64>(0)?.max(0) as u64,
                    oldest_ms: r.get(1)?,
                })
            })
        })
    }
}
