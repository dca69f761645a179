//! Rows read back on PostgreSQL as the store's types (a call record, a run, a pending
//! item), queries through each connection's cache of prepared statements, and finding a
//! run by its id or a unique prefix of it.

use deadpool_postgres::GenericClient;
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, ToSql};

use super::{PgStore, StoreError};
use crate::protocol::{CallStatus, CallerKind, ItemKind, RequiredItem, RunStatus, Usage};
use crate::store::{CallRecord, PendingRow, PendingState, Refusal, RunRow, StoredCall};

/// The columns [`call_from_row`] reads, in its order.
pub(super) const CALL_COLUMNS: &str = "id, call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms, replaced";

/// The columns [`run_from_row`] reads, in its order.
pub(super) const RUN_COLUMNS: &str = "id, conversation_id, agent, status, state, iteration, last_error, lease_owner, lease_until, created_at, updated_at, parent_run_id, parent_call_id, depth, tenant, started_by, prompt_tokens, completion_tokens, total_tokens, model_calls, cache_read_tokens, cache_creation_tokens, compactions";

/// The columns [`pending_from_row`] reads, in its order (a query's own come after them).
pub(super) const PENDING_COLUMNS: &str =
    "call_id, kind, tool, arguments, decision, state, reason, expires_at, on_timeout, policy";
/// How many they are.
pub(super) const PENDING_COUNT: usize = 10;
/// The order pending items were added in (SQLite's rowid order).
pub(super) const PENDING_ORDER: &str = "added";

/// Column `i` of `row`, a read failure as a store error.
pub(super) fn get<'a, T: FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i)
        .map_err(|e| StoreError::Corrupt(format!("a stored row cannot be read back: {e}")))
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
            caller: match caller.as_str() {
                "user" => CallerKind::User,
                "workflow" => CallerKind::Workflow,
                _ => CallerKind::Agent,
            },
            tool: get(row, 6)?,
            arguments: serde_json::from_str(&arguments).unwrap_or(Value::String(arguments)),
            result: get(row, 8)?,
            result_size: count(row, 9)? as usize,
            status: CallStatus::parse(&status).unwrap_or(CallStatus::Failed),
            error_kind: get(row, 11)?,
            error_message: get(row, 12)?,
            started_at: get(row, 13)?,
            duration_ms: get(row, 14)?,
            replaced: get(row, 15)?,
        },
    })
}

/// A run from the [`RUN_COLUMNS`].
pub(super) fn run_from_row(row: &Row) -> Result<RunRow, StoreError> {
    let status: String = get(row, 3)?;
    Ok(RunRow {
        id: get(row, 0)?,
        conversation_id: get(row, 1)?,
        agent: get(row, 2)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
        state: get(row, 4)?,
        iteration: u32::try_from(get::<i64>(row, 5)?).unwrap_or(0),
        last_error: get(row, 6)?,
        lease_owner: get(row, 7)?,
        lease_until: get(row, 8)?,
        created_at: get(row, 9)?,
        updated_at: get(row, 10)?,
        parent_run_id: get(row, 11)?,
        parent_call_id: get(row, 12)?,
        depth: u32::try_from(get::<i64>(row, 13)?).unwrap_or(0),
        tenant: get(row, 14)?,
        started_by: get(row, 15)?,
        usage: Usage {
            prompt_tokens: count(row, 16)?,
            completion_tokens: count(row, 17)?,
            total_tokens: count(row, 18)?,
            model_calls: count(row, 19)?,
            cache_read_tokens: count(row, 20)?,
            cache_creation_tokens: count(row, 21)?,
            compactions: count(row, 22)?,
        },
    })
}

/// A pending item from the [`PENDING_COLUMNS`].
pub(super) fn pending_from_row(row: &Row) -> Result<PendingRow, StoreError> {
    let kind: String = get(row, 1)?;
    let arguments: String = get(row, 3)?;
    let decision: Option<String> = get(row, 4)?;
    let on_timeout: Option<String> = get(row, 8)?;
    let state: String = get(row, 5)?;
    Ok(PendingRow {
        item: RequiredItem {
            call_id: get(row, 0)?,
            kind: ItemKind::parse(&kind).unwrap_or(ItemKind::Approval),
            tool: get(row, 2)?,
            arguments: serde_json::from_str(&arguments).unwrap_or(Value::Null),
            run_id: None,
            path: Vec::new(),
            reason: get(row, 6)?,
            expires_at: get(row, 7)?,
            on_timeout: on_timeout
                .as_deref()
                .and_then(crate::policy::OnTimeout::parse),
            policy: get(row, 9)?,
        },
        decision: decision.and_then(|d| serde_json::from_str(&d).ok()),
        // A state this toolgate does not know (a newer one wrote it) is acted on: done.
        state: PendingState::parse(&state).unwrap_or(PendingState::Done),
    })
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
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE id = $1 \
             UNION ALL (SELECT {RUN_COLUMNS} FROM runs WHERE id LIKE $2 ESCAPE '\\' AND id <> $1 \
                        AND NOT EXISTS (SELECT 1 FROM runs WHERE id = $1) ORDER BY id LIMIT 2)"
        );
        let prefix = format!(
            "{}%",
            id.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let rows = self.rows(client, &sql, &[&id, &prefix]).await?;
        match rows.as_slice() {
            [one] => run_from_row(one),
            [] => Err(StoreError::NotFound(id.to_string())),
            [first, ..] if get::<String>(first, 0)? == id => run_from_row(first),
            _ => Err(StoreError::Refused(
                Refusal::AmbiguousId,
                format!("'{id}' is the start of more than one run id; give more of it"),
            )),
        }
    }
}
