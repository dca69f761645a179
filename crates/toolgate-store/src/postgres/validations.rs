//! The last credential check of each tool on PostgreSQL, per tenant.

use super::{PgStore, StoreError};
use crate::{SecretScope, ToolValidation};

impl PgStore {
    /// Keeps `check` as its tool's last in `scope` (replacing the one before).
    pub async fn record_validation(
        &self,
        scope: SecretScope<'_>,
        check: ToolValidation,
    ) -> Result<(), StoreError> {
        self.open_for_writes()?;
        let tenant = scope.tenant().to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            client
                .execute(
                    "INSERT INTO tool_validations (tenant, tool, valid, reason, checked_at) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (tenant, tool) DO UPDATE SET valid = excluded.valid, reason = excluded.reason, checked_at = excluded.checked_at",
                    &[&tenant, &check.tool, &check.valid, &check.reason, &check.checked_at],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(())
        })
        .await
    }

    /// Every tool's last check in `scope`, by tool name.
    pub async fn validations(
        &self,
        scope: SecretScope<'_>,
    ) -> Result<Vec<ToolValidation>, StoreError> {
        let tenant = scope.tenant().to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let rows = client
                .query(
                    "SELECT tool, valid, reason, checked_at FROM tool_validations WHERE tenant = $1 ORDER BY tool COLLATE \"C\"",
                    &[&tenant],
                )
                .await
                .map_err(|e| s.error(e))?;
            rows.iter()
                .map(|r| {
                    Ok(ToolValidation {
                        tool: r.try_get(0)?,
                        valid: r.try_get(1)?,
                        reason: r.try_get(2)?,
                        checked_at: r.try_get(3)?,
                    })
                })
                .collect::<Result<_, tokio_postgres::Error>>()
                .map_err(|e| s.error(e))
        })
        .await
    }
}
