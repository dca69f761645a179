//! Runs nobody drives, on PostgreSQL: in progress, with no lease or one that ran out by
//! the database's clock (their driver gave them back at a shutdown, or died), and
//! paused runs whose every item was decided by someone who claimed the run to continue
//! it and whose claim ran out (the decider died first). Workers
//! looking at once skip the rows another is reading (`FOR UPDATE SKIP LOCKED`); the
//! lease each then takes decides who drives a run.

use super::prepared::Prepared;
use super::run_rows::{NOW_MS, OrStore, rows_to};
use super::{PgStore, StoreError};

impl PgStore {
    /// Up to `limit` top-level runs in progress whose lease is free, or paused with a
    /// decider's claim that ran out and nothing waiting, oldest change first. A
    /// sub-agent's run is left to the run above it, which continues it.
    pub async fn unheld_runs(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.on_pool(move |s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.or_store(&s)?;
            let rows = tx
                .rows(
                    &format!(
                        "SELECT id FROM runs r WHERE depth = 0 AND (
                             (status = 'in_progress' AND (lease_until IS NULL OR lease_until < {NOW_MS}))
                             OR (status = 'requires_action' AND lease_owner IS NOT NULL
                                 AND lease_until < {NOW_MS}
                                 AND NOT EXISTS (SELECT 1 FROM pending p
                                                 WHERE p.run_id = r.id AND p.state = 'waiting')))
                         ORDER BY updated_at LIMIT $1 FOR UPDATE SKIP LOCKED"
                    ),
                    &[&limit],
                )
                .await
                .or_store(&s)?;
            let ids = rows_to(rows, &s, |r| r.try_get(0))?;
            tx.commit().await.or_store(&s)?;
            Ok(ids)
        })
        .await
    }
}
