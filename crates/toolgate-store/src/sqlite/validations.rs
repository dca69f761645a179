//! The last credential check of each tool on SQLite, per tenant.

use rusqlite::params;

use super::SqliteStore;
use super::runs::RunsError;
use crate::{SecretScope, ToolValidation};

impl SqliteStore {
    /// Keeps `check` as its tool's last in `scope` (replacing the one before).
    pub async fn record_validation(
        &self,
        scope: SecretScope<'_>,
        check: ToolValidation,
    ) -> Result<(), RunsError> {
        let tenant = scope.tenant().to_string();
        self.transact(move |tx| {
            tx.execute(
                "INSERT INTO tool_validations (tenant, tool, valid, reason, checked_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (tenant, tool) DO UPDATE SET valid = excluded.valid, reason = excluded.reason, checked_at = excluded.checked_at",
                params![tenant, check.tool, check.valid, check.reason, check.checked_at],
            )?;
            Ok(())
        })
        .await
    }

    /// Every tool's last check in `scope`, by tool name.
    pub fn validations(&self, scope: SecretScope<'_>) -> Result<Vec<ToolValidation>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT tool, valid, reason, checked_at FROM tool_validations WHERE tenant = ?1 ORDER BY tool",
            )?;
            let rows = stmt
                .query_map([scope.tenant()], |r| {
                    Ok(ToolValidation {
                        tool: r.get(0)?,
                        valid: r.get(1)?,
                        reason: r.get(2)?,
                        checked_at: r.get(3)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }
}
