//! Decisions on a paused run's items on PostgreSQL, written as `run::decision_rule`
//! chose them: each item moved from waiting to decided only while it still waits and
//! the run is still paused (compare-and-set under the run's row lock), with the
//! standing approvals "approve always" records in the same transaction; and the
//! standing approvals a conversation keeps.

use deadpool_postgres::GenericClient;

use super::prepared::Prepared;
use super::run_rows::{NOW_MS, OrStore, rows_to};
use super::{PgStore, StoreError};
use crate::{Decided, Decider, DecisionChanges, Refusal};
use toolgate_protocol::{Decision, RunStatus};

impl PgStore {
    /// Records `decision` on the items `changes` names, as `decider`, while each is still
    /// waiting and the run still paused; `None` (nothing written) when another decision
    /// or a cancel got there first since the rows were read.
    pub async fn apply_decision(
        &self,
        changes: DecisionChanges,
        decision: Decision,
        decider: Option<Decider>,
    ) -> Result<Option<Decided>, StoreError> {
        self.open_for_writes()?;
        let (by, key_id, shown) = match decider {
            Some(d) => (Some(d.by), d.key_id, d.shown),
            None => (None, None, None),
        };
        let text = serde_json::to_string(&decision)
            .map_err(|e| StoreError::Refused(Refusal::DecisionConflict, e.to_string()))?;
        self.on_pool(|s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.or_store(&s)?;
            // The run's row lock: a save, a cancel or another decision waits for this one.
            // (With the database's clock, in the same round trip.)
            let locked: Option<(String, i64)> = tx
                .row_opt(
                    &format!("SELECT status, {NOW_MS} FROM runs WHERE id = $1 FOR UPDATE"),
                    &[&changes.run_id],
                )
                .await
                .or_store(&s)?
                .map(|r| Ok::<_, tokio_postgres::Error>((r.try_get(0)?, r.try_get(1)?)))
                .transpose()
                .or_store(&s)?;
            let Some((status, now)) = locked else {
                return Ok(None);
            };
            if status != RunStatus::RequiresAction.as_str() {
                return Ok(None);
            }
            for (holder_id, tool, policy) in &changes.standing {
                // Standing for the agent of the run that asked, in its conversation,
                // while the tool's policy stays the one it was asked under.
                let row = tx
                    .row(
                        "SELECT conversation_id, agent FROM runs WHERE id = $1",
                        &[holder_id],
                    )
                    .await
                    .or_store(&s)?;
                let (conversation, agent): (String, String) =
                    (row.try_get(0).or_store(&s)?, row.try_get(1).or_store(&s)?);
                tx.exec(
                    "INSERT INTO standing_decisions (conversation_id, agent, tool, decision, created_at, policy) VALUES ($1, $2, $3, 'approve', $4, $5)
                     ON CONFLICT (conversation_id, agent, tool) DO UPDATE SET decision = EXCLUDED.decision, created_at = EXCLUDED.created_at, policy = EXCLUDED.policy",
                    &[&conversation, &agent, tool, &now, policy],
                )
                .await
                .or_store(&s)?;
            }
            let mut calls = Vec::new();
            let mut waited = Vec::new();
            for (holder_id, call_id) in &changes.items {
                let row = tx
                    .row(
                        "SELECT r.agent, COALESCE(p.requested_at, r.updated_at) FROM pending p JOIN runs r ON r.id = p.run_id WHERE p.run_id = $1 AND p.call_id = $2",
                        &[holder_id, call_id],
                    )
                    .await
                    .or_store(&s)?;
                let (agent, asked): (String, Option<i64>) =
                    (row.try_get(0).or_store(&s)?, row.try_get(1).or_store(&s)?);
                waited.push((agent, asked.map_or(0, |t| now - t)));
                let n = tx
                    .exec(
                        "UPDATE pending SET decision = $3, state = 'decided', decided_at = $4, decided_by = $5, decided_by_key = $6, decided_as = $7 WHERE run_id = $1 AND call_id = $2 AND state = 'waiting'",
                        &[holder_id, call_id, &text, &now, &by, &key_id, &shown],
                    )
                    .await
                    .or_store(&s)?;
                if n == 0 {
                    // Decided by someone else meanwhile: this whole decision rolls back.
                    return Ok(None);
                }
                calls.push(call_id.clone());
            }
            touch_decided(&tx, &s, &changes, now).await?;
            tx.commit().await.or_store(&s)?;
            s.committed();
            Ok(Some(Decided {
                waiting: changes.still_waiting,
                calls,
                waited,
            }))
        })
        .await
    }

    /// The tools with a standing approval for `agent` in a conversation, each with the
    /// fingerprint of the tool's policy it was given under.
    pub async fn standing_approvals(
        &self,
        conversation: &str,
        agent: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let (conversation, agent) = (conversation.to_string(), agent.to_string());
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let rows = client
                .rows(
                    "SELECT tool, policy FROM standing_decisions WHERE conversation_id = $1 AND agent = $2 AND decision = 'approve' ORDER BY tool",
                    &[&conversation, &agent],
                )
                .await
                .or_store(&s)?;
            rows_to(rows, &s, |r| Ok((r.try_get(0)?, r.try_get(1)?)))
        })
        .await
    }
}

/// Touches each run whose item was decided once (each touch is a change every worker
/// hears), the decided run last, with its claim when it has one.
async fn touch_decided(
    tx: &impl GenericClient,
    s: &PgStore,
    changes: &DecisionChanges,
    now: i64,
) -> Result<(), StoreError> {
    let mut below: Vec<&String> = changes
        .items
        .iter()
        .map(|(holder, _)| holder)
        .filter(|h| **h != changes.run_id)
        .collect();
    below.sort();
    below.dedup();
    for holder_id in below {
        tx.exec(
            "UPDATE runs SET updated_at = $2 WHERE id = $1",
            &[holder_id, &now],
        )
        .await
        .or_store(s)?;
    }
    match &changes.claim {
        Some((owner, lease_ms)) => {
            tx.exec(
                "UPDATE runs SET updated_at = $2, lease_owner = $3, lease_until = $4 WHERE id = $1",
                &[&changes.run_id, &now, owner, &(now + lease_ms)],
            )
            .await
        }
        None => {
            tx.exec(
                "UPDATE runs SET updated_at = $2 WHERE id = $1",
                &[&changes.run_id, &now],
            )
            .await
        }
    }
    .or_store(s)?;
    Ok(())
}
