//! Tasks end by their TTL: expired tasks are taken out of the store (of several
//! processes on one database, one takes each), and a call still waiting or running then
//! is cancelled, so it never runs for a client that stopped following it.

use std::sync::Arc;
use std::time::Duration;

use super::super::{Gateway, cancel};
use toolgate_protocol::RunStatus;
use toolgate_protocol::clock::now_ms;
use toolgate_store::McpTask;

/// How often expired tasks are looked for.
const EVERY: Duration = Duration::from_secs(2);

/// Takes out expired tasks for as long as it runs (spawn it; abort it to stop).
pub async fn reap(gateway: Arc<Gateway>) {
    loop {
        tokio::time::sleep(EVERY).await;
        match gateway.runner.store.take_expired_mcp_tasks(now_ms()).await {
            Ok(expired) => {
                for task in expired {
                    end(&gateway, &task).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot look for expired MCP tasks"),
        }
    }
}

/// Ends an expired task's run if it has not ended.
async fn end(gateway: &Gateway, task: &McpTask) {
    let Ok(run) = gateway.runner.get(&task.run_id).await else {
        return;
    };
    if !matches!(
        run.status,
        RunStatus::RequiresAction | RunStatus::InProgress
    ) {
        return;
    }
    let why = format!("MCP task {} expired (ttl {} ms)", task.id, task.ttl_ms);
    if let Err(e) = cancel::cancel_run(gateway, &task.run_id, &why).await {
        tracing::info!(task_id = %task.id, error = %e, "expired task's run ended otherwise");
    }
}
