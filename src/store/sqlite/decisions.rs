//! Decisions on a paused run's items: approvals (for good, with `--always`), denials,
//! edited arguments and client outputs, each bound to its call id; and the standing
//! approvals a conversation keeps.

use rusqlite::params;

use super::SqliteStore;
use super::runs::{PendingRow, Refusal, RunsError, find_run, pending_with_below};
use crate::engine::now_ms;
use crate::protocol::{Decision, ItemKind, RunStatus};

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
    /// [`SqliteStore::decide`], recording the [`Decider`].
    pub async fn decide_as(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
        decider: Option<Decider>,
    ) -> Result<Decided, RunsError> {
        let (run_id, call_id) = (run_id.to_string(), call_id.map(str::to_string));
        let (by, key_id, shown) = match decider {
            Some(d) => (Some(d.by), d.key_id, d.shown),
            None => (None, None, None),
        };
        self.transact(move |tx| {
            let run = find_run(tx, &run_id)?;
            if run.status != RunStatus::RequiresAction {
                return Err(RunsError::Refused(Refusal::DecisionConflict, format!(
                    "run {} is {}, not waiting for a decision",
                    run.id,
                    run.status.as_str()
                )));
            }
            // Its own items and, for a run paused on its sub-agents, theirs: an item is
            // named by its call id, or `RUN/CALL` when a call id is not unique.
            let pending = pending_with_below(tx, &run)?;
            let holder = |p: &PendingRow| p.item.run_id.clone().unwrap_or_else(|| run.id.clone());
            let qualified = |p: &PendingRow| format!("{}/{}", holder(p), p.item.call_id);
            let waiting: Vec<&PendingRow> =
                pending.iter().filter(|p| p.state == crate::store::PendingState::Waiting).collect();
            let wants = match decision {
                Decision::Submit { .. } => ItemKind::SubmitToolOutput,
                _ => ItemKind::Approval,
            };
            let mut chosen: Vec<&PendingRow> = match &call_id {
                Some(c) => {
                    let named: Vec<&PendingRow> = pending
                        .iter()
                        .filter(|p| &p.item.call_id == c || &qualified(p) == c)
                        .collect();
                    if named.len() > 1 {
                        let forms: Vec<String> = named.iter().map(|p| qualified(p)).collect();
                        return Err(RunsError::Refused(Refusal::DecisionConflict, format!(
                            "call id '{c}' is waiting in more than one run of this tree; name one: {}",
                            forms.join(", ")
                        )));
                    }
                    let Some(p) = named.first().copied() else {
                        let ids: Vec<String> = waiting
                            .iter()
                            .map(|p| if p.item.run_id.is_some() { qualified(p) } else { p.item.call_id.clone() })
                            .collect();
                        return Err(RunsError::Refused(Refusal::DecisionConflict, format!(
                            "run {} has no pending call '{c}'; waiting: {}",
                            run.id,
                            if ids.is_empty() { "none".to_string() } else { ids.join(", ") }
                        )));
                    };
                    if p.state != crate::store::PendingState::Waiting {
                        return Err(RunsError::Refused(Refusal::DecisionConflict, format!(
                            "call {c} of run {} is already decided ({})",
                            run.id, p.state.as_str()
                        )));
                    }
                    if p.item.kind != wants {
                        let hint = match p.item.kind {
                            ItemKind::SubmitToolOutput => "it is a client tool: use toolgate submit",
                            ItemKind::Approval => "it needs a decision: use toolgate approve or deny",
                        };
                        return Err(RunsError::Refused(Refusal::DecisionConflict, format!(
                            "call {c} ({}) is a {} item; {hint}",
                            p.item.tool,
                            p.item.kind.as_str()
                        )));
                    }
                    vec![p]
                }
                None => waiting.iter().copied().filter(|p| p.item.kind == wants).collect(),
            };
            let now = now_ms();
            let approving = !matches!(decision, Decision::Deny { .. } | Decision::Submit { .. });
            let expired = |p: &PendingRow| p.item.expires_at.is_some_and(|at| at <= now);
            if approving {
                if call_id.is_some()
                    && let Some(p) = chosen.iter().find(|p| expired(p))
                {
                    return Err(RunsError::Refused(Refusal::Expired, expired_message(p, &run.id, now)));
                }
                // Approving every waiting call approves those still in time.
                let before = chosen.len();
                chosen.retain(|p| !expired(p));
                if chosen.is_empty() && before > 0 {
                    return Err(RunsError::Refused(Refusal::Expired, format!(
                        "every waiting approval of run {} has expired; they can no longer be approved",
                        run.id
                    )));
                }
            }
            if chosen.is_empty() {
                return Err(RunsError::Refused(Refusal::DecisionConflict, format!(
                    "run {} has no waiting {} items",
                    run.id,
                    wants.as_str()
                )));
            }
            if decision == Decision::ApproveAlways {
                let tools: Vec<(String, String, String)> = chosen
                    .iter()
                    .map(|p| (holder(p), p.item.tool.clone(), p.item.policy.clone().unwrap_or_default()))
                    .collect();
                for p in &waiting {
                    if p.item.kind == ItemKind::Approval
                        && !expired(p)
                        && tools.iter().any(|(h, t, _)| (h, t) == (&holder(p), &p.item.tool))
                        && !chosen.iter().any(|c| qualified(c) == qualified(p))
                    {
                        chosen.push(p);
                    }
                }
                for (holder_id, tool, policy) in tools {
                    // Standing for the agent of the run that asked, in its conversation,
                    // while the tool's policy stays the one it was asked under.
                    let (conversation, agent): (String, String) = tx.prepare_cached("SELECT conversation_id, agent FROM runs WHERE id = ?1")?.query_row([&holder_id],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )?;
                    tx.prepare_cached("INSERT OR REPLACE INTO standing_decisions (conversation_id, agent, tool, decision, created_at, policy) VALUES (?1, ?2, ?3, 'approve', ?4, ?5)")?.execute(params![conversation, agent, tool, now, policy],
                    )?;
                }
            }
            let text = serde_json::to_string(&decision)
                .map_err(|e| RunsError::Refused(Refusal::DecisionConflict, e.to_string()))?;
            let mut calls = Vec::new();
            let mut waited = Vec::new();
            for p in &chosen {
                let (agent, asked): (String, Option<i64>) = tx
                    .prepare_cached("SELECT r.agent, COALESCE(p.requested_at, r.updated_at) FROM pending p JOIN runs r ON r.id = p.run_id WHERE p.run_id = ?1 AND p.call_id = ?2")?
                    .query_row(params![holder(p), p.item.call_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
                waited.push((agent, asked.map_or(0, |t| now - t)));
                tx.prepare_cached("UPDATE pending SET decision = ?3, state = 'decided', decided_at = ?4, decided_by = ?5, decided_by_key = ?6, decided_as = ?7 WHERE run_id = ?1 AND call_id = ?2 AND state = 'waiting'")?.execute(params![holder(p), p.item.call_id, text, now, by, key_id, shown],
                )?;
                tx.prepare_cached("UPDATE runs SET updated_at = ?2 WHERE id = ?1")?.execute(params![holder(p), now])?;
                calls.push(p.item.call_id.clone());
            }
            tx.prepare_cached("UPDATE runs SET updated_at = ?2 WHERE id = ?1")?.execute(params![run.id, now])?;
            Ok(Decided {
                waiting: waiting.len() - calls.len(),
                calls,
                waited,
            })
        })
        .await
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

/// Why an item can no longer be approved.
fn expired_message(p: &PendingRow, run_id: &str, now: i64) -> String {
    let ago = (now - p.item.expires_at.unwrap_or(now)).max(0) / 1000;
    format!(
        "call {} ({}) of run {run_id} expired {ago}s ago: its approval deadline passed, so it can no longer be approved (on_timeout: {})",
        p.item.call_id,
        p.item.tool,
        p.item.on_timeout.unwrap_or_default().as_str()
    )
}
