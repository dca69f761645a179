//! Lists of runs on PostgreSQL: runs by tenant, status and conversation (with their
//! pending items), runs in progress, run trees and a run's timeline.

use super::{PgStore, StoreError};
use crate::protocol::{RunStatus, RunTree};
use crate::store::{PendingRow, RunRow, TimelineRows};

impl PgStore {
    pub async fn runs_of(
        &self,
        _tenant: Option<&str>,
        _status: Option<RunStatus>,
        _conversation: Option<&str>,
        _limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        Err(self.unbuilt("runs_of"))
    }

    pub async fn runs_with_pending_of(
        &self,
        _tenant: Option<&str>,
        _status: Option<RunStatus>,
        _conversation: Option<&str>,
        _limit: usize,
    ) -> Result<Vec<(RunRow, Vec<PendingRow>)>, StoreError> {
        Err(self.unbuilt("runs_with_pending_of"))
    }

    pub async fn runs_in_progress(
        &self,
        _tenant: &str,
        _user: &str,
    ) -> Result<(u64, u64), StoreError> {
        Err(self.unbuilt("runs_in_progress"))
    }

    pub async fn run_tree(&self, _run_id: &str) -> Result<RunTree, StoreError> {
        Err(self.unbuilt("run_tree"))
    }

    pub async fn conversation_trees(
        &self,
        _conversation: &str,
    ) -> Result<Vec<RunTree>, StoreError> {
        Err(self.unbuilt("conversation_trees"))
    }

    pub async fn run_timeline(&self, _id: &str) -> Result<TimelineRows, StoreError> {
        Err(self.unbuilt("run_timeline"))
    }
}
