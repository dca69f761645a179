//! MCP tasks (protocol 2025-11-25) as the store keeps them: a task names the single-call
//! run its task-augmented `tools/call` started, whose tenant and agent it belongs to,
//! and how long it is kept. Its status is the run's (read from the run), so nothing here
//! can disagree with it.

/// One MCP task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpTask {
    /// The task id the client holds (`task_...`, unguessable).
    pub id: String,
    /// The single-call run the task follows.
    pub run_id: String,
    pub tenant: String,
    /// The agent whose gateway made it (`/mcp/{agent}`, `toolgate mcp --agent`).
    pub agent: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// How long the task is kept after it was created, in milliseconds (its `ttl`).
    pub ttl_ms: i64,
}

impl McpTask {
    /// When the task expires (unix milliseconds).
    pub fn expires_at(&self) -> i64 {
        self.created_at.saturating_add(self.ttl_ms)
    }
}

/// Where a listing of one tenant's tasks of one agent starts.
#[derive(Debug, Clone, Default)]
pub struct TaskPage {
    pub tenant: String,
    pub agent: String,
    /// After this task (its `created_at` and id), in creation order.
    pub after: Option<(i64, String)>,
    pub limit: u32,
}

/// The columns a task is read from, in [`McpTask`]'s order.
pub(crate) const COLUMNS: &str = "id, run_id, tenant, agent, created_at, ttl_ms";
