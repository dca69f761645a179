//! MCP tasks on PostgreSQL: created with their run, read by id, listed per tenant and
//! agent in creation order, and taken out once expired (`DELETE ... RETURNING`: of
//! several workers reaping at once, one acts on each task).

use tokio_postgres::Row;

use super::{PgStore, StoreError};
use crate::mcp_tasks::{COLUMNS, McpTask, TaskPage};

fn from_row(r: &Row) -> Result<McpTask, tokio_postgres::Error> {
    Ok(McpTask {
        id: r.try_get(0)?,
        run_id: r.try_get(1)?,
        tenant: r.try_get(2)?,
        agent: r.try_get(3)?,
        created_at: r.try_get(4)?,
        ttl_ms: r.try_get(5)?,
    })
}

impl PgStore {
    /// Stores a new task.
    pub async fn create_mcp_task(&self, task: McpTask) -> Result<(), StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            client
                .execute(
                    "INSERT INTO mcp_tasks (id, run_id, tenant, agent, created_at, ttl_ms, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    &[&task.id, &task.run_id, &task.tenant, &task.agent, &task.created_at, &task.ttl_ms, &task.expires_at()],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(())
        })
        .await
    }

    /// Task `id`, if it is kept.
    pub async fn mcp_task(&self, id: &str) -> Result<Option<McpTask>, StoreError> {
        let id = id.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM mcp_tasks WHERE id = $1"),
                    &[&id],
                )
                .await
                .map_err(|e| s.error(e))?;
            row.map(|r| from_row(&r))
                .transpose()
                .map_err(|e| s.error(e))
        })
        .await
    }

    /// One page of a tenant's tasks of one agent, oldest first.
    pub async fn mcp_tasks(&self, page: TaskPage) -> Result<Vec<McpTask>, StoreError> {
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let (at, id) = page.after.unwrap_or((i64::MIN, String::new()));
            let rows = client
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM mcp_tasks WHERE tenant = $1 AND agent = $2 AND (created_at, id) > ($3, $4) ORDER BY created_at, id LIMIT $5"
                    ),
                    &[&page.tenant, &page.agent, &at, &id, &i64::from(page.limit)],
                )
                .await
                .map_err(|e| s.error(e))?;
            rows.iter()
                .map(from_row)
                .collect::<Result<_, _>>()
                .map_err(|e| s.error(e))
        })
        .await
    }

    /// Deletes the tasks expired at `now` (unix milliseconds) and returns them.
    pub async fn take_expired_mcp_tasks(&self, now: i64) -> Result<Vec<McpTask>, StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let rows = client
                .query(
                    &format!("DELETE FROM mcp_tasks WHERE expires_at <= $1 RETURNING {COLUMNS}"),
                    &[&now],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            rows.iter()
                .map(from_row)
                .collect::<Result<_, _>>()
                .map_err(|e| s.error(e))
        })
        .await
    }
}
