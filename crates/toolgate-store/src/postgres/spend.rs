//! Spend on PostgreSQL: a run's model requests written in its save's transaction (one
//! statement over arrays, the run's conversation, agent, tenant and starter copied from
//! its row), a budget's sum, and sums grouped by conversation, agent, tenant or key.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::prepared::Prepared;
use super::rows::get;
use super::run_rows::OrStore;
use super::{PgStore, StoreError};
use crate::Scope;
use crate::spend::{
    FilterValue, ModelRequestRow, SUMS, Spend, SpendBy, SpendFilter, SpendRow, conditions, count,
    stored,
};

/// Writes `requests` (of runs in the store) in `tx`.
pub(super) async fn insert(
    tx: &impl GenericClient,
    s: &PgStore,
    requests: &[ModelRequestRow],
) -> Result<(), StoreError> {
    if requests.is_empty() {
        return Ok(());
    }
    let text = |f: fn(&ModelRequestRow) -> String| requests.iter().map(f).collect::<Vec<_>>();
    let int = |f: fn(&ModelRequestRow) -> u64| {
        requests.iter().map(|r| stored(f(r))).collect::<Vec<i64>>()
    };
    let (runs, models) = (text(|r| r.run_id.clone()), text(|r| r.model.clone()));
    let at: Vec<i64> = requests.iter().map(|r| r.at).collect();
    tx.exec(
        "INSERT INTO model_requests (run_id, conversation_id, agent, tenant, started_by, model,
           prompt_tokens, completion_tokens, cache_read_tokens, cache_creation_tokens, total_tokens,
           cost_nanos, at)
         SELECT r.id, r.conversation_id, r.agent, r.tenant, COALESCE(r.started_by, '-'), q.model,
           q.p, q.c, q.cr, q.cc, q.t, q.cost, q.at
         FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[],
                     $7::bigint[], $8::bigint[], $9::bigint[]) WITH ORDINALITY
              AS q(run_id, model, p, c, cr, cc, t, cost, at, n)
         JOIN runs r ON r.id = q.run_id ORDER BY q.n",
        &[
            &runs,
            &models,
            &int(|r| r.prompt_tokens),
            &int(|r| r.completion_tokens),
            &int(|r| r.cache_read_tokens),
            &int(|r| r.cache_creation_tokens),
            &int(|r| r.total_tokens),
            &int(|r| r.cost_nanos),
            &at,
        ],
    )
    .await
    .or_store(s)?;
    Ok(())
}

/// A spend's columns from a row of [`SUMS`] starting at column `at` (PostgreSQL sums
/// bigints as numeric: the query casts them back).
fn spend_of(row: &tokio_postgres::Row, at: usize) -> Result<Spend, StoreError> {
    Ok(Spend {
        requests: count(get(row, at)?),
        prompt_tokens: count(get(row, at + 1)?),
        completion_tokens: count(get(row, at + 2)?),
        total_tokens: count(get(row, at + 3)?),
        cost_nanos: count(get(row, at + 4)?),
    })
}

/// [`SUMS`] with each sum cast back to a bigint.
fn sums() -> String {
    SUMS.replace("count(*)", "count(*)::bigint")
        .replace(", 0)", ", 0)::bigint")
}

/// Owned parameters for a filter's conditions.
enum Param {
    Text(String),
    Int(i64),
}

fn params(values: Vec<FilterValue>) -> Vec<Param> {
    values
        .into_iter()
        .map(|v| match v {
            FilterValue::Text(t) => Param::Text(t),
            FilterValue::Int(i) => Param::Int(i),
        })
        .collect()
}

fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| match p {
            Param::Text(t) => t as &(dyn ToSql + Sync),
            Param::Int(i) => i as &(dyn ToSql + Sync),
        })
        .collect()
}

impl PgStore {
    /// The spend of the requests `filter` matches.
    pub async fn spend(&self, filter: &SpendFilter) -> Result<Spend, StoreError> {
        let (cond, vals) = conditions(filter, "$");
        let sql = format!("SELECT {} FROM model_requests WHERE {cond}", sums());
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let p = params(vals);
            let row = client.row(&sql, &refs(&p)).await.or_store(&s)?;
            spend_of(&row, 0)
        })
        .await
    }

    /// The spend grouped `by`, in `scope`, largest cost first.
    pub async fn spend_by(
        &self,
        by: SpendBy,
        scope: Scope<'_>,
    ) -> Result<Vec<SpendRow>, StoreError> {
        let filter = SpendFilter {
            tenant: scope.tenant().map(str::to_string),
            ..SpendFilter::default()
        };
        let (cond, vals) = conditions(&filter, "$");
        let col = by.column();
        let sql = format!(
            "SELECT {col}, {} FROM model_requests WHERE {cond} GROUP BY {col} ORDER BY 6 DESC, 1",
            sums()
        );
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let p = params(vals);
            let rows = client.rows(&sql, &refs(&p)).await.or_store(&s)?;
            rows.iter()
                .map(|r| {
                    Ok(SpendRow {
                        name: get(r, 0)?,
                        spend: spend_of(r, 1)?,
                    })
                })
                .collect()
        })
        .await
    }
}
