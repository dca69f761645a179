//! The rows a run's save writes on PostgreSQL besides the run's own: its new pending
//! items, their state changes (the executing fence), the step's call records and the
//! conversation's new messages, each kind in one statement over arrays (`unnest`), in
//! the save's transaction.

use deadpool_postgres::GenericClient;
use tokio_postgres::error::SqlState;

use super::prepared::Prepared;
use super::run_rows::OrStore;
use super::{PgStore, StoreError};
use crate::{CallRecord, PendingState, Refusal};
use toolgate_protocol::RequiredItem;

/// Appends messages to the conversation of run `run_id`, the first at `first_seq` (one
/// statement for them all). A position already taken means two runs wrote the same
/// conversation: refused.
pub(super) async fn append_messages(
    tx: &impl GenericClient,
    s: &PgStore,
    run_id: &str,
    first_seq: usize,
    messages: &[String],
) -> Result<(), StoreError> {
    if messages.is_empty() {
        return Ok(());
    }
    let seqs: Vec<i64> = (0..messages.len())
        .map(|i| i64::try_from(first_seq + i).unwrap_or(i64::MAX))
        .collect();
    tx.exec(
        "INSERT INTO messages (conversation_id, seq, run_id, message)
         SELECT r.conversation_id, m.seq, r.id, m.message
         FROM runs r, unnest($2::bigint[], $3::text[]) WITH ORDINALITY AS m(seq, message, n)
         WHERE r.id = $1 ORDER BY m.n",
        &[&run_id, &seqs, &messages],
    )
    .await
    .map_err(|e| {
        if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
            StoreError::Refused(
                Refusal::ConversationBusy,
                format!("run {run_id}: its conversation was changed by another run meanwhile"),
            )
        } else {
            s.error(e)
        }
    })?;
    Ok(())
}

/// Adds a save's new pending items (waiting), in their order, in one statement.
pub(super) async fn add_pending(
    tx: &impl GenericClient,
    s: &PgStore,
    run_id: &str,
    items: &[RequiredItem],
    now: i64,
) -> Result<(), StoreError> {
    if items.is_empty() {
        return Ok(());
    }
    let column = |f: fn(&RequiredItem) -> Option<String>| items.iter().map(f).collect::<Vec<_>>();
    let call_ids = column(|i| Some(i.call_id.clone()));
    let kinds = column(|i| Some(i.kind.as_str().to_string()));
    let tools = column(|i| Some(i.tool.clone()));
    let arguments = column(|i| Some(i.arguments.to_string()));
    let reasons = column(|i| i.reason.clone());
    let on_timeout = column(|i| i.on_timeout.map(|t| t.as_str().to_string()));
    let policies = column(|i| i.policy.clone());
    let expires: Vec<Option<i64>> = items.iter().map(|i| i.expires_at).collect();
    tx.exec(
        "INSERT INTO pending (run_id, call_id, kind, tool, arguments, reason, expires_at, on_timeout, policy, requested_at)
         SELECT $1, p.call_id, p.kind, p.tool, p.arguments, p.reason, p.expires_at, p.on_timeout, p.policy, $10
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[])
              WITH ORDINALITY AS p(call_id, kind, tool, arguments, reason, expires_at, on_timeout, policy, n)
         ORDER BY p.n",
        &[
            &run_id, &call_ids, &kinds, &tools, &arguments, &reasons, &expires, &on_timeout,
            &policies, &now,
        ],
    )
    .await
    .or_store(s)?;
    Ok(())
}

/// Moves pending items to new states (`executing`: the at-most-once fence), in one
/// statement.
pub(super) async fn set_pending(
    tx: &impl GenericClient,
    s: &PgStore,
    run_id: &str,
    changes: &[(String, PendingState)],
) -> Result<(), StoreError> {
    if changes.is_empty() {
        return Ok(());
    }
    let call_ids: Vec<&str> = changes.iter().map(|(c, _)| c.as_str()).collect();
    let states: Vec<&str> = changes.iter().map(|(_, st)| st.as_str()).collect();
    tx.exec(
        "UPDATE pending p SET state = u.state
         FROM unnest($2::text[], $3::text[]) AS u(call_id, state)
         WHERE p.run_id = $1 AND p.call_id = u.call_id",
        &[&run_id, &call_ids, &states],
    )
    .await
    .or_store(s)?;
    Ok(())
}

/// Writes call records in the transaction of the save that ran them (one statement).
pub(super) async fn insert_records(
    tx: &impl GenericClient,
    s: &PgStore,
    records: &[CallRecord],
) -> Result<(), StoreError> {
    if records.is_empty() {
        return Ok(());
    }
    let text = |f: fn(&CallRecord) -> Option<String>| records.iter().map(f).collect::<Vec<_>>();
    let call_ids = text(|r| Some(r.call_id.clone()));
    let run_ids = text(|r| r.run_id.clone());
    let conversations = text(|r| Some(r.conversation_id.clone()));
    let agents = text(|r| r.agent.clone());
    let callers = text(|r| Some(r.caller.as_str().to_string()));
    let tools = text(|r| Some(r.tool.clone()));
    let arguments = text(|r| Some(r.arguments.to_string()));
    let results = text(|r| r.result.clone());
    let statuses = text(|r| Some(r.status.as_str().to_string()));
    let error_kinds = text(|r| r.error_kind.map(|k| k.as_str().to_string()));
    let error_messages = text(|r| r.error_message.clone());
    let sizes: Vec<i64> = records
        .iter()
        .map(|r| i64::try_from(r.result_size).unwrap_or(i64::MAX))
        .collect();
    let started: Vec<i64> = records.iter().map(|r| r.started_at).collect();
    let durations: Vec<f64> = records.iter().map(|r| r.duration_ms).collect();
    let replaced: Vec<bool> = records.iter().map(|r| r.replaced).collect();
    let attempts = text(|r| crate::model::Attempt::to_column(&r.attempts));
    let cached: Vec<Option<bool>> = records.iter().map(|r| r.cached).collect();
    tx.exec(
        "INSERT INTO tool_calls (call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms, replaced, attempts, cached)
         SELECT c.call_id, c.run_id, c.conversation_id, c.agent, c.caller, c.tool, c.arguments, c.result, c.result_size, c.status, c.error_kind, c.error_message, c.started_at, c.duration_ms, c.replaced, c.attempts, c.cached
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                     $9::bigint[], $10::text[], $11::text[], $12::text[], $13::bigint[], $14::float8[], $15::bool[], $16::text[], $17::bool[])
              WITH ORDINALITY AS c(call_id, run_id, conversation_id, agent, caller, tool, arguments, result,
                                   result_size, status, error_kind, error_message, started_at, duration_ms, replaced, attempts, cached, n)
         ORDER BY c.n",
        &[
            &call_ids, &run_ids, &conversations, &agents, &callers, &tools, &arguments, &results,
            &sizes, &statuses, &error_kinds, &error_messages, &started, &durations, &replaced, &attempts, &cached,
        ],
    )
    .await
    .or_store(s)?;
    Ok(())
}
