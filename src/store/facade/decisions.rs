//! Decisions through the facade: recording them on a paused run's items, the standing
//! approvals a conversation keeps, approval deadlines, and what waits for whom.

use super::super::{Backend, Decided, Decider, DueItem, Store, StoreError, Waiting};
use crate::protocol::Decision;

impl Store {
    /// Records a decision (or a client's output) for the waiting items of a paused run.
    /// `call_id` `None` decides every waiting approval. `ApproveAlways` also stores a
    /// standing approval and approves the other waiting calls of the same tool.
    pub async fn decide(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
    ) -> Result<Decided, StoreError> {
        self.decide_as(run_id, call_id, decision, None).await
    }

    /// [`Store::decide`], recording who decided (`by`) beside when.
    pub async fn decide_by(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
        by: Option<String>,
    ) -> Result<Decided, StoreError> {
        let decider = by.map(|by| Decider {
            by,
            ..Decider::default()
        });
        self.decide_as(run_id, call_id, decision, decider).await
    }

    /// [`Store::decide`], recording the [`Decider`].
    pub async fn decide_as(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
        decider: Option<Decider>,
    ) -> Result<Decided, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.decide_as(run_id, call_id, decision, decider).await?),
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
        }
    }

    /// Denies every waiting approval whose deadline has passed, in the runs paused for
    /// a decision (only `tree` and the runs below it, when given). Returns them.
    pub async fn expire_due(&self, tree: Option<String>) -> Result<Vec<DueItem>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.expire_due(tree).await?),
        }
    }

    /// The waiting approvals that expire within `lead_ms` and have not been warned
    /// about; each is marked warned as it is read.
    pub async fn warn_due(&self, lead_ms: i64) -> Result<Vec<DueItem>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.warn_due(lead_ms).await?),
        }
    }

    /// Every item waiting for a decision, and who may decide it.
    pub async fn waiting_approvals(&self) -> Result<Waiting, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(|s| s.waiting_approvals()).await,
        }
    }
}
