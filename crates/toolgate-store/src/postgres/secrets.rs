//! Named secrets on PostgreSQL: stored sealed per tenant (`""` the shared scope), a
//! tenant's own preferred over the shared one, listed by name only. Sealing and opening
//! are the caller's (`secrets::Keyring`): this file never sees a value in clear.

use super::clock::NOW_MS;
use super::{PgStore, StoreError};
use crate::{SecretInfo, SecretScope};

impl PgStore {
    /// Sets (or replaces) secret `name` of `scope` to `sealed`.
    pub async fn set_secret(
        &self,
        scope: SecretScope<'_>,
        name: &str,
        sealed: String,
    ) -> Result<(), StoreError> {
        self.open_for_writes()?;
        let (tenant, name) = (scope.tenant().to_string(), name.to_string());
        self.on_pool(|s| async move {
            let client = s.client().await?;
            client
                .execute(
                    &format!(
                        "INSERT INTO secrets (tenant, name, sealed, created_at, updated_at) SELECT $1, $2, $3, now, now FROM (SELECT {NOW_MS} AS now) t
                         ON CONFLICT (tenant, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at"
                    ),
                    &[&tenant, &name, &sealed],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(())
        })
        .await
    }

    /// Removes secret `name` from `scope`; whether it was there.
    pub async fn remove_secret(
        &self,
        scope: SecretScope<'_>,
        name: &str,
    ) -> Result<bool, StoreError> {
        self.open_for_writes()?;
        let (tenant, name) = (scope.tenant().to_string(), name.to_string());
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let n = client
                .execute(
                    "DELETE FROM secrets WHERE tenant = $1 AND name = $2",
                    &[&tenant, &name],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(n > 0)
        })
        .await
    }

    /// The sealed value of secret `name` of `scope`: a tenant's own, else the shared
    /// one.
    pub async fn secret(
        &self,
        scope: SecretScope<'_>,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        let (tenant, name) = (scope.tenant().to_string(), name.to_string());
        self.on_pool(|s| async move {
            let client = s.client().await?;
            // `tenant = ''` sorts false (the tenant's own) before true (the shared one).
            let row = client
                .query_opt(
                    "SELECT sealed FROM secrets WHERE name = $1 AND tenant IN ($2, '') ORDER BY tenant = '' LIMIT 1",
                    &[&name, &tenant],
                )
                .await
                .map_err(|e| s.error(e))?;
            row.map(|r| r.try_get(0))
                .transpose()
                .map_err(|e| s.error(e))
        })
        .await
    }

    /// Every secret's name in `scope`, in order.
    pub async fn secrets(&self, scope: SecretScope<'_>) -> Result<Vec<SecretInfo>, StoreError> {
        let tenant = scope.tenant().to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            // Names in byte order, as SQLite sorts them (not the database's collation).
            let rows = client
                .query(
                    "SELECT name, created_at, updated_at FROM secrets WHERE tenant = $1 ORDER BY name COLLATE \"C\"",
                    &[&tenant],
                )
                .await
                .map_err(|e| s.error(e))?;
            rows.iter()
                .map(|r| {
                    Ok(SecretInfo {
                        name: r.try_get(0)?,
                        created_at: r.try_get(1)?,
                        updated_at: r.try_get(2)?,
                    })
                })
                .collect::<Result<_, tokio_postgres::Error>>()
                .map_err(|e| s.error(e))
        })
        .await
    }
}
