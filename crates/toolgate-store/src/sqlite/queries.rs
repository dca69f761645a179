//! Reading call records back: by conversation, run, tool, status and time range, in
//! pages, newest first or oldest first.

use rusqlite::types::Value as Sql;
use serde::Serialize;

use super::record::{COLUMNS, StoredCall, from_row};
use super::{SqliteStore, StoreError};
use toolgate_protocol::CallStatus;

/// Which records to list.
#[derive(Debug, Clone, Default)]
pub struct CallQuery {
    pub conversation_id: Option<String>,
    pub run_id: Option<String>,
    pub tool: Option<String>,
    pub status: Option<CallStatus>,
    /// Unix milliseconds, inclusive.
    pub since: Option<i64>,
    /// Unix milliseconds, exclusive.
    pub until: Option<i64>,
    /// Page size (default 50, at most 10,000).
    pub limit: Option<usize>,
    pub offset: usize,
    /// Newest first.
    pub newest_first: bool,
    /// Only the records of this tenant's runs (records without a run are the default
    /// tenant's).
    pub tenant: Option<String>,
}

/// One page of records, with the total that matched.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Page {
    pub total: u64,
    pub offset: usize,
    pub calls: Vec<StoredCall>,
}

impl SqliteStore {
    /// The records matching `q`, one page.
    pub fn calls(&self, q: &CallQuery) -> Result<Page, StoreError> {
        let mut filters = Vec::new();
        let mut args: Vec<Sql> = Vec::new();
        let mut add = |clause: &str, v: Sql| {
            args.push(v);
            filters.push(format!("{clause} ?{}", args.len()));
        };
        if let Some(c) = &q.conversation_id {
            add("conversation_id =", Sql::Text(c.clone()));
        }
        if let Some(r) = &q.run_id {
            add("run_id =", Sql::Text(r.clone()));
        }
        if let Some(t) = &q.tool {
            add("tool =", Sql::Text(t.clone()));
        }
        if let Some(s) = q.status {
            add("status =", Sql::Text(s.as_str().into()));
        }
        if let Some(t) = q.since {
            add("started_at >=", Sql::Integer(t));
        }
        if let Some(t) = q.until {
            add("started_at <", Sql::Integer(t));
        }
        if let Some(t) = &q.tenant {
            add(
                "COALESCE((SELECT r.tenant FROM runs r WHERE r.id = tool_calls.run_id), 'default') =",
                Sql::Text(t.clone()),
            );
        }
        let filter = if filters.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", filters.join(" AND "))
        };
        let order = if q.newest_first { "DESC" } else { "ASC" };
        let limit = q.limit.unwrap_or(50).min(10_000);
        self.read(|conn| {
            let total: i64 = conn.query_row(
                &format!("SELECT count(*) FROM tool_calls {filter}"),
                rusqlite::params_from_iter(args.iter()),
                |r| r.get(0),
            )?;
            let sql = format!(
                "SELECT {COLUMNS} FROM tool_calls {filter} ORDER BY started_at {order}, id {order} LIMIT {limit} OFFSET {}",
                q.offset
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let calls = stmt
                .query_map(rusqlite::params_from_iter(args.iter()), from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Page {
                total: total.max(0) as u64,
                offset: q.offset,
                calls,
            })
        })
    }

    /// The recorded result of one call of a conversation (`None`: no such call, or it
    /// left no result), whole up to the record's cap.
    pub fn call_result(
        &self,
        conversation_id: &str,
        call_id: &str,
    ) -> Result<Option<String>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT result FROM tool_calls WHERE conversation_id = ?1 AND call_id = ?2 ORDER BY id DESC LIMIT 1",
            )?;
            let mut rows = stmt.query(rusqlite::params![conversation_id, call_id])?;
            match rows.next()? {
                Some(row) => Ok(row.get::<_, Option<String>>(0)?),
                None => Ok(None),
            }
        })
    }
}
