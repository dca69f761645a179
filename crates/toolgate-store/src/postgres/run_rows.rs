//! Runs and their pending items read back from PostgreSQL rows: the columns, a run found
//! by its id or a unique prefix of it (locked or not), its pending items (with those
//! waiting in the runs below it), the runs below one, and the database's clock.

use deadpool_postgres::GenericClient;
use serde_json::Value;
use tokio_postgres::Row;

use super::prepared::Prepared;
use super::{PgStore, StoreError};
use crate::{PendingRow, PendingState, Refusal, RunRow};
use toolgate_protocol::{ItemKind, RequiredItem, RunStatus, Usage};

pub(super) use super::clock::NOW_MS;

/// The columns [`run_from_row`] reads, in its order.
pub(super) const RUN_COLUMNS: &str = "id, conversation_id, agent, status, state, iteration, last_error, lease_owner, lease_until, created_at, updated_at, parent_run_id, parent_call_id, depth, tenant, started_by, prompt_tokens, completion_tokens, total_tokens, model_calls, cache_read_tokens, cache_creation_tokens, compactions";

/// The columns [`pending_from_row`] reads, in its order (a query's own come after).
pub(super) const PENDING_COLUMNS: &str =
    "call_id, kind, tool, arguments, decision, state, reason, expires_at, on_timeout, policy";
/// How many they are.
pub(super) const PENDING_COUNT: usize = count_columns(PENDING_COLUMNS);

/// How many columns a list of them (`a, b, c`) names, counted when compiling.
const fn count_columns(list: &str) -> usize {
    let bytes = list.as_bytes();
    let (mut i, mut n) = (0, 1);
    while i < bytes.len() {
        if bytes[i] == b',' {
            n += 1;
        }
        i += 1;
    }
    n
}

/// A database error turned into the store's, naming the database.
pub(super) trait OrStore<T> {
    fn or_store(self, s: &PgStore) -> Result<T, StoreError>;
}

impl<T> OrStore<T> for Result<T, tokio_postgres::Error> {
    fn or_store(self, s: &PgStore) -> Result<T, StoreError> {
        self.map_err(|e| s.error(e))
    }
}

/// The database's clock now (see [`NOW_MS`]).
pub(super) async fn db_now(c: &impl GenericClient, s: &PgStore) -> Result<i64, StoreError> {
    let row = c.row(&format!("SELECT {NOW_MS}"), &[]).await.or_store(s)?;
    row.try_get(0).or_store(s)
}

/// A count column (never negative; a negative one reads as 0).
fn count(row: &Row, i: usize) -> Result<u64, tokio_postgres::Error> {
    Ok(u64::try_from(row.try_get::<_, i64>(i)?).unwrap_or(0))
}

/// A small count column (iterations, depth).
fn small(row: &Row, i: usize) -> Result<u32, tokio_postgres::Error> {
    Ok(u32::try_from(row.try_get::<_, i64>(i)?).unwrap_or(0))
}

