//! Trees of runs on PostgreSQL: the items waiting anywhere below a paused run (with the
//! path of run ids to each), and a tree's execution summary (calls, outcomes, tokens and
//! time per run and per tool, with totals that include the children), read from each
//! run's running totals plus its records not folded into them yet, in one round trip.

use std::collections::HashMap;

use deadpool_postgres::GenericClient;

use super::rows::{
    PENDING_COLUMNS, PENDING_COUNT, PENDING_ORDER, RUN_COLUMNS, get, pending_from_row, run_from_row,
};
use super::{PgStore, StoreError};
use crate::summary::{RunCalls, join_tree, run_node};
use crate::{PendingRow, RunRow};
use toolgate_protocol::{RunStatus, RunTree};

/// The runs below `$1`, each with the path of run ids from `$1`'s child down to it.
const BELOW: &str = "WITH RECURSIVE below(id, path) AS (
    SELECT id, id FROM runs WHERE parent_run_id = $1
    UNION ALL
    SELECT r.id, below.path || ' ' || r.id FROM runs r JOIN below ON r.parent_run_id = below.id
)";

/// The run `$1` and every run below it.
const TREE: &str = "WITH RECURSIVE tree(id) AS (
    SELECT id FROM runs WHERE id = $1
    UNION ALL
    SELECT r.id FROM runs r JOIN tree ON r.parent_run_id = tree.id
)";

impl PgStore {
    /// A run's own pending items (in the order they were added), then (while it is
    /// paused) those waiting below it.
    pub(super) async fn pending_with_below(
        &self,
        client: &impl GenericClient,
        run: &RunRow,
    ) -> Result<Vec<PendingRow>, StoreError> {
        let sql = format!(
            "SELECT {PENDING_COLUMNS} FROM pending WHERE run_id = $1 ORDER BY {PENDING_ORDER}"
        );
        let mut pending = self
            .rows(client, &sql, &[&run.id])
            .await?
            .iter()
            .map(pending_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        if run.status == RunStatus::RequiresAction {
            pending.extend(self.waiting_below(client, &run.id).await?);
        }
        Ok(pending)
    }

    /// The items waiting in paused runs below `run_id`, each with the run holding it
    /// and the path to that run from `run_id` (included).
    async fn waiting_below(
        &self,
        client: &impl GenericClient,
        run_id: &str,
    ) -> Result<Vec<PendingRow>, StoreError> {
        if !super::run_rows::has_runs_below(client, self, run_id).await? {
            return Ok(Vec::new());
        }
        let columns = PENDING_COLUMNS
            .split(", ")
            .map(|c| format!("p.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "{BELOW} SELECT {columns}, below.id, below.path
             FROM below JOIN runs r ON r.id = below.id JOIN pending p ON p.run_id = below.id
             WHERE r.status = 'requires_action' AND p.state = 'waiting'
             ORDER BY r.depth, r.created_at, p.{PENDING_ORDER}"
        );
        let rows = self.rows(client, &sql, &[&run_id]).await?;
        rows.iter()
            .map(|row| {
                let mut p = pending_from_row(row)?;
                let holder: String = get(row, PENDING_COUNT)?;
                let path: String = get(row, PENDING_COUNT + 1)?;
                p.item.run_id = Some(holder);
                p.item.path = std::iter::once(run_id.to_string())
                    .chain(path.split(' ').map(str::to_string))
                    .collect();
                Ok(p)
            })
            .collect()
    }

    /// The execution summary of `run_id` (an id or a unique prefix) and every run below.
    pub async fn run_tree(&self, run_id: &str) -> Result<RunTree, StoreError> {
        let id = run_id.to_string();
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            if let Some(tree) = s.tree_of(&client, &id).await? {
                return Ok(tree);
            }
            // Not an id: a prefix of one.
            let top = s.find_run(&client, &id).await?;
            s.tree_of(&client, &top.id)
                .await?
                .ok_or(StoreError::NotFound(id))
        })
        .await
    }

    /// The tree whose top run has the id `id` (`None`: no such run), its runs and
    /// their calls read at once.
    async fn tree_of(
        &self,
        client: &impl GenericClient,
        id: &str,
    ) -> Result<Option<RunTree>, StoreError> {
        let runs = format!(
            "{TREE} SELECT {RUN_COLUMNS} FROM runs WHERE id IN (SELECT id FROM tree) ORDER BY depth, created_at, added"
        );
        let calls = format!(
            "{TREE}, m AS (SELECT folded_to FROM totals_mark WHERE id = 1)
             SELECT 0, run_id, tool, status, calls, total_ms FROM run_totals
             WHERE run_id IN (SELECT id FROM tree)
             UNION ALL
             SELECT 1, run_id, tool, status, count(*), coalesce(sum(duration_ms), 0) FROM tool_calls
             WHERE run_id IN (SELECT id FROM tree) AND xact >= (SELECT folded_to FROM m)
             GROUP BY run_id, tool, status"
        );
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&id];
        let (runs, calls) = tokio::try_join!(
            self.rows(client, &runs, &params),
            self.rows(client, &calls, &params)
        )?;
        let mut rows = runs
            .iter()
            .map(run_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let Some(at) = rows.iter().position(|r| r.id == id) else {
            return Ok(None);
        };
        rows.swap(0, at);
        // The totals first, then the records not folded yet (as SQLite adds them).
        let mut parts = calls
            .iter()
            .map(|row| {
                Ok((
                    get::<i32>(row, 0)?,
                    get::<String>(row, 1)?,
                    (get::<String>(row, 2)?, get::<String>(row, 3)?),
                    (
                        u64::try_from(get::<i64>(row, 4)?).unwrap_or(0),
                        get::<f64>(row, 5)?,
                    ),
                ))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        parts.sort_by_key(|(part, ..)| *part);
        let mut by_run: HashMap<String, RunCalls> = HashMap::new();
        for (_, run, key, (n, ms)) in parts {
            let e = by_run.entry(run).or_default().entry(key).or_default();
            e.0 += n;
            e.1 += ms;
        }
        let nodes = rows
            .iter()
            .map(|row| {
                let calls = by_run.remove(&row.id).unwrap_or_default();
                (row.id.clone(), run_node(row, calls))
            })
            .collect();
        Ok(join_tree(&rows, nodes))
    }

    /// The trees of the top runs of a conversation, oldest first.
    pub async fn conversation_trees(&self, conversation: &str) -> Result<Vec<RunTree>, StoreError> {
        let conversation = conversation.to_string();
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let ids = s
                .rows(
                    &client,
                    "SELECT id FROM runs WHERE conversation_id = $1 AND parent_run_id IS NULL ORDER BY created_at, added",
                    &[&conversation],
                )
                .await?;
            let mut trees = Vec::with_capacity(ids.len());
            for row in &ids {
                let id: String = get(row, 0)?;
                trees.push(
                    s.tree_of(&client, &id)
                        .await?
                        .ok_or(StoreError::NotFound(id))?,
                );
            }
            Ok(trees)
        })
        .await
    }
}
