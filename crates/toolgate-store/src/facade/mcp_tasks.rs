//! MCP tasks through the facade: each answered by the backend.

use super::super::{Backend, McpTask, Store, StoreError, TaskPage};

impl Store {
    /// Stores a new MCP task.
    pub async fn create_mcp_task(&self, task: McpTask) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.create_mcp_task(task).await?),
            Backend::Postgres(s) => s.create_mcp_task(task).await,
        }
    }

    /// MCP task `id`, if it is kept (expired tasks are taken out by
    /// [`Store::take_expired_mcp_tasks`]).
    pub async fn mcp_task(&self, id: &str) -> Result<Option<McpTask>, StoreError> {
        let id = id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.mcp_task(&id)).await,
            Backend::Postgres(s) => s.mcp_task(&id).await,
        }
    }

    /// One page of a tenant's MCP tasks of one agent, oldest first.
    pub async fn mcp_tasks(&self, page: TaskPage) -> Result<Vec<McpTask>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.mcp_tasks(&page)).await,
            Backend::Postgres(s) => s.mcp_tasks(page).await,
        }
    }

    /// Deletes the MCP tasks expired at `now` (unix milliseconds) and returns them;
    /// of several processes asking at once, each task goes to one.
    pub async fn take_expired_mcp_tasks(&self, now: i64) -> Result<Vec<McpTask>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.take_expired_mcp_tasks(now).await?),
            Backend::Postgres(s) => s.take_expired_mcp_tasks(now).await,
        }
    }
}
