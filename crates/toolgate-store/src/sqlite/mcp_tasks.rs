//! MCP tasks on SQLite: created with their run, read by id, listed per tenant and agent
//! in creation order, and taken out once expired (deleted and returned in one
//! transaction, so that one reaper acts on each).

use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::runs::RunsError;
use crate::mcp_tasks::{COLUMNS, McpTask, TaskPage};

fn from_row(r: &Row<'_>) -> rusqlite::Result<McpTask> {
    Ok(McpTask {
        id: r.get(0)?,
        run_id: r.get(1)?,
        tenant: r.get(2)?,
        agent: r.get(3)?,
        created_at: r.get(4)?,
        ttl_ms: r.get(5)?,
    })
}

impl SqliteStore {
    /// Stores a new task.
    pub async fn create_mcp_task(&self, task: McpTask) -> Result<(), RunsError> {
        self.transact(move |tx| {
            tx.execute(
                "INSERT INTO mcp_tasks (id, run_id, tenant, agent, created_at, ttl_ms, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![task.id, task.run_id, task.tenant, task.agent, task.created_at, task.ttl_ms, task.expires_at()],
            )?;
            Ok(())
        })
        .await
    }

    /// Task `id`, if it is kept.
    pub fn mcp_task(&self, id: &str) -> Result<Option<McpTask>, RunsError> {
        self.read_runs(|conn| {
            let sql = format!("SELECT {COLUMNS} FROM mcp_tasks WHERE id = ?1");
            Ok(conn.query_row(&sql, [id], from_row).optional()?)
        })
    }

    /// One page of a tenant's tasks of one agent, oldest first.
    pub fn mcp_tasks(&self, page: &TaskPage) -> Result<Vec<McpTask>, RunsError> {
        let (at, id) = page.after.clone().unwrap_or((i64::MIN, String::new()));
        self.read_runs(|conn| {
            let sql = format!(
                "SELECT {COLUMNS} FROM mcp_tasks WHERE tenant = ?1 AND agent = ?2 AND (created_at, id) > (?3, ?4) ORDER BY created_at, id LIMIT ?5"
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt
                .query_map(
                    params![page.tenant, page.agent, at, id, page.limit],
                    from_row,
                )?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
    }

    /// Deletes the tasks expired at `now` (unix milliseconds) and returns them.
    pub async fn take_expired_mcp_tasks(&self, now: i64) -> Result<Vec<McpTask>, RunsError> {
        self.transact(move |tx| {
            let sql = format!("DELETE FROM mcp_tasks WHERE expires_at <= ?1 RETURNING {COLUMNS}");
            let mut stmt = tx.prepare(&sql)?;
            let rows = stmt
                .query_map([now], from_row)?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
        .await
    }
}
