//! Approval deadlines in the store: the waiting approvals whose deadline has passed
//! (each denied in the same transaction that finds it, decided by `deadline`, so two
//! processes never expire one item twice), and those about to expire that nobody was
//! warned about yet (marked as warned as they are read).

use rusqlite::{Connection, params};

use super::SqliteStore;
use super::runs::{
    PENDING_COLUMNS, PENDING_COUNT, PendingRow, RunsError, find_run, pending_from_row,
};
use super::tree::{ids_below, root_of};
use toolgate_protocol::Decision;
use toolgate_protocol::clock::now_ms;

/// Who an expired item is recorded as decided by.
pub const DEADLINE: &str = "deadline";

/// What the model reads for a call whose approval expired.
pub const EXPIRED: &str =
    "Nobody approved this call before its approval deadline; it expired and was not run.";

/// One item met by a deadline: the run holding it, the top run of its tree, the item.
#[derive(Debug, Clone)]
pub struct DueItem {
    pub run_id: String,
    pub top_run_id: String,
    pub pending: PendingRow,
}

impl SqliteStore {
    /// Denies every waiting approval whose deadline has passed, in the runs paused for
    /// a decision (only `tree` and the runs below it, when given). Returns them.
    pub async fn expire_due(&self, tree: Option<String>) -> Result<Vec<DueItem>, RunsError> {
        self.transact(move |tx| {
            let now = now_ms();
            let due = due(tx, tree.as_deref(), "p.expires_at <= ?1 + ?2", now, 0)?;
            let decision = serde_json::to_string(&Decision::Deny {
                reason: Some(EXPIRED.to_string()),
            })
            .map_err(|e| RunsError::Refused(crate::Refusal::DecisionConflict, e.to_string()))?;
            for d in &due {
                tx.prepare_cached("UPDATE pending SET decision = ?3, state = 'decided', decided_at = ?4, decided_by = ?5 WHERE run_id = ?1 AND call_id = ?2 AND state = 'waiting'")?
                    .execute(params![d.run_id, d.pending.item.call_id, decision, now, DEADLINE])?;
                tx.prepare_cached("UPDATE runs SET updated_at = ?2 WHERE id = ?1")?
                    .execute(params![d.run_id, now])?;
            }
            Ok(due)
        })
        .await
    }

    /// The waiting approvals that expire within `lead_ms` and have not been warned
    /// about; each is marked warned as it is read.
    pub async fn warn_due(&self, lead_ms: i64) -> Result<Vec<DueItem>, RunsError> {
        self.transact(move |tx| {
            let now = now_ms();
            let due = due(
                tx,
                None,
                "p.expires_at > ?1 AND p.expires_at <= ?1 + ?2 AND p.warned_at IS NULL",
                now,
                lead_ms,
            )?;
            for d in &due {
                tx.prepare_cached(
                    "UPDATE pending SET warned_at = ?3 WHERE run_id = ?1 AND call_id = ?2",
                )?
                .execute(params![d.run_id, d.pending.item.call_id, now])?;
            }
            Ok(due)
        })
        .await
    }
}

/// The waiting approvals of paused runs meeting `condition` (on `p.expires_at`, with
/// `?1` now and `?2` a lead), in `tree` and below it when given.
fn due(
    tx: &Connection,
    tree: Option<&str>,
    condition: &str,
    now: i64,
    lead: i64,
) -> Result<Vec<DueItem>, RunsError> {
    let columns: String = PENDING_COLUMNS
        .split(", ")
        .map(|c| format!("p.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {columns}, p.run_id FROM pending p JOIN runs r ON r.id = p.run_id
         WHERE p.state = 'waiting' AND p.kind = 'approval' AND p.expires_at IS NOT NULL
           AND r.status = 'requires_action' AND {condition}
         ORDER BY p.expires_at"
    );
    let rows: Vec<(PendingRow, String)> = tx
        .prepare_cached(&sql)?
        .query_map(params![now, lead], |row| {
            Ok((pending_from_row(row)?, row.get(PENDING_COUNT)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let within: Option<Vec<String>> = match tree {
        Some(top) => {
            let top = find_run(tx, top)?;
            let mut ids = ids_below(tx, &top.id)?;
            ids.push(top.id);
            Some(ids)
        }
        None => None,
    };
    let mut out = Vec::new();
    for (pending, run_id) in rows {
        if within.as_ref().is_some_and(|ids| !ids.contains(&run_id)) {
            continue;
        }
        let top = root_of(tx, find_run(tx, &run_id)?)?;
        out.push(DueItem {
            run_id,
            top_run_id: top.id,
            pending,
        });
    }
    Ok(out)
}
