//! The run object front ends read, made from a stored run and its pending items.

use super::RunState;
use toolgate_protocol::{RequiredAction, RunObject, RunStatus};
use toolgate_store::{PendingRow, RunRow};

/// The run object of a stored run.
pub fn run_object(row: &RunRow, pending: &[PendingRow]) -> RunObject {
    let state: Option<RunState> = serde_json::from_str(&row.state).ok();
    let items: Vec<_> = pending
        .iter()
        .filter(|p| p.state == toolgate_store::PendingState::Waiting)
        .map(|p| p.item.clone())
        .collect();
    RunObject {
        id: row.id.clone(),
        object: "run".into(),
        conversation_id: row.conversation_id.clone(),
        agent: row.agent.clone(),
        model: state
            .as_ref()
            .map(|s| crate::agent::shown_model(&s.model))
            .unwrap_or_default(),
        status: row.status,
        iteration: row.iteration,
        max_iterations: state.as_ref().map_or(0, |s| s.max_iterations),
        required_action: (row.status == RunStatus::RequiresAction)
            .then_some(RequiredAction { items }),
        last_error: row.last_error.clone(),
        output: state.as_ref().and_then(|s| s.output.clone()),
        usage: state.as_ref().map(|s| s.usage).unwrap_or_default(),
        created_at: row.created_at,
        updated_at: row.updated_at,
        parent_run_id: row.parent_run_id.clone(),
        parent_call_id: row.parent_call_id.clone(),
        tenant: row.tenant.clone(),
        started_by: row.started_by.clone(),
        files: state.map(|s| s.files).unwrap_or_default(),
    }
}
