//! Cancelling a single-call run whose client gave up on it (a held call's client went
//! away, an MCP task was cancelled or expired): the run is cancelled, so its call never
//! runs whoever approves it later, and a call that was waiting is recorded `cancelled`.

use super::Gateway;
use toolgate_protocol::CallerKind;
use toolgate_protocol::{CallStatus, ErrorKind};
use toolgate_store::CallRecord;

/// Cancels run `run_id` and records its waiting call (if any) as cancelled because of
/// `why`. An error when the run was decided or ended meanwhile (that stands).
pub(super) async fn cancel_run(gateway: &Gateway, run_id: &str, why: &str) -> Result<(), String> {
    let runner = &gateway.runner;
    let before = runner.get(run_id).await.ok();
    let item = before
        .as_ref()
        .and_then(|r| r.required_action.clone())
        .and_then(|a| a.items.into_iter().next());
    runner
        .cancel(run_id)
        .await
        .map_err(|e| format!("run {run_id}: {e}"))?;
    tracing::info!(run_id, reason = %why, "MCP call cancelled");
    let (Some(item), Some(run)) = (item, before) else {
        return Ok(());
    };
    let record = CallRecord {
        call_id: item.call_id,
        run_id: Some(run_id.to_string()),
        conversation_id: run.conversation_id,
        agent: Some(run.agent),
        caller: CallerKind::Agent,
        tool: item.tool,
        arguments: item.arguments,
        result: None,
        result_size: 0,
        status: CallStatus::Cancelled,
        error_kind: Some(ErrorKind::Cancelled),
        error_message: Some(format!("{why} while the call waited for approval")),
        started_at: jiff::Timestamp::now().as_millisecond(),
        duration_ms: 0.0,
        replaced: false,
        attempts: Vec::new(),
        cached: None,
    };
    if let Err(e) = runner.store.record_calls(vec![record]).await {
        tracing::warn!(run_id, error = %e, "cannot record the cancelled call");
    }
    Ok(())
}
