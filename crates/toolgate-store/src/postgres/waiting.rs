//! What waits for a person now on PostgreSQL: the approval items of paused runs,
//! counted with the time the oldest was requested (the metrics read it at each scrape).

use super::{PgStore, StoreError};
use crate::Waiting;

impl PgStore {
    /// The approval items of paused runs that wait for a decision.
    pub async fn waiting_approvals(&self) -> Result<Waiting, StoreError> {
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .query_one(
                    "SELECT count(*), min(COALESCE(p.requested_at, r.updated_at)) FROM pending p JOIN runs r ON r.id = p.run_id
                     WHERE p.state = 'waiting' AND p.kind = 'approval' AND r.status = 'requires_action'",
                    &[],
                )
                .await
                .map_err(|e| s.error(e))?;
            let read = || -> Result<Waiting, tokio_postgres::Error> {
                Ok(Waiting {
                    approvals: row.try_get::<_, i64>(0)?.max(0) as u64,
                    oldest_ms: row.try_get(1)?,
                })
            };
            read().map_err(|e| s.error(e))
        })
        .await
    }
}