/// A run from a row of [`RUN_COLUMNS`].
pub(super) fn run_from_row(row: &Row) -> Result<RunRow, tokio_postgres::Error> {
    let status: String = row.try_get(3)?;
    Ok(RunRow {
        id: row.try_get(0)?,
        conversation_id: row.try_get(1)?,
        agent: row.try_get(2)?,
        status: status.parse().unwrap_or(RunStatus::Failed),
        state: row.try_get(4)?,
        iteration: small(row, 5)?,
        last_error: row.try_get(6)?,
        lease_owner: row.try_get(7)?,
        lease_until: row.try_get(8)?,
        created_at: row.try_get(9)?,
        updated_at: row.try_get(10)?,
        parent_run_id: row.try_get(11)?,
        parent_call_id: row.try_get(12)?,
        depth: small(row, 13)?,
        tenant: row.try_get(14)?,
        started_by: row.try_get(15)?,
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

/// A pending item from a row of [`PENDING_COLUMNS`].
pub(super) fn pending_from_row(row: &Row) -> Result<PendingRow, tokio_postgres::Error> {
    pending_at(row, 0)
}

/// A pending item from the [`PENDING_COLUMNS`] of a row, the first at `at`.
fn pending_at(row: &Row, at: usize) -> Result<PendingRow, tokio_postgres::Error> {
    let kind: String = row.try_get(at + 1)?;
    let arguments: String = row.try_get(at + 3)?;
    let decision: Option<String> = row.try_get(at + 4)?;
    let on_timeout: Option<String> = row.try_get(at + 8)?;
    let state: String = row.try_get(at + 5)?;
    Ok(PendingRow {
        item: RequiredItem {
            call_id: row.try_get(at)?,
            kind: kind.parse().unwrap_or(ItemKind::Approval),
            tool: row.try_get(at + 2)?,
            arguments: serde_json::from_str(&arguments).unwrap_or(Value::Null),
            run_id: None,
            path: Vec::new(),
            reason: row.try_get(at + 6)?,
            expires_at: row.try_get(at + 7)?,
            on_timeout: on_timeout
                .as_deref()
                .and_then(|t| t.parse::<toolgate_protocol::OnTimeout>().ok()),
            policy: row.try_get(at + 9)?,
        },
        decision: decision.and_then(|d| serde_json::from_str(&d).ok()),
        // A state this toolgate does not know (a newer one wrote it) is acted on: done.
        state: state.parse().unwrap_or(PendingState::Done),
    })
}

/// Rows turned into values, the first error stopping it.
pub(super) fn rows_to<T>(
    rows: Vec<Row>,
    s: &PgStore,
    f: impl Fn(&Row) -> Result<T, tokio_postgres::Error>,
) -> Result<Vec<T>, StoreError> {
    rows.iter().map(|r| f(r).or_store(s)).collect()
}

/// The run with exactly this id, if any; `lock` takes its row lock until the transaction
/// ends (what SQLite's single writer gave every write).
pub(super) async fn run_by_id(
    c: &impl GenericClient,
    s: &PgStore,
    id: &str,
    lock: bool,
) -> Result<Option<RunRow>, StoreError> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE id = $1{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = c.row_opt(&sql, &[&id]).await.or_store(s)?;
    row.as_ref().map(run_from_row).transpose().or_store(s)
}

/// Finds a run by its id or a unique prefix of it.
pub(super) async fn find_run(
    c: &impl GenericClient,
    s: &PgStore,
    id: &str,
) -> Result<RunRow, StoreError> {
    if let Some(run) = run_by_id(c, s, id, false).await? {
        return Ok(run);
    }
    // The byte-wise range finds them on the index `runs_id_prefix` (the statement is
    // prepared, so `LIKE` with a parameter would not); `starts_with` is what decides.
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE id ~>=~ $1 AND id ~<~ ($1 || chr(1114111)) AND starts_with(id, $1) ORDER BY id LIMIT 2"
    );
    let rows = c.rows(&sql, &[&id]).await.or_store(s)?;
    let mut found = rows_to(rows, s, run_from_row)?;
    match found.len() {
        1 => found.pop().ok_or_else(|| StoreError::NotFound(id.into())),
        0 => Err(StoreError::NotFound(id.to_string())),
        _ => Err(StoreError::Refused(
            Refusal::AmbiguousId,
            format!("'{id}' is the start of more than one run id; give more of it"),
        )),
    }
}

/// [`find_run`], its row locked: read under the lock at once when `id` is a whole id
/// (one statement), else found by its prefix first and read again under the lock.
pub(super) async fn find_run_locked(
    c: &impl GenericClient,
    s: &PgStore,
    id: &str,
) -> Result<RunRow, StoreError> {
    if let Some(run) = run_by_id(c, s, id, true).await? {
        return Ok(run);
    }
    let found = find_run(c, s, id).await?;
    run_by_id(c, s, &found.id, true)
        .await?
        .ok_or(StoreError::NotFound(found.id))
}

/// How many [`RUN_COLUMNS`] there are.
const RUN_COUNT: usize = count_columns(RUN_COLUMNS);

/// A run by its whole id with its own items, in one statement (one snapshot, no
/// transaction around it: the read a request or a drive makes of a run most often).
/// `None` when no run has this id, or when the run is paused with runs below it (their
/// waiting items need the recursive read: [`pending_with_below`]).
pub(super) async fn run_with_items(
    c: &impl GenericClient,
    s: &PgStore,
    id: &str,
) -> Result<Option<(RunRow, Vec<PendingRow>)>, StoreError> {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let of = |table: &str, columns: &str| {
            columns
                .split(", ")
                .map(|c| format!("{table}.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "SELECT {}, {}, EXISTS (SELECT 1 FROM runs b WHERE b.parent_run_id = r.id) \
             FROM runs r LEFT JOIN pending p ON p.run_id = r.id WHERE r.id = $1 ORDER BY p.added",
            of("r", RUN_COLUMNS),
            of("p", PENDING_COLUMNS)
        )
    });
    let rows = c.rows(&SQL, &[&id]).await.or_store(s)?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let run = run_from_row(first).or_store(s)?;
    let below: bool = first.try_get(RUN_COUNT + PENDING_COUNT).or_store(s)?;
    if below && run.status == RunStatus::RequiresAction {
        return Ok(None);
    }
    let mut pending = Vec::with_capacity(rows.len());
    for row in &rows {
        // The run with no items: one row, its item's columns null.
        if row
            .try_get::<_, Option<String>>(RUN_COUNT)
            .or_store(s)?
            .is_some()
        {
            pending.push(pending_at(row, RUN_COUNT).or_store(s)?);
        }
    }
    Ok(Some((run, pending)))
}

/// A run's own pending items, in the order they were added.
pub(super) async fn pending_rows(
    c: &impl GenericClient,
    s: &PgStore,
    run_id: &str,
) -> Result<Vec<PendingRow>, StoreError> {
    let sql = format!("SELECT {PENDING_COLUMNS} FROM pending WHERE run_id = $1 ORDER BY added");
    let rows = c.rows(&sql, &[&run_id]).await.or_store(s)?;
    rows_to(rows, s, pending_from_row)
}

/// A run's own pending items, then (while it is paused) those waiting below it.
pub(super) async fn pending_with_below(
    c: &impl GenericClient,
    s: &PgStore,
    run: &RunRow,
) -> Result<Vec<PendingRow>, StoreError> {
    if run.status != RunStatus::RequiresAction {
        return pending_rows(c, s, &run.id).await;
    }
    // A paused run's own items and whether any run is below it, in one statement (the
    // question asked apart only when it has no items of its own).
    let sql = format!(
        "SELECT {PENDING_COLUMNS}, EXISTS (SELECT 1 FROM runs WHERE parent_run_id = $1) FROM pending WHERE run_id = $1 ORDER BY added"
    );
    let rows = c.rows(&sql, &[&run.id]).await.or_store(s)?;
    let below = match rows.first() {
        Some(row) => row.try_get::<_, bool>(PENDING_COUNT).or_store(s)?,
        None => has_runs_below(c, s, &run.id).await?,
    };
    let mut pending = rows_to(rows, s, pending_from_row)?;
    if below {
        pending.extend(items_below(c, s, &run.id).await?);
    }
    Ok(pending)
}

/// The runs below `$1`, each with the path of run ids from `$1`'s child down to it,
/// parents before children.
const BELOW: &str = "WITH RECURSIVE below(id, path) AS (
    SELECT id, id FROM runs WHERE parent_run_id = $1
    UNION ALL
    SELECT r.id, below.path || ' ' || r.id FROM runs r JOIN below ON r.parent_run_id = below.id
)";

/// Whether any run was started below `run_id` (a sub-agent's). Most runs have none,
/// and asking costs one index probe, where the recursive query of the runs below costs
/// about a millisecond of planning at each read of a paused run (measured with
/// `pg_stat_statements` under `serve_load`: 9 of them per run, the database's largest
/// cost).
pub(super) async fn has_runs_below(
    c: &impl GenericClient,
    s: &PgStore,
    run_id: &str,
) -> Result<bool, StoreError> {
    let row = c
        .row(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE parent_run_id = $1)",
            &[&run_id],
        )
        .await
        .or_store(s)?;
    row.try_get(0).or_store(s)
}

