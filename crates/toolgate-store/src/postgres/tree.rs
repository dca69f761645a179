//! Trees of runs on PostgreSQL: a paused run's items with those waiting below it (read
//! by `run_rows`), and a tree's execution summary (calls, outcomes, tokens and
//! time per run and per tool, with totals that include the children), read from each
//! run's running totals plus its records not folded into them yet, in one round trip.

use std::collections::HashMap;

use deadpool_postgres::GenericClient;

use super::rows::{RUN_COLUMNS, get, run_from_row};
use super::{PgStore, StoreError};
use crate::summary::{RunCalls, join_tree, run_node};
use crate::{PendingRow, RunRow};
use toolgate_protocol::RunTree;

/// The run `$1` and every run below it.
const TREE: &str = "WITH RECURSIVE tree(id) AS (
    SELECT id FROM runs WHERE id = $1
    UNION ALL
    SELECT r.id FROM runs r JOIN tree ON r.parent_run_id = tree.id
)";

impl PgStore {
    /// A run's own pending items (in the order they were added), then (while it is
    /// paused) those waiting below it: [`super::run_rows::pending_with_below`].
    pub(super) async fn pending_with_below(
        &self,
        client: &impl GenericClient,
        run: &RunRow,
    ) -> Result<Vec<PendingRow>, StoreError> {
        super::run_rows::pending_with_below(client, self, run).await
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
