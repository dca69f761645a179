//! Decisions on a paused run's items, written as `run::decision_rule` chose them: each
//! item moved from waiting to decided only while it still waits (compare-and-set), the
//! standing approvals "approve always" records; and the standing approvals a
//! conversation keeps.

use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::runs::{Refusal, RunsError};
use crate::DecisionChanges;
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::{Decision, RunStatus};

/// What a decision changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The call ids that were decided by this command.
    pub calls: Vec<String>,
    /// Items of the run still waiting.
    pub waiting: usize,
    /// For each decided item: the agent of the run that asked, and how long it waited
    /// (milliseconds from its request to this decision).
    pub waited: Vec<(String, i64)>,
}

/// Who made a decision: the identity (a key's name, a JWT's subject, `cli:USER`), the
/// issued key's id, and a display name the person typed, kept beside the identity.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decider {
    pub by: String,
    pub key_id: Option<String>,
    pub shown: Option<String>,
}

impl SqliteStore {
    /// Records `decision` on the items `changes` names, as `decider`, while each is still
    /// waiting and the run still paused; `None` (nothing written) when another decision
    /// or a cancel got there first since the rows were read.
    pub async fn apply_decision(
        &self,
        changes: DecisionChanges,
        decision: Decision,
        decider: Option<Decider>,
    ) -> Result<Option<Decided>, RunsError> {
        let (by, key_id, shown) = match decider {
            Some(d) => (Some(d.by), d.key_id, d.shown),
            None => (None, None, None),
        };
        self.transact(move |tx| {
            let status: Option<String> = tx
                .prepare_cached("SELECT status FROM runs WHERE id = ?1")?
                .query_row([&changes.run_id], |r| r.get(0))
                .optional()?;
            if status.as_deref() != Some(RunStatus::RequiresAction.as_str()) {
                return Ok(None);
            }
            let now = now_ms();
            for (holder_id, tool, policy) in &changes.standing {
                // Standing for the agent of the run that asked, in its conversation,
                // while the tool's policy stays the one it was asked under.
                let (conversation, agent): (String, String) = tx.prepare_cached("SELECT conversation_id, agent FROM runs WHERE id = ?1")?.query_row([holder_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                tx.prepare_cached("INSERT OR REPLACE INTO standing_decisions (conversation_id, agent, tool, decision, created_at, policy) VALUES (?1, ?2, ?3, 'approve', ?4, ?5)")?.execute(params![conversation, agent, tool, now, policy],
                )?;
            }
            let text = serde_json::to_string(&decision)
                .map_err(|e| RunsError::Refused(Refusal::DecisionConflict, e.to_string()))?;
            let mut calls = Vec::new();
            let mut waited = Vec::new();
            for (holder_id, call_id) in &changes.items {
                let (agent, asked): (String, Option<i64>) = tx
                    .prepare_cached("SELECT r.agent, COALESCE(p.requested_at, r.updated_at) FROM pending p JOIN runs r ON r.id = p.run_id WHERE p.run_id = ?1 AND p.call_id = ?2")?
                    .query_row(params![holder_id, call_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
                waited.push((agent, asked.map_or(0, |t| now - t)));
                let n = tx.prepare_cached("UPDATE pending SET decision = ?3, state = 'decided', decided_at = ?4, decided_by = ?5, decided_by_key = ?6, decided_as = ?7 WHERE run_id = ?1 AND call_id = ?2 AND state = 'waiting'")?.execute(params![holder_id, call_id, text, now, by, key_id, shown],
                )?;
                if n == 0 {
                    // Decided by someone else meanwhile: undo this whole decision.
                    return Err(RunsError::Changed);
                }
                tx.prepare_cached("UPDATE runs SET updated_at = ?2 WHERE id = ?1")?.execute(params![holder_id, now])?;
                calls.push(call_id.clone());
            }
            tx.prepare_cached("UPDATE runs SET updated_at = ?2 WHERE id = ?1")?.execute(params![changes.run_id, now])?;
            if let Some((owner, lease_ms)) = &changes.claim {
                tx.prepare_cached("UPDATE runs SET lease_owner = ?2, lease_until = ?3 WHERE id = ?1")?
                    .execute(params![changes.run_id, owner, now + lease_ms])?;
            }
            Ok(Some(Decided {
                waiting: changes.still_waiting,
                calls,
                waited,
            }))
        })
        .await
        .or_else(|e| match e {
            RunsError::Changed => Ok(None),
            other => Err(other),
        })
    }

    /// The tools with a standing approval for `agent` in a conversation, each with the
    /// fingerprint of the tool's policy it was given under.
    pub fn standing_approvals(
        &self,
        conversation: &str,
        agent: &str,
    ) -> Result<Vec<(String, String)>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT tool, policy FROM standing_decisions WHERE conversation_id = ?1 AND agent = ?2 AND decision = 'approve' ORDER BY tool",
            )?;
            let rows = stmt
                .query_map([conversation, agent], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
    }
}
