//! Kept tool results on SQLite: read one unexpired entry, keep one (replacing the key's
//! entry, dropping expired ones and the oldest past the bound).

use rusqlite::{OptionalExtension, params};
use toolgate_protocol::clock::now_ms;

use super::SqliteStore;
use super::runs::RunsError;
use crate::tool_cache::{CacheEntry, MAX_ENTRIES};

impl SqliteStore {
    /// The output kept under `key`, unless it expired.
    pub fn cached_output(&self, key: &str) -> Result<Option<String>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT output FROM tool_cache WHERE key = ?1 AND expires_at > ?2",
            )?;
            Ok(stmt
                .query_row(params![key, now_ms()], |r| r.get(0))
                .optional()?)
        })
    }

    /// Keeps `entry`; expired entries go, then the oldest past [`MAX_ENTRIES`].
    pub async fn keep_output(&self, entry: CacheEntry) -> Result<(), RunsError> {
        self.transact(move |tx| {
            let now = now_ms();
            tx.execute(
                "INSERT INTO tool_cache (key, tenant, tool, output, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (key) DO UPDATE SET output = excluded.output, created_at = excluded.created_at, expires_at = excluded.expires_at",
                params![entry.key, entry.tenant, entry.tool, entry.output, now, now.saturating_add(entry.ttl_ms)],
            )?;
            tx.execute("DELETE FROM tool_cache WHERE expires_at <= ?1", [now])?;
            let count: i64 = tx.query_row("SELECT count(*) FROM tool_cache", [], |r| r.get(0))?;
            if count > MAX_ENTRIES {
                tx.execute(
                    "DELETE FROM tool_cache WHERE key IN (SELECT key FROM tool_cache ORDER BY created_at LIMIT ?1)",
                    [count - MAX_ENTRIES],
                )?;
            }
            Ok(())
        })
        .await
    }
}
