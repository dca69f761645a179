//! Kept tool results on PostgreSQL, on the database's clock (every worker agrees on
//! what expired): read one unexpired entry, keep one (replacing the key's entry,
//! dropping expired ones and the oldest past the bound).

use super::clock::NOW_MS;
use super::{PgStore, StoreError};
use crate::tool_cache::{CacheEntry, MAX_ENTRIES};

impl PgStore {
    /// The output kept under `key`, unless it expired.
    pub async fn cached_output(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = key.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .query_opt(
                    &format!(
                        "SELECT output FROM tool_cache WHERE key = $1 AND expires_at > {NOW_MS}"
                    ),
                    &[&key],
                )
                .await
                .map_err(|e| s.error(e))?;
            Ok(row.map(|r| r.get(0)))
        })
        .await
    }

    /// Keeps `entry`; expired entries go, then the oldest past [`MAX_ENTRIES`].
    pub async fn keep_output(&self, entry: CacheEntry) -> Result<(), StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let keep = format!(
                "INSERT INTO tool_cache (key, tenant, tool, output, created_at, expires_at) VALUES ($1, $2, $3, $4, {NOW_MS}, {NOW_MS} + $5)
                 ON CONFLICT (key) DO UPDATE SET output = excluded.output, created_at = excluded.created_at, expires_at = excluded.expires_at"
            );
            client
                .execute(&keep, &[&entry.key, &entry.tenant, &entry.tool, &entry.output, &entry.ttl_ms])
                .await
                .map_err(|e| s.error(e))?;
            let trim = format!(
                "WITH gone AS (DELETE FROM tool_cache WHERE expires_at <= {NOW_MS})
                 DELETE FROM tool_cache WHERE key IN (
                     SELECT key FROM tool_cache ORDER BY created_at
                     LIMIT GREATEST((SELECT count(*) FROM tool_cache) - $1, 0))"
            );
            client.execute(&trim, &[&MAX_ENTRIES]).await.map_err(|e| s.error(e))?;
            s.committed();
            Ok(())
        })
        .await
    }
}
