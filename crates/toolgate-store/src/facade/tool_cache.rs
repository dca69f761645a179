//! Kept tool results through the facade.

use super::super::{Backend, Store, StoreError};
use crate::tool_cache::CacheEntry;

impl Store {
    /// The output kept under `key`, unless it expired.
    pub async fn cached_output(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = key.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.cached_output(&key)).await,
            Backend::Postgres(s) => s.cached_output(&key).await,
        }
    }

    /// Keeps a tool's output under its key for its time to live.
    pub async fn keep_output(&self, entry: CacheEntry) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.keep_output(entry).await?),
            Backend::Postgres(s) => s.keep_output(entry).await,
        }
    }
}
