//! A read-only tool's kept result (`cache:`): looked up before the call takes a slot,
//! kept after it succeeds (with its credentials already masked: nothing secret at rest).
//! The key holds the tenant (and the user, for a tool acting for its user through
//! OAuth), the tool and the canonical arguments.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_tool::cache::{self, ResultCache};
use toolgate_tool::{Entry, LoadedTool, RunContext, ToolOutput};

/// Where a call's result is looked up and kept.
pub(super) struct Kept {
    cache: Arc<dyn ResultCache>,
    key: String,
    tenant: String,
    ttl: Duration,
}

impl Kept {
    /// The plan for this call, when its tool keeps results, a cache is there, and no
    /// argument is a secret (unless the tool allows it).
    pub(super) fn plan(
        cache: Option<&Arc<dyn ResultCache>>,
        tool: &LoadedTool,
        run: &RunContext,
        args: &Map<String, Value>,
    ) -> Option<Kept> {
        let policy = tool.policy.cache.as_ref().filter(|_| tool.spec.read_only)?;
        let cache = cache?;
        if !policy.admits(&tool.schema, args) {
            return None;
        }
        let tenant = run
            .tenant
            .clone()
            .unwrap_or_else(|| toolgate_protocol::identity::DEFAULT_TENANT.to_string());
        let for_user = matches!(&tool.spec.entry, Entry::Http { oauth: Some(_), .. });
        let user = for_user.then(|| run.user.as_deref().unwrap_or(""));
        Some(Kept {
            cache: Arc::clone(cache),
            key: cache::key(&tenant, user, &tool.spec.name, args),
            tenant,
            ttl: policy.ttl,
        })
    }

    /// The kept output, if any (a store that cannot answer is a miss).
    pub(super) async fn get(&self) -> Option<ToolOutput> {
        self.cache.get(&self.key).await
    }

    /// Keeps `output` when it may be kept.
    pub(super) async fn put(&self, tool: &str, output: &ToolOutput) {
        if let Some(text) = cache::keepable(output) {
            self.cache
                .put(&self.key, &self.tenant, tool, text, self.ttl)
                .await;
        }
    }
}
