//! Decisions through the facade: recording them on a paused run's items, the standing
//! approvals a conversation keeps, approval deadlines, and what waits for whom.

use super::super::{
    Backend, Decided, Decider, DecisionChanges, DueItem, Store, StoreError, Waiting,
};
use toolgate_protocol::Decision;

impl Store {
    /// Records `decision` (by `decider`) on the items `changes` names, as
    /// `run::decision_rule` chose them from the rows it read: only while every one of
    /// them still waits and the run is still paused. `None` when another decision or a
    /// cancel came first (nothing is written; read again and choose again).
    pub async fn apply_decision(
        &self,
        changes: DecisionChanges,
        decision: Decision,
        decider: Option<Decider>,
    ) -> Result<Option<Decided>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.apply_decision(changes, decision, decider).await?),
            Backend::Postgres(s) => s.apply_decision(changes, decision, decider).await,
        }
    }

    /// The tools with a standing approval for `agent` in a conversation, each with the
    /// fingerprint of the tool's policy it was given under.
    pub async fn standing_approvals(
        &self,
        conversation: &str,
        agent: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let (conversation, agent) = (conversation.to_string(), agent.to_string());
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.standing_approvals(&conversation, &agent))
                    .await
            }
            Backend::Postgres(s) => s.standing_approvals(&conversation, &agent).await,
        }
    }

    /// Denies every waiting approval whose deadline has passed, in the runs paused for
    /// a decision (only `tree` and the runs below it, when given). Returns them.
    pub async fn expire_due(&self, tree: Option<String>) -> Result<Vec<DueItem>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.expire_due(tree).await?),
            Backend::Postgres(s) => s.expire_due(tree).await,
        }
    }

    /// The waiting approvals that expire within `lead_ms` and have not been warned
    /// about; each is marked warned as it is read.
    pub async fn warn_due(&self, lead_ms: i64) -> Result<Vec<DueItem>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.warn_due(lead_ms).await?),
            Backend::Postgres(s) => s.warn_due(lead_ms).await,
        }
    }

    /// Every item waiting for a decision, and who may decide it.
    pub async fn waiting_approvals(&self) -> Result<Waiting, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(|s| s.waiting_approvals()).await,
            Backend::Postgres(s) => s.waiting_approvals().await,
        }
    }
}
