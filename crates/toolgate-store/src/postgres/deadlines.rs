//! Approval deadlines on PostgreSQL: the waiting approvals whose deadline has passed
//! (each denied, decided by `deadline`, by the statement that finds it) and those about
//! to expire that nobody was warned about yet (marked warned as they are read). Many
//! workers sweep at once: an item is changed only while it still is `waiting` (or not
//! warned), under its row lock, and one locked by another sweep is skipped, so each is
//! expired (or warned about) by exactly one of them. Now is the database's clock.

use deadpool_postgres::Transaction;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use super::clock::NOW_MS;
use super::prepared::Prepared;
use super::{PgStore, StoreError};
use crate::{DEADLINE, DueItem, EXPIRED, PendingRow, Refusal};
use toolgate_protocol::Decision;

/// Times a sweep is tried again when the database broke a lock cycle it was in.
const TRIES: usize = 5;

/// The columns a due item is read from (`due`'s, as found before the sweep changed it).
const DUE_COLUMNS: &str = "due.call_id, due.kind, due.tool, due.arguments, due.decision, due.state, due.reason, due.expires_at, due.on_timeout, due.policy, due.run_id";

/// The waiting approvals of paused runs (`$3`: only these runs, when not NULL) meeting
/// `condition` (on `p.expires_at`, `$1` now and `$2` a lead), each item locked (skipped
/// when another holds it); with `lock_runs`, each run's row too, waited for (its status
/// may be changing: it is read again once free).
fn due_cte(condition: &str, lock_runs: bool) -> String {
    let runs = if lock_runs {
        "FOR NO KEY UPDATE OF r "
    } else {
        ""
    };
    format!(
        "WITH due AS (
             SELECT p.call_id, p.kind, p.tool, p.arguments, p.decision, p.state, p.reason,
                    p.expires_at, p.on_timeout, p.policy, p.run_id
             FROM pending p JOIN runs r ON r.id = p.run_id
             WHERE p.state = 'waiting' AND p.kind = 'approval' AND p.expires_at IS NOT NULL
               AND r.status = 'requires_action' AND {condition}
               AND ($3::text[] IS NULL OR p.run_id = ANY($3::text[]))
             {runs}FOR UPDATE OF p SKIP LOCKED
         )"
    )
}

/// A due item's pending row and the run holding it, from a row of [`DUE_COLUMNS`] (the
/// pending columns first, as `run_rows` reads them).
fn due_from_row(row: &Row) -> Result<(PendingRow, String), tokio_postgres::Error> {
    let pending = super::run_rows::pending_from_row(row)?;
    Ok((pending, row.try_get(super::run_rows::PENDING_COUNT)?))
}

/// What a sweep's transaction ends with: the database's error (a lock cycle is tried
/// again), or the store's.
enum Failed {
    Db(tokio_postgres::Error),
    Store(StoreError),
}

impl From<tokio_postgres::Error> for Failed {
    fn from(e: tokio_postgres::Error) -> Self {
        Failed::Db(e)
    }
}

impl From<StoreError> for Failed {
    fn from(e: StoreError) -> Self {
        Failed::Store(e)
    }
}

/// What a sweep looks for.
enum Sweep {
    /// Approvals past their deadline (in `tree` and below it, when given): denied.
    Expire {
        tree: Option<String>,
        decision: String,
    },
    /// Approvals expiring within `lead_ms`, not warned about yet: marked warned.
    Warn { lead_ms: i64 },
}

impl PgStore {
    /// Denies every waiting approval whose deadline has passed, in the runs paused for
    /// a decision (only `tree` and the runs below it, when given). Returns them, as
    /// they were found (waiting).
    pub async fn expire_due(&self, tree: Option<String>) -> Result<Vec<DueItem>, StoreError> {
        let decision = serde_json::to_string(&Decision::Deny {
            reason: Some(EXPIRED.to_string()),
        })
        .map_err(|e| StoreError::Refused(Refusal::DecisionConflict, e.to_string()))?;
        self.sweep(Sweep::Expire { tree, decision }).await
    }

    /// The waiting approvals that expire within `lead_ms` and have not been warned
    /// about; each is marked warned as it is read.
    pub async fn warn_due(&self, lead_ms: i64) -> Result<Vec<DueItem>, StoreError> {
        self.sweep(Sweep::Warn { lead_ms }).await
    }

    /// Runs `sweep` in a transaction, with each item's top run, and commits; tried
    /// again when the database broke a lock cycle it was in.
    async fn sweep(&self, sweep: Sweep) -> Result<Vec<DueItem>, StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let mut client = s.client().await?;
            let mut tries = 0;
            loop {
                tries += 1;
                match attempt(&mut client, &sweep).await {
                    Ok(out) => {
                        s.committed();
                        return Ok(out);
                    }
                    Err(Failed::Db(e)) if tries < TRIES && retryable(&e) => continue,
                    Err(Failed::Db(e)) => return Err(s.error(e)),
                    Err(Failed::Store(e)) => return Err(e),
                }
            }
        })
        .await
    }
}

