//! Responses of the OpenAI Responses-compatible endpoint: each response id mapped to
//! its run and step, with the response object as last returned; and the call records a
//! response reads its `mcp_call` outputs from.

use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::record::{COLUMNS, CallRecord, from_row};
use super::runs::RunsError;
use toolgate_protocol::clock::now_ms;

/// A response as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseRow {
    /// `resp_...`
    pub id: String,
    pub run_id: String,
    /// 0 for the response that started the run, then one more per continuation.
    pub step: u32,
    /// The `previous_response_id` this response continued.
    pub previous_id: Option<String>,
    /// The response's status (`in_progress`, `completed`, `incomplete`, `failed`,
    /// `cancelled`).
    pub status: String,
    /// The response object, JSON.
    pub body: String,
    /// Unix milliseconds.
    pub created_at: i64,
    pub updated_at: i64,
}

fn response_from_row(row: &Row<'_>) -> rusqlite::Result<ResponseRow> {
    Ok(ResponseRow {
        id: row.get(0)?,
        run_id: row.get(1)?,
        step: row.get(2)?,
        previous_id: row.get(3)?,
        status: row.get(4)?,
        body: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
    })
}

const RESPONSE_COLUMNS: &str =
    "id, run_id, step, previous_id, status, body, created_at, updated_at";

impl SqliteStore {
    /// Records a new response of run `run_id`, at the run's next step, and returns that
    /// step. Refused when the run does not exist.
    /// `input` is the request's input items (a JSON array), kept for `input_items`.
    pub async fn create_response(
        &self,
        id: &str,
        run_id: &str,
        previous_id: Option<&str>,
        status: &str,
        body: String,
        input: String,
    ) -> Result<u32, RunsError> {
        let (id, run_id, previous_id, status) = (
            id.to_string(),
            run_id.to_string(),
            previous_id.map(str::to_string),
            status.to_string(),
        );
        self.transact(move |tx| {
            let exists: bool = tx
                .query_row("SELECT 1 FROM runs WHERE id = ?1", [&run_id], |_| Ok(()))
                .optional()?
                .is_some();
            if !exists {
                return Err(RunsError::NotFound(run_id));
            }
            let step: u32 = tx.query_row(
                "SELECT COALESCE(MAX(step) + 1, 0) FROM responses WHERE run_id = ?1",
                [&run_id],
                |r| r.get(0),
            )?;
            let now = now_ms();
            tx.execute(
                "INSERT INTO responses (id, run_id, step, previous_id, status, body, created_at, updated_at, input) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
                params![id, run_id, step, previous_id, status, body, now, input],
            )?;
            Ok(step)
        })
        .await
    }

    /// Replaces a response's status and body (as it is streamed, and once it ends).
    pub async fn update_response(
        &self,
        id: &str,
        status: &str,
        body: String,
    ) -> Result<(), RunsError> {
        let (id, status) = (id.to_string(), status.to_string());
        self.transact(move |tx| {
            let n = tx.execute(
                "UPDATE responses SET status = ?2, body = ?3, updated_at = ?4 WHERE id = ?1",
                params![id, status, body, now_ms()],
            )?;
            if n == 0 {
                return Err(RunsError::NotFound(id));
            }
            Ok(())
        })
        .await
    }

    /// Deletes one response by its exact id; false when there was none. Its run, the
    /// run's records and the other responses of the run stay.
    pub async fn delete_response(&self, id: &str) -> Result<bool, RunsError> {
        let id = id.to_string();
        self.transact(move |tx| Ok(tx.execute("DELETE FROM responses WHERE id = ?1", [&id])? > 0))
            .await
    }

    /// The input items response `id` was created with (a JSON array), if it exists.
    pub fn response_input(&self, id: &str) -> Result<Option<String>, RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .query_row("SELECT input FROM responses WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .optional()?)
        })
    }

    /// One response by its exact id.
    pub fn response(&self, id: &str) -> Result<Option<ResponseRow>, RunsError> {
        self.read_runs(|conn| {
            let sql = format!("SELECT {RESPONSE_COLUMNS} FROM responses WHERE id = ?1");
            Ok(conn.query_row(&sql, [id], response_from_row).optional()?)
        })
    }

    /// A run's responses, in step order.
    pub fn run_responses(&self, run_id: &str) -> Result<Vec<ResponseRow>, RunsError> {
        self.read_runs(|conn| {
            let sql =
                format!("SELECT {RESPONSE_COLUMNS} FROM responses WHERE run_id = ?1 ORDER BY step");
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt
                .query_map([run_id], response_from_row)?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
    }

    /// The committed records of some calls of a run, in the order they were recorded
    /// (calls without a record yet are missing).
    pub fn run_call_records(
        &self,
        run_id: &str,
        call_ids: &[String],
    ) -> Result<Vec<CallRecord>, RunsError> {
        if call_ids.is_empty() {
            return Ok(Vec::new());
        }
        self.read_runs(|conn| {
            let sql = format!(
                "SELECT {COLUMNS} FROM tool_calls WHERE run_id = ?1 AND call_id IN (SELECT value FROM json_each(?2)) ORDER BY id"
            );
            let ids = serde_json::Value::from(call_ids.to_vec()).to_string();
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt
                .query_map(params![run_id, ids], from_row)?
                .map(|r| r.map(|s| s.record))
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
    }
}
