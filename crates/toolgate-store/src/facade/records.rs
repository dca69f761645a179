//! Call records through the facade: committing them (the hot path), listing them, and
//! the summaries over them (per conversation, per tool, global).

use super::super::{
    Backend, CallQuery, CallRecord, ConversationSummary, GlobalStats, Page, Scope, Store,
    StoreError, ToolStats,
};

impl Store {
    /// Writes `records` and returns once they are committed (with whatever other
    /// batches shared the transaction).
    pub async fn record_calls(&self, records: Vec<CallRecord>) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.record_calls(records).await,
            Backend::Postgres(s) => s.commit_records(records).await.map(drop),
        }
    }

    /// [`Store::record_calls`], giving the records back once committed (so that a
    /// caller that still needs them does not copy them first).
    pub async fn commit_records(
        &self,
        records: Vec<CallRecord>,
    ) -> Result<Vec<CallRecord>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.commit_records(records).await,
            Backend::Postgres(s) => s.commit_records(records).await,
        }
    }

    /// The records matching `q`, one page.
    pub async fn calls(&self, q: &CallQuery) -> Result<Page, StoreError> {
        let q = q.clone();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.calls(&q)).await,
            Backend::Postgres(s) => s.calls(&q).await,
        }
    }

    /// The result recorded for call `call_id` of a conversation, if any.
    pub async fn call_result(
        &self,
        conversation_id: &str,
        call_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let (conversation, call) = (conversation_id.to_string(), call_id.to_string());
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.call_result(&conversation, &call))
                    .await
            }
            Backend::Postgres(s) => s.call_result(&conversation, &call).await,
        }
    }

    /// The committed records of some calls of a run, in the order they were recorded
    /// (calls without a record yet are missing).
    pub async fn run_call_records(
        &self,
        run_id: &str,
        call_ids: &[String],
    ) -> Result<Vec<CallRecord>, StoreError> {
        let (run, calls) = (run_id.to_string(), call_ids.to_vec());
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.run_call_records(&run, &calls)).await,
            Backend::Postgres(s) => s.run_call_records(&run, &calls).await,
        }
    }

    /// What one conversation's calls came to.
    pub async fn conversation_summary(
        &self,
        conversation_id: &str,
    ) -> Result<ConversationSummary, StoreError> {
        let conversation = conversation_id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.conversation_summary(&conversation))
                    .await
            }
            Backend::Postgres(s) => s.conversation_summary(&conversation).await,
        }
    }

    /// What one tool's calls came to, over the records of `scope`.
    pub async fn tool_stats(&self, scope: Scope<'_>, tool: &str) -> Result<ToolStats, StoreError> {
        let mut cache = self.cache_tally(scope).await?;
        let (tenant, tool) = (scope.tenant().map(str::to_string), tool.to_string());
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.tool_stats(Scope::of(tenant.as_deref()), &tool))
                    .await
            }
            Backend::Postgres(s) => s.tool_stats(scope, &tool).await,
        }
        .map(|mut stats| {
            stats.cache = cache.remove(&stats.tool);
            stats
        })
    }

    /// Cache hits and misses per tool over the records of `scope`.
    async fn cache_tally(
        &self,
        scope: Scope<'_>,
    ) -> Result<crate::summary::CacheTally, StoreError> {
        let tenant = scope.tenant().map(str::to_string);
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.cache_tally(tenant.as_deref())).await,
            Backend::Postgres(s) => s.cache_tally(tenant.as_deref()).await,
        }
    }

    /// What the calls of `scope` came to (a tenant's: with its conversations).
    pub async fn global_stats(&self, scope: Scope<'_>) -> Result<GlobalStats, StoreError> {
        let mut cache = self.cache_tally(scope).await?;
        let tenant = scope.tenant().map(str::to_string);
        let mut stats = match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.global_stats(Scope::of(tenant.as_deref())))
                    .await
            }
            Backend::Postgres(s) => s.global_stats(scope).await,
        }?;
        for tool in &mut stats.tools {
            tool.cache = cache.remove(&tool.tool);
        }
        Ok(stats)
    }
}