/// One try of `sweep`: its items changed and read with their top runs, committed.
async fn attempt(
    client: &mut deadpool_postgres::Object,
    sweep: &Sweep,
) -> Result<Vec<DueItem>, Failed> {
    let tx = client.transaction().await?;
    let mut due = find(&tx, sweep).await?;
    due.sort_by_key(|(p, _)| p.item.expires_at);
    let mut out = Vec::with_capacity(due.len());
    for (pending, run_id) in due {
        let top_run_id = root_of(&tx, &run_id).await?;
        out.push(DueItem {
            run_id,
            top_run_id,
            pending,
        });
    }
    tx.commit().await?;
    Ok(out)
}

/// The items `sweep` finds, each changed as it says (by the statement that finds it).
async fn find(tx: &Transaction<'_>, sweep: &Sweep) -> Result<Vec<(PendingRow, String)>, Failed> {
    let now: i64 = tx.row(&format!("SELECT {NOW_MS}"), &[]).await?.try_get(0)?;
    match sweep {
        Sweep::Expire { tree, decision } => {
            let within = match tree {
                Some(top) => Some(tree_ids(tx, top).await?),
                None => None,
            };
            let sql = format!(
                "{} UPDATE pending p SET decision = $4, state = 'decided', decided_at = $1, decided_by = $5
                 FROM due WHERE p.run_id = due.run_id AND p.call_id = due.call_id AND p.state = 'waiting'
                 RETURNING {DUE_COLUMNS}",
                due_cte("p.expires_at <= $1::bigint + $2::bigint", true)
            );
            let rows = tx
                .rows(&sql, &[&now, &0_i64, &within, decision, &DEADLINE])
                .await?;
            let due = rows
                .iter()
                .map(due_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            let mut runs: Vec<&str> = due.iter().map(|(_, run)| run.as_str()).collect();
            runs.sort_unstable();
            runs.dedup();
            // Most sweeps (one before each decision) find nothing due.
            if !runs.is_empty() {
                tx.exec(
                    "UPDATE runs SET updated_at = $1 WHERE id = ANY($2::text[])",
                    &[&now, &runs],
                )
                .await?;
            }
            Ok(due)
        }
        Sweep::Warn { lead_ms } => {
            let sql = format!(
                "{} UPDATE pending p SET warned_at = $1
                 FROM due WHERE p.run_id = due.run_id AND p.call_id = due.call_id AND p.warned_at IS NULL
                 RETURNING {DUE_COLUMNS}",
                due_cte(
                    "p.expires_at > $1::bigint AND p.expires_at <= $1::bigint + $2::bigint AND p.warned_at IS NULL",
                    false
                )
            );
            let within: Option<Vec<String>> = None;
            let rows = tx.rows(&sql, &[&now, lead_ms, &within]).await?;
            Ok(rows
                .iter()
                .map(due_from_row)
                .collect::<Result<Vec<_>, _>>()?)
        }
    }
}

/// Whether the database gave up the transaction to break a lock cycle (or a conflict
/// of serializable transactions): trying again is right.
fn retryable(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
    })
}

/// The run `id` names (its exact id, else a unique prefix of one) and every run below
/// it: the runs a sweep of that tree covers.
async fn tree_ids(tx: &Transaction<'_>, id: &str) -> Result<Vec<String>, Failed> {
    let top = match tx
        .row_opt("SELECT id FROM runs WHERE id = $1", &[&id])
        .await?
    {
        Some(row) => row.try_get::<_, String>(0)?,
        None => {
            let escaped = id
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            let found = tx
                .rows(
                    "SELECT id FROM runs WHERE id LIKE $1 || '%' ESCAPE '\\' ORDER BY id LIMIT 2",
                    &[&escaped],
                )
                .await?;
            match found.as_slice() {
                [one] => one.try_get::<_, String>(0)?,
                [] => return Err(StoreError::NotFound(id.to_string()).into()),
                _ => {
                    return Err(StoreError::Refused(
                        Refusal::AmbiguousId,
                        format!("'{id}' is the start of more than one run id; give more of it"),
                    )
                    .into());
                }
            }
        }
    };
    let rows = tx
        .rows(
            "WITH RECURSIVE tree(id) AS (
                 SELECT $1::text
                 UNION
                 SELECT r.id FROM runs r JOIN tree ON r.parent_run_id = tree.id
             )
             SELECT id FROM tree",
            &[&top],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?)
}

/// The top run of the tree `run_id` is in.
async fn root_of(tx: &Transaction<'_>, run_id: &str) -> Result<String, Failed> {
    let row = tx
        .row_opt(
            "WITH RECURSIVE up(id, parent) AS (
                 SELECT id, parent_run_id FROM runs WHERE id = $1
                 UNION
                 SELECT r.id, r.parent_run_id FROM runs r JOIN up ON r.id = up.parent
             )
             SELECT id FROM up WHERE parent IS NULL",
            &[&run_id],
        )
        .await?;
    match row {
        Some(row) => Ok(row.try_get(0)?),
        // A parent that is not there (SQLite's walk up fails the same way).
        None => Err(StoreError::NotFound(run_id.to_string()).into()),
    }
}
