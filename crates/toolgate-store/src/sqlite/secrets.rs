//! Named secrets (credentials tool files ask for): stored sealed, listed by name only.
//! Sealing and opening are the caller's (`secrets::Keyring`): this file never sees a
//! value in clear.

use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::runs::RunsError;
use crate::SecretScope;
use toolgate_protocol::clock::now_ms;

/// A stored secret's name and times (never its value).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SecretInfo {
    pub name: String,
    /// Unix milliseconds.
    pub created_at: i64,
    pub updated_at: i64,
}

impl SqliteStore {
    /// Sets (or replaces) secret `name` of `scope` to `sealed`.
    pub async fn set_secret(
        &self,
        scope: SecretScope<'_>,
        name: &str,
        sealed: String,
    ) -> Result<(), RunsError> {
        let (tenant, name) = (scope.tenant().to_string(), name.to_string());
        self.transact(move |tx| {
            let now = now_ms();
            tx.execute(
                "INSERT INTO secrets (tenant, name, sealed, created_at, updated_at) VALUES (?4, ?1, ?2, ?3, ?3)
                 ON CONFLICT (tenant, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at",
                params![name, sealed, now, tenant],
            )?;
            Ok(())
        })
        .await
    }

    /// Removes secret `name` of `scope`; whether it was there.
    pub async fn remove_secret(
        &self,
        scope: SecretScope<'_>,
        name: &str,
    ) -> Result<bool, RunsError> {
        let (tenant, name) = (scope.tenant().to_string(), name.to_string());
        self.transact(move |tx| {
            Ok(tx.execute(
                "DELETE FROM secrets WHERE tenant = ?1 AND name = ?2",
                [tenant, name],
            )? > 0)
        })
        .await
    }

    /// The sealed value of secret `name` of `scope`: a tenant's own, else the shared
    /// one.
    pub fn secret(&self, scope: SecretScope<'_>, name: &str) -> Result<Option<String>, RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .prepare_cached("SELECT sealed FROM secrets WHERE name = ?1 AND tenant IN (?2, '') ORDER BY tenant = '' LIMIT 1")?
                .query_row(params![name, scope.tenant()], |r| r.get(0))
                .optional()?)
        })
    }

    /// Every secret's name in `scope`, in order.
    pub fn secrets(&self, scope: SecretScope<'_>) -> Result<Vec<SecretInfo>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT name, created_at, updated_at FROM secrets WHERE tenant = ?1 ORDER BY name",
            )?;
            let rows = stmt
                .query_map([scope.tenant()], |r| {
                    Ok(SecretInfo {
                        name: r.get(0)?,
                        created_at: r.get(1)?,
                        updated_at: r.get(2)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }
}
