//! Responses of the OpenAI Responses-compatible endpoint on PostgreSQL: each response id
//! mapped to its run and step (steps handed out one at a time per run, however many
//! workers create responses of it at once), with the response object as last returned
//! and the input items it was created with.

use tokio_postgres::Row;

use super::clock::NOW_MS;
use super::{PgStore, StoreError};
use crate::ResponseRow;

const COLUMNS: &str = "id, run_id, step, previous_id, status, body, created_at, updated_at";

/// A response from a row of [`COLUMNS`].
fn from_row(s: &PgStore, row: &Row) -> Result<ResponseRow, StoreError> {
    let read = || -> Result<(ResponseRow, i64), tokio_postgres::Error> {
        Ok((
            ResponseRow {
                id: row.try_get(0)?,
                run_id: row.try_get(1)?,
                step: 0,
                previous_id: row.try_get(3)?,
                status: row.try_get(4)?,
                body: row.try_get(5)?,
                created_at: row.try_get(6)?,
                updated_at: row.try_get(7)?,
            },
            row.try_get(2)?,
        ))
    };
    let (mut response, step) = read().map_err(|e| s.error(e))?;
    response.step = step_of(step, &response.id)?;
    Ok(response)
}

/// A stored step as the `u32` it was written from.
fn step_of(step: i64, id: &str) -> Result<u32, StoreError> {
    u32::try_from(step)
        .map_err(|_| StoreError::Corrupt(format!("response '{id}' has step {step}, not a step")))
}

impl PgStore {
    /// Records a new response of run `run_id`, at the run's next step, and returns that
    /// step. Refused when the run does not exist. `input` is the request's input items
    /// (a JSON array), kept for `input_items`.
    ///
    /// The run's row is locked for the transaction, so that workers creating responses
    /// of one run at once take its steps one after the other.
    pub async fn create_response(
        &self,
        id: &str,
        run_id: &str,
        previous_id: Option<&str>,
        status: &str,
        body: String,
        input: String,
    ) -> Result<u32, StoreError> {
        self.open_for_writes()?;
        let (id, run_id, previous_id, status) = (
            id.to_string(),
            run_id.to_string(),
            previous_id.map(str::to_string),
            status.to_string(),
        );
        self.on_pool(|s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.map_err(|e| s.error(e))?;
            let run = tx
                .query_opt(
                    "SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE",
                    &[&run_id],
                )
                .await
                .map_err(|e| s.error(e))?;
            if run.is_none() {
                return Err(StoreError::NotFound(run_id));
            }
            let step: i64 = tx
                .query_one(
                    "SELECT COALESCE(MAX(step) + 1, 0) FROM responses WHERE run_id = $1",
                    &[&run_id],
                )
                .await
                .and_then(|r| r.try_get(0))
                .map_err(|e| s.error(e))?;
            let step_u32 = step_of(step, &id)?;
            tx.execute(
                &format!(
                    "INSERT INTO responses (id, run_id, step, previous_id, status, body, created_at, updated_at, input)
                     SELECT $1, $2, $3, $4, $5, $6, now, now, $7 FROM (SELECT {NOW_MS} AS now) t"
                ),
                &[&id, &run_id, &step, &previous_id, &status, &body, &input],
            )
            .await
            .map_err(|e| s.error(e))?;
            tx.commit().await.map_err(|e| s.error(e))?;
            s.committed();
            Ok(step_u32)
        })
        .await
    }

    /// Replaces a response's status and body (as it is streamed, and once it ends).
    pub async fn update_response(
        &self,
        id: &str,
        status: &str,
        body: String,
    ) -> Result<(), StoreError> {
        self.open_for_writes()?;
        let (id, status) = (id.to_string(), status.to_string());
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let n = client
                .execute(
                    &format!(
                        "UPDATE responses SET status = $2, body = $3, updated_at = {NOW_MS} WHERE id = $1"
                    ),
                    &[&id, &status, &body],
                )
                .await
                .map_err(|e| s.error(e))?;
            if n == 0 {
                return Err(StoreError::NotFound(id));
            }
            s.committed();
            Ok(())
        })
        .await
    }

    /// Deletes one response by its exact id; false when there was none. Its run, the
    /// run's records and the other responses of the run stay.
    pub async fn delete_response(&self, id: &str) -> Result<bool, StoreError> {
        self.open_for_writes()?;
        let id = id.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let n = client
                .execute("DELETE FROM responses WHERE id = $1", &[&id])
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(n > 0)
        })
        .await
    }

    /// The input items response `id` was created with (a JSON array), if it exists.
    pub async fn response_input(&self, id: &str) -> Result<Option<String>, StoreError> {
        let id = id.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .query_opt("SELECT input FROM responses WHERE id = $1", &[&id])
                .await
                .map_err(|e| s.error(e))?;
            row.map(|r| r.try_get(0))
                .transpose()
                .map_err(|e| s.error(e))
        })
        .await
    }

    /// One response by its exact id.
    pub async fn response(&self, id: &str) -> Result<Option<ResponseRow>, StoreError> {
        let id = id.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM responses WHERE id = $1"),
                    &[&id],
                )
                .await
                .map_err(|e| s.error(e))?;
            row.map(|r| from_row(&s, &r)).transpose()
        })
        .await
    }

    /// A run's responses, in step order.
    pub async fn run_responses(&self, run_id: &str) -> Result<Vec<ResponseRow>, StoreError> {
        let run_id = run_id.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let rows = client
                .query(
                    &format!("SELECT {COLUMNS} FROM responses WHERE run_id = $1 ORDER BY step"),
                    &[&run_id],
                )
                .await
                .map_err(|e| s.error(e))?;
            rows.iter().map(|r| from_row(&s, r)).collect()
        })
        .await
    }
}
