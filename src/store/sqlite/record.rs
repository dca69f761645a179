//! One call record: who called which tool with what, how it ended and how long it took.

use rusqlite::{Row, Statement, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{CallStatus, CallerKind};

/// Bytes of a result kept in the record (the tools' own output cap, so a result is kept
/// whole: `read_result` pages through it when the model saw it cut); the full size is
/// kept beside it.
pub const RESULT_CAP: usize = 1024 * 1024;

/// A call as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CallRecord {
    pub call_id: String,
    pub run_id: Option<String>,
    pub conversation_id: String,
    pub agent: Option<String>,
    pub caller: CallerKind,
    pub tool: String,
    /// Secret parameters already redacted.
    pub arguments: Value,
    /// The result as text, cut at [`RESULT_CAP`] bytes.
    pub result: Option<String>,
    /// The result's full size in bytes.
    pub result_size: usize,
    pub status: CallStatus,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    /// Unix milliseconds.
    pub started_at: i64,
    pub duration_ms: f64,
    /// An `after_result` hook replaced (or withheld) what the model saw; `result` is
    /// still what the tool returned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaced: bool,
}

impl CallRecord {
    /// Sets the result, keeping at most [`RESULT_CAP`] bytes (on a character boundary).
    pub fn set_result(&mut self, text: &str) {
        let cut = cap_at(text);
        self.result_size = text.len();
        self.result = Some(text[..cut].to_string());
    }

    /// [`CallRecord::set_result`], keeping `text` (cut to the cap) rather than copying it.
    pub fn set_result_text(&mut self, mut text: String) {
        self.result_size = text.len();
        let cut = cap_at(&text);
        if cut < text.len() {
            text.truncate(cut);
            text.shrink_to_fit();
        }
        self.result = Some(text);
    }
}

/// Where [`RESULT_CAP`] cuts `text` (on a character boundary).
fn cap_at(text: &str) -> usize {
    let mut cut = text.len().min(RESULT_CAP);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// A record read back, with its record id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StoredCall {
    pub id: i64,
    #[serde(flatten)]
    pub record: CallRecord,
}

pub(crate) const INSERT: &str = "INSERT INTO tool_calls (call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms, replaced) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

pub(crate) const COLUMNS: &str = "id, call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms, replaced";

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
        r.error_kind,
        r.error_message,
        r.started_at,
        r.duration_ms,
        r.replaced,
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
            caller: match caller.as_str() {
                "user" => CallerKind::User,
                "workflow" => CallerKind::Workflow,
                _ => CallerKind::Agent,
            },
            tool: row.get(6)?,
            arguments: serde_json::from_str(&arguments).unwrap_or(Value::String(arguments)),
            result: row.get(8)?,
            result_size: size.max(0) as usize,
            status: CallStatus::parse(&status).unwrap_or(CallStatus::Failed),
            error_kind: row.get(11)?,
            error_message: row.get(12)?,
            started_at: row.get(13)?,
            duration_ms: row.get(14)?,
            replaced: row.get(15)?,
        },
    })
}
