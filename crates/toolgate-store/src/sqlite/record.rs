//! One call record: who called which tool with what, how it ended and how long it took.

use rusqlite::{Row, Statement, params};
use serde_json::Value;

pub use crate::model::{CallRecord, StoredCall};
use toolgate_protocol::{CallStatus, CallerKind, ErrorKind};

pub(crate) const INSERT: &str = "INSERT INTO tool_calls (call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms, replaced, attempts, cached) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)";

pub(crate) const COLUMNS: &str = "id, call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms, replaced, attempts, cached";

pub(crate) fn insert(stmt: &mut Statement<'_>, r: &CallRecord) -> rusqlite::Result<()> {
    stmt.execute(params![
        r.call_id,
        r.run_id,
        r.conversation_id,
        r.agent,
        r.caller.as_str(),
        r.tool,
        r.arguments.to_string(),
        r.result,
        r.result_size as i64,
        r.status.as_str(),
        r.error_kind.map(ErrorKind::as_str),
        r.error_message,
        r.started_at,
        r.duration_ms,
        r.replaced,
        crate::model::Attempt::to_column(&r.attempts),
        r.cached,
    ])?;
    Ok(())
}

pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<StoredCall> {
    let caller: String = row.get(5)?;
    let arguments: String = row.get(7)?;
    let status: String = row.get(10)?;
    let size: i64 = row.get(9)?;
    Ok(StoredCall {
        id: row.get(0)?,
        record: CallRecord {
            call_id: row.get(1)?,
            run_id: row.get(2)?,
            conversation_id: row.get(3)?,
            agent: row.get(4)?,
            caller: caller.parse().unwrap_or(CallerKind::Agent),
            tool: row.get(6)?,
            arguments: serde_json::from_str(&arguments).unwrap_or(Value::String(arguments)),
            result: row.get(8)?,
            result_size: size.max(0) as usize,
            status: status.parse().unwrap_or(CallStatus::Failed),
            error_kind: crate::model::error_kind_of(row.get(11)?),
            error_message: row.get(12)?,
            started_at: row.get(13)?,
            duration_ms: row.get(14)?,
            replaced: row.get(15)?,
            attempts: crate::model::Attempt::from_column(row.get(16)?),
            cached: row.get(17)?,
        },
    })
}
