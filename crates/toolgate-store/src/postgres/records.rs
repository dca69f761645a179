//! Call records on PostgreSQL: committing a batch (one statement, one transaction of its
//! own, so that many tasks and workers commit side by side), and reading them back: by
//! conversation, run, tool, status, tenant and time range, in pages; one call's result;
//! some calls of a run.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::rows::{CALL_COLUMNS, call_from_row, get};
use super::{PgStore, StoreError};
use crate::{CallQuery, CallRecord, Page};
use toolgate_protocol::ErrorKind;

/// One batch of records as columns, for `UNNEST`.
#[derive(Default)]
struct Columns {
    call_id: Vec<String>,
    run_id: Vec<Option<String>>,
    conversation_id: Vec<String>,
    agent: Vec<Option<String>>,
    caller: Vec<&'static str>,
    tool: Vec<String>,
    arguments: Vec<String>,
    result: Vec<Option<String>>,
    result_size: Vec<i64>,
    status: Vec<&'static str>,
    error_kind: Vec<Option<&'static str>>,
    error_message: Vec<Option<String>>,
    started_at: Vec<i64>,
    duration_ms: Vec<f64>,
    replaced: Vec<bool>,
    attempts: Vec<Option<String>>,
    cached: Vec<Option<bool>>,
}

impl Columns {
    fn of(records: &[CallRecord]) -> Columns {
        let mut c = Columns::default();
        for r in records {
            c.call_id.push(r.call_id.clone());
            c.run_id.push(r.run_id.clone());
            c.conversation_id.push(r.conversation_id.clone());
            c.agent.push(r.agent.clone());
            c.caller.push(r.caller.as_str());
            c.tool.push(r.tool.clone());
            c.arguments.push(r.arguments.to_string());
            c.result.push(r.result.clone());
            c.result_size
                .push(i64::try_from(r.result_size).unwrap_or(i64::MAX));
            c.status.push(r.status.as_str());
            c.error_kind.push(r.error_kind.map(ErrorKind::as_str));
            c.error_message.push(r.error_message.clone());
            c.started_at.push(r.started_at);
            c.duration_ms.push(r.duration_ms);
            c.replaced.push(r.replaced);
            c.attempts
                .push(crate::model::Attempt::to_column(&r.attempts));
            c.cached.push(r.cached);
        }
        c
    }
}

/// Inserts a batch given as arrays, one per column, in one statement.
const INSERT: &str = "INSERT INTO tool_calls (call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms, replaced, attempts, cached) \
     SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::bigint[], $14::float8[], $15::bool[], $16::text[], $17::bool[])";

/// Whose runs a record belongs to, for a tenant filter (records without a run are the
/// default tenant's).
const TENANT_OF: &str =
    "COALESCE((SELECT r.tenant FROM runs r WHERE r.id = tool_calls.run_id), 'default')";

impl PgStore {
    /// Inserts `records` in one statement, in the caller's transaction (or one of its
    /// own, on a bare connection). Whoever commits them calls [`PgStore::records_added`].
    pub(super) async fn insert_records(
        &self,
        client: &impl GenericClient,
        records: &[CallRecord],
    ) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let c = Columns::of(records);
        let stmt = client
            .prepare_cached(INSERT)
            .await
            .map_err(|e| self.error(e))?;
        client
            .execute(
                &stmt,
                &[
                    &c.call_id,
                    &c.run_id,
                    &c.conversation_id,
                    &c.agent,
                    &c.caller,
                    &c.tool,
                    &c.arguments,
                    &c.result,
                    &c.result_size,
                    &c.status,
                    &c.error_kind,
                    &c.error_message,
                    &c.started_at,
                    &c.duration_ms,
                    &c.replaced,
                    &c.attempts,
                    &c.cached,
                ],
            )
            .await
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// Writes `records` in a transaction of their own and gives them back once committed.
    pub async fn commit_records(
        &self,
        records: Vec<CallRecord>,
    ) -> Result<Vec<CallRecord>, StoreError> {
        self.open_for_writes()?;
        if records.is_empty() {
            return Ok(records);
        }
        self.on_pool(move |s| async move {
            let started = std::time::Instant::now();
            let client = s.client().await?;
            let written = s.insert_records(&client, &records).await;
            if let Err(e) = written {
                tracing::warn!(records = records.len(), error = %e, "call records not committed");
                return Err(e);
            }
            s.committed();
            toolgate_telemetry::metrics::store_committed(true, started.elapsed());
            s.records_added(records.len() as u64);
            Ok(records)
        })
        .await
    }

