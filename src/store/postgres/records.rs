//! Call records on PostgreSQL: committing them, listing them, and the summaries over
//! them (per conversation, per tool, global).

use super::{PgStore, StoreError};
use crate::store::{CallQuery, CallRecord, ConversationSummary, GlobalStats, Page, ToolStats};

impl PgStore {
    pub async fn commit_records(
        &self,
        _records: Vec<CallRecord>,
    ) -> Result<Vec<CallRecord>, StoreError> {
        Err(self.unbuilt("commit_records"))
    }

    pub async fn calls(&self, _q: &CallQuery) -> Result<Page, StoreError> {
        Err(self.unbuilt("calls"))
    }

    pub async fn call_result(
        &self,
        _conversation_id: &str,
        _call_id: &str,
    ) -> Result<Option<String>, StoreError> {
        Err(self.unbuilt("call_result"))
    }

    pub async fn run_call_records(
        &self,
        _run_id: &str,
        _call_ids: &[String],
    ) -> Result<Vec<CallRecord>, StoreError> {
        Err(self.unbuilt("run_call_records"))
    }

    pub async fn conversation_summary(
        &self,
        _conversation_id: &str,
    ) -> Result<ConversationSummary, StoreError> {
        Err(self.unbuilt("conversation_summary"))
    }

    pub async fn tool_stats_of(
        &self,
        _tenant: Option<&str>,
        _tool: &str,
    ) -> Result<ToolStats, StoreError> {
        Err(self.unbuilt("tool_stats_of"))
    }

    pub async fn global_stats_of(&self, _tenant: Option<&str>) -> Result<GlobalStats, StoreError> {
        Err(self.unbuilt("global_stats_of"))
    }
}
