//! Runs on PostgreSQL: creating one, its lease (expiry by the database's clock), saves
//! with the executing fence, cancel, decisions, and the reads of one run.

use super::{PgStore, StoreError};
use crate::protocol::{Decision, RunStatus};
use crate::store::{Decided, Decider, DecisionChanges, NewRun, PendingRow, RunRow, RunSave};

impl PgStore {
    #[allow(clippy::too_many_arguments)]
    pub async fn create_run(
        &self,
        _id: &str,
        _conversation_id: &str,
        _agent: &str,
        _state: String,
        _owner: &str,
        _lease_ms: i64,
        _messages: Vec<String>,
        _first_seq: usize,
    ) -> Result<(), StoreError> {
        Err(self.unbuilt("create_run"))
    }

    pub async fn create_linked_run(&self, _new: NewRun) -> Result<(), StoreError> {
        Err(self.unbuilt("create_linked_run"))
    }

    pub async fn acquire_run(
        &self,
        _id: &str,
        _owner: &str,
        _lease_ms: i64,
    ) -> Result<(RunRow, Vec<PendingRow>), StoreError> {
        Err(self.unbuilt("acquire_run"))
    }

    pub async fn renew_lease(
        &self,
        _id: &str,
        _owner: &str,
        _lease_ms: i64,
    ) -> Result<(), StoreError> {
        Err(self.unbuilt("renew_lease"))
    }

    pub async fn release_run(
        &self,
        _id: &str,
        _owner: &str,
        _status: RunStatus,
    ) -> Result<(), StoreError> {
        Err(self.unbuilt("release_run"))
    }

    pub async fn save_run(
        &self,
        _id: &str,
        _owner: &str,
        _save: RunSave,
    ) -> Result<(), StoreError> {
        Err(self.unbuilt("save_run"))
    }

    pub async fn cancel_run(&self, _id: &str) -> Result<(String, RunStatus), StoreError> {
        Err(self.unbuilt("cancel_run"))
    }

    pub async fn unheld_runs(&self, _limit: usize) -> Result<Vec<String>, StoreError> {
        Err(self.unbuilt("unheld_runs"))
    }

    pub async fn run_status(&self, _id: &str) -> Result<RunStatus, StoreError> {
        Err(self.unbuilt("run_status"))
    }

    pub async fn run(&self, _id: &str) -> Result<(RunRow, Vec<PendingRow>), StoreError> {
        Err(self.unbuilt("run"))
    }

    pub async fn conversation_messages(
        &self,
        _conversation: &str,
    ) -> Result<Vec<String>, StoreError> {
        Err(self.unbuilt("conversation_messages"))
    }

    pub async fn child_run(
        &self,
        _parent_run_id: &str,
        _call_id: &str,
    ) -> Result<Option<RunRow>, StoreError> {
        Err(self.unbuilt("child_run"))
    }

    pub async fn root_run(&self, _run_id: &str) -> Result<RunRow, StoreError> {
        Err(self.unbuilt("root_run"))
    }

    pub async fn runs_below(&self, _run_id: &str) -> Result<Vec<String>, StoreError> {
        Err(self.unbuilt("runs_below"))
    }

    pub async fn apply_decision(
        &self,
        _changes: DecisionChanges,
        _decision: Decision,
        _decider: Option<Decider>,
    ) -> Result<Option<Decided>, StoreError> {
        Err(self.unbuilt("apply_decision"))
    }

    pub async fn standing_approvals(
        &self,
        _conversation: &str,
        _agent: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Err(self.unbuilt("standing_approvals"))
    }
}