/// The items waiting in paused runs below `run_id` (asked only when some run is: see
/// [`has_runs_below`]), each with the run holding it and the path to that run from
/// `run_id` (included).
async fn items_below(
    c: &impl GenericClient,
    s: &PgStore,
    run_id: &str,
) -> Result<Vec<PendingRow>, StoreError> {
    let sql = format!(
        "{BELOW} SELECT p.call_id, p.kind, p.tool, p.arguments, p.decision, p.state, p.reason, p.expires_at, p.on_timeout, p.policy, below.id, below.path
         FROM below JOIN runs r ON r.id = below.id JOIN pending p ON p.run_id = below.id
         WHERE r.status = 'requires_action' AND p.state = 'waiting'
         ORDER BY r.depth, r.created_at, p.added"
    );
    let rows = c.rows(&sql, &[&run_id]).await.or_store(s)?;
    rows_to(rows, s, |row| {
        let mut p = pending_from_row(row)?;
        let holder: String = row.try_get(PENDING_COUNT)?;
        let path: String = row.try_get(PENDING_COUNT + 1)?;
        p.item.run_id = Some(holder);
        p.item.path = std::iter::once(run_id.to_string())
            .chain(path.split(' ').map(str::to_string))
            .collect();
        Ok(p)
    })
}

/// The ids of every run below `run_id`.
pub(super) async fn ids_below(
    c: &impl GenericClient,
    s: &PgStore,
    run_id: &str,
) -> Result<Vec<String>, StoreError> {
    let rows = c
        .rows(&format!("{BELOW} SELECT id FROM below"), &[&run_id])
        .await
        .or_store(s)?;
    rows_to(rows, s, |r| r.try_get(0))
}

/// The top of the tree `run` is in.
pub(super) async fn root_of(
    c: &impl GenericClient,
    s: &PgStore,
    mut run: RunRow,
) -> Result<RunRow, StoreError> {
    // Bounded: a tree is never deeper than its runs.
    for _ in 0..=run.depth {
        let Some(parent) = run.parent_run_id.clone() else {
            return Ok(run);
        };
        run = find_run(c, s, &parent).await?;
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_column_counts_match_the_column_lists() {
        assert_eq!(RUN_COLUMNS.split(", ").count(), RUN_COUNT);
        assert_eq!(PENDING_COLUMNS.split(", ").count(), PENDING_COUNT);
        // What `run_from_row` and `pending_at` read: columns 0 to 22, and 0 to 9.
        assert_eq!((RUN_COUNT, PENDING_COUNT), (23, 10));
    }
}
