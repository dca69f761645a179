//! The store as the engine's [`ResultCache`]: every process on the database shares the
//! kept results. A store that cannot answer is a miss (the tool runs), and a result it
//! cannot keep is only logged: the cache never fails a call.

use std::time::Duration;

use async_trait::async_trait;
use toolgate_store::Store;
use toolgate_store::tool_cache::CacheEntry;
use toolgate_tool::ToolOutput;
use toolgate_tool::cache::ResultCache;

/// Kept results in `0`.
#[derive(Clone)]
pub struct StoreCache(pub Store);

impl std::fmt::Debug for StoreCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreCache")
    }
}

#[async_trait]
impl ResultCache for StoreCache {
    async fn get(&self, key: &str) -> Option<ToolOutput> {
        match self.0.cached_output(key).await {
            Ok(text) => text.and_then(|t| serde_json::from_str(&t).ok()),
            Err(e) => {
                tracing::warn!(error = %e, "kept result not read; the tool runs");
                None
            }
        }
    }

    async fn put(&self, key: &str, tenant: &str, tool: &str, output: String, ttl: Duration) {
        let entry = CacheEntry {
            key: key.to_string(),
            tenant: tenant.to_string(),
            tool: tool.to_string(),
            output,
            ttl_ms: i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX),
        };
        if let Err(e) = self.0.keep_output(entry).await {
            tracing::warn!(error = %e, tool, "result not kept");
        }
    }
}
