//! Trees of runs: a sub-agent's run linked to its parent's call, the items waiting
//! anywhere below a paused run (with the path of run ids to each), a cancel that
//! reaches every run below, and the tree's execution summary (calls, outcomes, tokens
//! and time per run and per tool, with totals that include the children), read from
//! each run's running totals plus its records not folded into them yet.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use super::runs::{
    PendingRow, RUN_COLUMNS, RunRow, RunsError, find_run, pending_from_row, run_from_row,
};
use crate::summary::{join_tree, run_node};
use toolgate_protocol::RunTree;

/// The runs below `run_id`, each with the path of run ids from `run_id`'s child down
/// to it, parents before children.
const BELOW: &str = "WITH RECURSIVE below(id, path) AS (
    SELECT id, id FROM runs WHERE parent_run_id = ?1
    UNION ALL
    SELECT r.id, below.path || ' ' || r.id FROM runs r JOIN below ON r.parent_run_id = below.id
)";

/// The items waiting in paused runs below `run_id`, each with the run holding it and
/// the path to that run from `run_id` (included).
///
/// The joins are in the order written (`CROSS JOIN`): from the runs below (most runs
/// have none) to their items. Left to itself, the planner walked every waiting item
/// of the database (the `pending_waiting` index) and matched each against the runs
/// below: a cost that grew with the paused runs of everyone, at every read of a run.
pub(super) fn waiting_below(conn: &Connection, run_id: &str) -> Result<Vec<PendingRow>, RunsError> {
    let sql = format!(
        "{BELOW} SELECT p.call_id, p.kind, p.tool, p.arguments, p.decision, p.state, p.reason, p.expires_at, p.on_timeout, p.policy, below.id, below.path
         FROM below CROSS JOIN runs r ON r.id = below.id CROSS JOIN pending p ON p.run_id = below.id
         WHERE r.status = 'requires_action' AND p.state = 'waiting'
         ORDER BY r.depth, r.created_at, p.rowid"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map([run_id], |row| {
            let mut p = pending_from_row(row)?;
            let holder: String = row.get(super::runs::PENDING_COUNT)?;
            let path: String = row.get(super::runs::PENDING_COUNT + 1)?;
            p.item.run_id = Some(holder);
            p.item.path = std::iter::once(run_id.to_string())
                .chain(path.split(' ').map(str::to_string))
                .collect();
            Ok(p)
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The ids of every run below `run_id`.
pub(super) fn ids_below(conn: &Connection, run_id: &str) -> Result<Vec<String>, RunsError> {
    let mut stmt = conn.prepare_cached(&format!("{BELOW} SELECT id FROM below"))?;
    let rows = stmt
        .query_map([run_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The top of the tree `run` is in.
pub(super) fn root_of(conn: &Connection, mut run: RunRow) -> Result<RunRow, RunsError> {
    // Bounded: a tree is never deeper than its runs.
    for _ in 0..=run.depth {
        let Some(parent) = run.parent_run_id.clone() else {
            return Ok(run);
        };
        run = find_run(conn, &parent)?;
    }
    Ok(run)
}

impl SqliteStore {
    /// The sub-agent run started by `call_id` of `parent_run_id`, if there is one.
    pub fn child_run(
        &self,
        parent_run_id: &str,
        call_id: &str,
    ) -> Result<Option<RunRow>, RunsError> {
        self.read_runs(|conn| {
            let sql = format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE parent_run_id = ?1 AND parent_call_id = ?2"
            );
            Ok(conn
                .query_row(&sql, params![parent_run_id, call_id], run_from_row)
                .optional()?)
        })
    }

    /// The top run of the tree `run_id` is in (the run itself when it is a top run).
    pub fn root_run(&self, run_id: &str) -> Result<RunRow, RunsError> {
        self.read_runs(|conn| {
            let run = find_run(conn, run_id)?;
            root_of(conn, run)
        })
    }

    /// The ids of every run below `run_id` (its sub-agents' runs, theirs, ...).
    pub fn runs_below(&self, run_id: &str) -> Result<Vec<String>, RunsError> {
        self.read_runs(|conn| ids_below(conn, run_id))
    }

    /// The execution summary of `run_id` and every run below it.
    pub fn run_tree(&self, run_id: &str) -> Result<RunTree, RunsError> {
        self.read_runs(|conn| {
            let snapshot = conn.unchecked_transaction()?;
            let top = find_run(&snapshot, run_id)?;
            let mut rows = vec![top.clone()];
            let below = ids_below(&snapshot, &top.id)?;
            for id in &below {
                rows.push(find_run(&snapshot, id)?);
            }
            let mark = super::totals::folded_to(&snapshot)?;
            let mut nodes: HashMap<String, RunTree> = HashMap::new();
            for row in &rows {
                let calls = super::totals::run_totals(&snapshot, &row.id, mark)?;
                nodes.insert(row.id.clone(), run_node(row, calls));
            }
            snapshot.finish()?;
            join_tree(&rows, nodes).ok_or_else(|| RunsError::NotFound(run_id.to_string()))
        })
    }

    /// The trees of the top runs of a conversation, oldest first.
    pub fn conversation_trees(&self, conversation: &str) -> Result<Vec<RunTree>, RunsError> {
        let ids: Vec<String> = self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM runs WHERE conversation_id = ?1 AND parent_run_id IS NULL ORDER BY created_at, rowid",
            )?;
            let rows = stmt.query_map([conversation], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })?;
        ids.iter().map(|id| self.run_tree(id)).collect()
    }
}