    /// The records matching `q`, one page (the same filters, order and paging as on
    /// SQLite).
    pub async fn calls(&self, q: &CallQuery) -> Result<Page, StoreError> {
        let q = q.clone();
        self.on_pool(move |s| async move {
            let mut filters: Vec<String> = Vec::new();
            let mut args: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
            let mut add = |clause: &str, v: Box<dyn ToSql + Sync + Send>| {
                args.push(v);
                filters.push(format!("{clause} ${}", args.len()));
            };
            if let Some(c) = &q.conversation_id {
                add("conversation_id =", Box::new(c.clone()));
            }
            if let Some(r) = &q.run_id {
                add("run_id =", Box::new(r.clone()));
            }
            if let Some(t) = &q.tool {
                add("tool =", Box::new(t.clone()));
            }
            if let Some(st) = q.status {
                add("status =", Box::new(st.as_str()));
            }
            if let Some(t) = q.since {
                add("started_at >=", Box::new(t));
            }
            if let Some(t) = q.until {
                add("started_at <", Box::new(t));
            }
            if let Some(t) = &q.tenant {
                add(&format!("{TENANT_OF} ="), Box::new(t.clone()));
            }
            let filter = if filters.is_empty() {
                String::new()
            } else {
                format!("WHERE {}", filters.join(" AND "))
            };
            let order = if q.newest_first { "DESC" } else { "ASC" };
            let limit = q.limit.unwrap_or(50).min(10_000);
            let params: Vec<&(dyn ToSql + Sync)> = args
                .iter()
                .map(|a| a.as_ref() as &(dyn ToSql + Sync))
                .collect();
            let client = s.client().await?;
            let count = format!("SELECT count(*) FROM tool_calls {filter}");
            let page = format!(
                "SELECT {CALL_COLUMNS} FROM tool_calls {filter} ORDER BY started_at {order}, id {order} LIMIT {limit} OFFSET {}",
                q.offset
            );
            // Both sent at once (one round trip).
            let (total, rows) = tokio::try_join!(
                s.rows(&client, &count, &params),
                s.rows(&client, &page, &params)
            )?;
            let total: i64 = match total.first() {
                Some(row) => get(row, 0)?,
                None => 0,
            };
            Ok(Page {
                total: total.max(0) as u64,
                offset: q.offset,
                calls: rows.iter().map(call_from_row).collect::<Result<_, _>>()?,
            })
        })
        .await
    }

    /// The recorded result of one call of a conversation (`None`: no such call, or it
    /// left no result), the latest record's.
    pub async fn call_result(
        &self,
        conversation_id: &str,
        call_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let (conversation, call) = (conversation_id.to_string(), call_id.to_string());
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let rows = s
                .rows(
                    &client,
                    "SELECT result FROM tool_calls WHERE conversation_id = $1 AND call_id = $2 ORDER BY id DESC LIMIT 1",
                    &[&conversation, &call],
                )
                .await?;
            match rows.first() {
                Some(row) => get(row, 0),
                None => Ok(None),
            }
        })
        .await
    }

    /// The committed records of some calls of a run, in the order they were recorded.
    pub async fn run_call_records(
        &self,
        run_id: &str,
        call_ids: &[String],
    ) -> Result<Vec<CallRecord>, StoreError> {
        if call_ids.is_empty() {
            return Ok(Vec::new());
        }
        let (run, calls) = (run_id.to_string(), call_ids.to_vec());
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let sql = format!(
                "SELECT {CALL_COLUMNS} FROM tool_calls WHERE run_id = $1 AND call_id = ANY($2) ORDER BY id"
            );
            let rows = s.rows(&client, &sql, &[&run, &calls]).await?;
            rows.iter()
                .map(|r| call_from_row(r).map(|c| c.record))
                .collect()
        })
        .await
    }
}
