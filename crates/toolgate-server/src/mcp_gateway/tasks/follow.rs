//! `tasks/result`'s wait: a task's run followed through the store's change feed until
//! the task ends, each status on the way told to the client. A decision recorded
//! without continuing the run (`--no-resume`) is carried on here after a moment.

use std::time::{Duration, Instant};

use super::door::{Notes, Tasks};
use super::wire::{RpcError, TaskStatus, status_note, task_json};
use toolgate_protocol::{RunObject, RunStatus};
use toolgate_store::McpTask;

/// How long a decision is left to its decider before the wait continues the run.
const DECIDER_GRACE: Duration = Duration::from_millis(500);

/// How long the wait trusts the change feed before it reads the run again anyway.
const RECHECK: Duration = Duration::from_secs(30);

/// Follows `task` to its end and returns its run then.
pub(super) async fn to_end(
    tasks: &Tasks,
    task: &McpTask,
    notes: &Notes,
) -> Result<RunObject, RpcError> {
    let runner = &tasks.gateway.runner;
    // Subscribed before the first read, so that no change falls between the two.
    let mut changes = runner.store.watch();
    let mut told: Option<TaskStatus> = None;
    let mut decided_since: Option<Instant> = None;
    loop {
        let (run, status, message) = tasks.state(task).await?;
        if told != Some(status) {
            notes(status_note(task_json(
                task,
                status,
                message,
                run.updated_at,
            )));
            told = Some(status);
        }
        if status.is_terminal() {
            return Ok(run);
        }
        let decided = run.status == RunStatus::RequiresAction
            && run
                .required_action
                .as_ref()
                .is_none_or(|a| a.items.is_empty());
        let mut next = RECHECK;
        if decided {
            let since = *decided_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= DECIDER_GRACE {
                if let Err(e) = runner.resume(&run.id).await {
                    tracing::info!(run_id = %run.id, error = %e, "continued by someone else");
                }
                decided_since = None;
                continue;
            }
            next = DECIDER_GRACE.saturating_sub(since.elapsed());
        } else {
            decided_since = None;
        }
        tokio::select! {
            open = toolgate_store::next_change_of(&mut changes, &run.id) => {
                if !open {
                    tokio::time::sleep(next).await;
                }
            }
            () = tokio::time::sleep(next) => {}
        }
    }
}
