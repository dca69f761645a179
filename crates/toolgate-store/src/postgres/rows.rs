//! Rows read back on PostgreSQL as the store's types (a call record, a run, a pending
//! item), queries through each connection's cache of prepared statements, and finding a
//! run by its id or a unique prefix of it.

use deadpool_postgres::GenericClient;
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, ToSql};

use super::{PgStore, StoreError};
use crate::{CallRecord, PendingRow, RunRow, StoredCall};
use toolgate_protocol::{CallStatus, CallerKind};

/// The columns [`call_from_row`] reads, in its order.
pub(super) const CALL_COLUMNS: &str = "id, call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms, replaced, attempts, cached";

pub(super) use super::run_rows::{PENDING_COLUMNS, PENDING_COUNT, RUN_COLUMNS};
/// The order pending items were added in (SQLite's rowid order).
pub(super) const PENDING_ORDER: &str = "added";

/// Column `i` of `row`, a read failure as a store error.
pub(super) fn get<'a, T: FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i).map_err(unreadable)
}

/// A count column (never negative; a negative one reads as 0).
fn count(row: &Row, i: usize) -> Result<u64, StoreError> {
    Ok(u64::try_from(get::<i64>(row, i)?).unwrap_or(0))
}

/// A call record from the [`CALL_COLUMNS`].
pub(super) fn call_from_row(row: &Row) -> Result<StoredCall, StoreError> {
    let caller: String = get(row, 5)?;
    let arguments: String = get(row, 7)?;
    let status: String = get(row, 10)?;
    Ok(StoredCall {
        id: get(row, 0)?,
        record: CallRecord {
            call_id: get(row, 1)?,
            run_id: get(row, 2)?,
            conversation_id: get(row, 3)?,
            agent: get(row, 4)?,
            caller: caller.parse().unwrap_or(CallerKind::Agent),
            tool: get(row, 6)?,
            arguments: serde_json::from_str(&arguments).unwrap_or(Value::String(arguments)),
            result: get(row, 8)?,
            result_size: count(row, 9)? as usize,
            status: status.parse().unwrap_or(CallStatus::Failed),
            error_kind: crate::model::error_kind_of(get(row, 11)?),
            error_message: get(row, 12)?,
            started_at: get(row, 13)?,
            duration_ms: get(row, 14)?,
            replaced: get(row, 15)?,
            attempts: crate::model::Attempt::from_column(get(row, 16)?),
            cached: get(row, 17)?,
        },
    })
}

/// A run from the [`RUN_COLUMNS`] (the mapping is `run_rows`'), a read failure as a
/// store error.
pub(super) fn run_from_row(row: &Row) -> Result<RunRow, StoreError> {
    super::run_rows::run_from_row(row).map_err(unreadable)
}

/// A pending item from the [`PENDING_COLUMNS`], a read failure as a store error.
pub(super) fn pending_from_row(row: &Row) -> Result<PendingRow, StoreError> {
    super::run_rows::pending_from_row(row).map_err(unreadable)
}

fn unreadable(e: tokio_postgres::Error) -> StoreError {
    StoreError::Corrupt(format!("a stored row cannot be read back: {e}"))
}

impl PgStore {
    /// The rows of `sql` (prepared once per connection).
    pub(super) async fn rows(
        &self,
        client: &impl GenericClient,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let stmt = client
            .prepare_cached(sql)
            .await
            .map_err(|e| self.error(e))?;
        client.query(&stmt, params).await.map_err(|e| self.error(e))
    }

    /// The run `id` names: the run with that id, or the one run whose id starts with it.
    pub(super) async fn find_run(
        &self,
        client: &impl GenericClient,
        id: &str,
    ) -> Result<RunRow, StoreError> {
        super::run_rows::find_run(client, self, id).await
    }
}
