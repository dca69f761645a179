//! Calls run outside a run's loop (`toolgate tools call`, programs using the engine on
//! its own): their records committed, then counted. A run commits its records with the
//! step that made them instead (`save.rs`).

use crate::engine::CallOutcome;
use toolgate_protocol::ErrorKind;
use toolgate_store::{Store, StoreError};
use toolgate_tool::ToolError;

/// Commits the records of `outcomes` and returns the outcomes once they are committed
/// (the records come back from the store, not copied).
pub async fn commit_outcomes(
    store: &Store,
    outcomes: Vec<CallOutcome>,
) -> Result<Vec<CallOutcome>, StoreError> {
    let (heads, records): (Vec<_>, Vec<_>) = outcomes
        .into_iter()
        .map(|o| ((o.call_id, o.tool, o.status, o.result), o.record))
        .unzip();
    let records = store.commit_records(records).await?;
    for (r, (_, _, _, result)) in records.iter().zip(&heads) {
        // The engine's callers name tools themselves: a tool it found is known.
        let known = !matches!(result, Err(ToolError::NotFound { .. }));
        toolgate_telemetry::metrics::call_recorded(
            &r.tool,
            known,
            r.status,
            r.error_kind.map(ErrorKind::as_str),
        );
    }
    Ok(heads
        .into_iter()
        .zip(records)
        .map(|((call_id, tool, status, result), record)| CallOutcome {
            call_id,
            tool,
            status,
            result,
            record,
        })
        .collect())
}
