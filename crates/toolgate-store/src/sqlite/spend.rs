//! Spend on SQLite: a run's model requests written in its save's transaction (the
//! run's conversation, agent, tenant and starter copied from its row), a budget's sum,
//! and sums grouped by conversation, agent, tenant or key.

use rusqlite::{Connection, params, params_from_iter};

use super::{SqliteStore, StoreError};
use crate::Scope;
use crate::spend::{
    FilterValue, ModelRequestRow, SUMS, Spend, SpendBy, SpendFilter, SpendRow, conditions, count,
    stored,
};

/// Writes `requests` (of runs in the store) in `tx`.
pub(super) fn insert(tx: &Connection, requests: &[ModelRequestRow]) -> rusqlite::Result<()> {
    if requests.is_empty() {
        return Ok(());
    }
    let mut add = tx.prepare_cached(
        "INSERT INTO model_requests (run_id, conversation_id, agent, tenant, started_by, model,
           prompt_tokens, completion_tokens, cache_read_tokens, cache_creation_tokens, total_tokens,
           cost_nanos, at)
         SELECT id, conversation_id, agent, tenant, COALESCE(started_by, '-'), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
         FROM runs WHERE id = ?1",
    )?;
    for r in requests {
        add.execute(params![
            r.run_id,
            r.model,
            stored(r.prompt_tokens),
            stored(r.completion_tokens),
            stored(r.cache_read_tokens),
            stored(r.cache_creation_tokens),
            stored(r.total_tokens),
            stored(r.cost_nanos),
            r.at,
        ])?;
    }
    Ok(())
}

/// A spend's columns from a row of [`SUMS`] starting at column `at`.
fn spend_of(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Spend> {
    Ok(Spend {
        requests: count(row.get(at)?),
        prompt_tokens: count(row.get(at + 1)?),
        completion_tokens: count(row.get(at + 2)?),
        total_tokens: count(row.get(at + 3)?),
        cost_nanos: count(row.get(at + 4)?),
    })
}

/// A filter's parameters as SQLite values.
fn values(values: Vec<FilterValue>) -> Vec<rusqlite::types::Value> {
    values
        .into_iter()
        .map(|v| match v {
            FilterValue::Text(t) => rusqlite::types::Value::Text(t),
            FilterValue::Int(i) => rusqlite::types::Value::Integer(i),
        })
        .collect()
}

impl SqliteStore {
    /// The spend of the requests `filter` matches.
    pub fn spend(&self, filter: &SpendFilter) -> Result<Spend, StoreError> {
        let (cond, vals) = conditions(filter, "?");
        let sql = format!("SELECT {SUMS} FROM model_requests WHERE {cond}");
        self.read(|conn| {
            conn.prepare_cached(&sql)?
                .query_row(params_from_iter(values(vals)), |r| spend_of(r, 0))
        })
    }

    /// The spend grouped `by`, in `scope`, largest cost first.
    pub fn spend_by(&self, by: SpendBy, scope: Scope<'_>) -> Result<Vec<SpendRow>, StoreError> {
        let filter = SpendFilter {
            tenant: scope.tenant().map(str::to_string),
            ..SpendFilter::default()
        };
        let (cond, vals) = conditions(&filter, "?");
        let col = by.column();
        let sql = format!(
            "SELECT {col}, {SUMS} FROM model_requests WHERE {cond} GROUP BY {col} ORDER BY 6 DESC, 1"
        );
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(params_from_iter(values(vals)), |r| {
                Ok(SpendRow {
                    name: r.get(0)?,
                    spend: spend_of(r, 1)?,
                })
            })?;
            rows.collect()
        })
    }
}
