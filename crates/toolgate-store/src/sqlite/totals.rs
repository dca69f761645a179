//! Running totals of the call records (schema 7): calls per tool and status, a duration
//! histogram per tool, calls per conversation and per run. The writer folds new records
//! in when it is idle; a summary reads the totals plus the records not folded yet (the
//! tail above `totals_mark.folded_to`), in one snapshot, so it is always exact while it
//! reads a few rows instead of every record.

use std::collections::{BTreeMap, HashMap};

pub(super) use crate::summary::{ByStatus, Histogram, bucket};

use rusqlite::{Connection, OptionalExtension, params};

/// Records not yet folded that make an idle writer fold them.
pub(super) const FOLD_AT: i64 = 1024;
/// Records not yet folded that make even a busy writer fold them (bounds the tail a
/// summary reads).
pub(super) const FOLD_BUSY: i64 = 64 * FOLD_AT;
/// Most records one fold (one transaction) takes.
const FOLD_MAX: i64 = 65_536;

/// Aggregates of a set of records.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub by_status: ByStatus,
    pub durations: Histogram,
    pub conversations: HashMap<String, u64>,
    /// Calls and summed milliseconds per (run, tool, status).
    pub runs: HashMap<(String, String, String), (u64, f64)>,
}

/// The last record id in the totals (0 for none).
pub(super) fn folded_to(conn: &Connection) -> rusqlite::Result<i64> {
    Ok(conn
        .prepare_cached("SELECT folded_to FROM totals_mark WHERE id = 1")?
        .query_row([], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// The last record id (0 for none).
pub(super) fn last_id(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT coalesce(max(id), 0) FROM tool_calls")?
        .query_row([], |r| r.get(0))
}

/// The records with ids in `(from, to]`, aggregated.
pub(super) fn tail(conn: &Connection, from: i64, to: i64) -> rusqlite::Result<Tally> {
    let mut t = Tally::default();
    if to <= from {
        return Ok(t);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT tool, status, conversation_id, run_id, duration_ms FROM tool_calls WHERE id > ?1 AND id <= ?2",
    )?;
    let mut rows = stmt.query(params![from, to])?;
    while let Some(r) = rows.next()? {
        let (tool, status): (String, String) = (r.get(0)?, r.get(1)?);
        let conversation: String = r.get(2)?;
        let run: Option<String> = r.get(3)?;
        let ms: f64 = r.get(4)?;
        *t.durations.entry((tool.clone(), bucket(ms))).or_default() += 1;
        *t.conversations.entry(conversation).or_default() += 1;
        if let Some(run) = run {
            let e = t
                .runs
                .entry((run, tool.clone(), status.clone()))
                .or_default();
            e.0 += 1;
            e.1 += ms;
        }
        *t.by_status.entry((tool, status)).or_default() += 1;
    }
    Ok(t)
}

/// Folds up to [`FOLD_MAX`] records after the mark into the totals, inside the
/// caller's transaction; returns how many ids it covered (0: nothing left).
pub(super) fn fold(conn: &Connection) -> rusqlite::Result<i64> {
    let from = folded_to(conn)?;
    let to = last_id(conn)?.min(from.saturating_add(FOLD_MAX));
    if to <= from {
        return Ok(0);
    }
    let t = tail(conn, from, to)?;
    {
        let mut s = conn.prepare_cached(
            "INSERT INTO tool_totals (tool, status, calls) VALUES (?1, ?2, ?3) ON CONFLICT (tool, status) DO UPDATE SET calls = calls + excluded.calls",
        )?;
        for ((tool, status), n) in &t.by_status {
            s.execute(params![tool, status, *n as i64])?;
        }
        let mut s = conn.prepare_cached(
            "INSERT INTO duration_totals (tool, bucket, calls) VALUES (?1, ?2, ?3) ON CONFLICT (tool, bucket) DO UPDATE SET calls = calls + excluded.calls",
        )?;
        for ((tool, b), n) in &t.durations {
            s.execute(params![tool, b, *n as i64])?;
        }
        let mut s = conn.prepare_cached(
            "INSERT INTO conversation_totals (conversation_id, calls) VALUES (?1, ?2) ON CONFLICT (conversation_id) DO UPDATE SET calls = calls + excluded.calls",
        )?;
        for (c, n) in &t.conversations {
            s.execute(params![c, *n as i64])?;
        }
        let mut s = conn.prepare_cached(
            "INSERT INTO run_totals (run_id, tool, status, calls, total_ms) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, tool, status) DO UPDATE SET calls = calls + excluded.calls, total_ms = total_ms + excluded.total_ms",
        )?;
        for ((run, tool, status), (n, ms)) in &t.runs {
            s.execute(params![run, tool, status, *n as i64, ms])?;
        }
    }
    conn.prepare_cached("UPDATE totals_mark SET folded_to = ?1 WHERE id = 1")?
        .execute([to])?;
    Ok(to - from)
}

/// Folds everything (a migrated database's records), inside the caller's transaction.
pub(super) fn fold_all(conn: &Connection) -> rusqlite::Result<()> {
    while fold(conn)? > 0 {}
    Ok(())
}

/// How many records wait to be folded.
pub(super) fn unfolded(conn: &Connection) -> rusqlite::Result<i64> {
    Ok(last_id(conn)? - folded_to(conn)?)
}

/// The totals and the tail, read in the caller's snapshot: calls per (tool, status)
/// and the duration histogram, for `tool` alone or every tool.
pub(super) fn tool_totals(
    conn: &Connection,
    tool: Option<&str>,
) -> rusqlite::Result<(ByStatus, Histogram, Tally)> {
    let mark = folded_to(conn)?;
    let tail = tail(conn, mark, last_id(conn)?)?;
    let mut by_status = ByStatus::new();
    let mut durations = Histogram::new();
    let mut s = conn.prepare_cached(
        "SELECT tool, status, calls FROM tool_totals WHERE ?1 IS NULL OR tool = ?1",
    )?;
    let mut rows = s.query([tool])?;
    while let Some(r) = rows.next()? {
        let n: i64 = r.get(2)?;
        *by_status.entry((r.get(0)?, r.get(1)?)).or_default() += n.max(0) as u64;
    }
    let mut s = conn.prepare_cached(
        "SELECT tool, bucket, calls FROM duration_totals WHERE ?1 IS NULL OR tool = ?1",
    )?;
    let mut rows = s.query([tool])?;
    while let Some(r) = rows.next()? {
        let n: i64 = r.get(2)?;
        *durations.entry((r.get(0)?, r.get(1)?)).or_default() += n.max(0) as u64;
    }
    let keep = |t: &str| tool.is_none_or(|want| want == t);
    for ((t, st), n) in &tail.by_status {
        if keep(t) {
            *by_status.entry((t.clone(), st.clone())).or_default() += n;
        }
    }
    for ((t, b), n) in &tail.durations {
        if keep(t) {
            *durations.entry((t.clone(), *b)).or_default() += n;
        }
    }
    Ok((by_status, durations, tail))
}

/// Conversations with at least one call: those in the totals and those only in `tail`.
pub(super) fn conversations(conn: &Connection, tail: &Tally) -> rusqlite::Result<u64> {
    let folded: i64 = conn
        .prepare_cached("SELECT count(*) FROM conversation_totals")?
        .query_row([], |r| r.get(0))?;
    let mut known =
        conn.prepare_cached("SELECT 1 FROM conversation_totals WHERE conversation_id = ?1")?;
    let mut new = 0u64;
    for c in tail.conversations.keys() {
        if known.query_row([c], |_| Ok(())).optional()?.is_none() {
            new += 1;
        }
    }
    Ok(folded.max(0) as u64 + new)
}

/// One run's calls per (tool, status) with their summed milliseconds: its totals and
/// its records above `mark`.
pub(super) fn run_totals(
    conn: &Connection,
    run_id: &str,
    mark: i64,
) -> rusqlite::Result<BTreeMap<(String, String), (u64, f64)>> {
    let mut out: BTreeMap<(String, String), (u64, f64)> = BTreeMap::new();
    let mut add = |r: &rusqlite::Row<'_>| -> rusqlite::Result<()> {
        let n: i64 = r.get(2)?;
        let ms: f64 = r.get(3)?;
        let e = out.entry((r.get(0)?, r.get(1)?)).or_default();
        e.0 += n.max(0) as u64;
        e.1 += ms;
        Ok(())
    };
    let mut s = conn
        .prepare_cached("SELECT tool, status, calls, total_ms FROM run_totals WHERE run_id = ?1")?;
    let mut rows = s.query([run_id])?;
    while let Some(r) = rows.next()? {
        add(r)?;
    }
    let mut s = conn.prepare_cached(
        "SELECT tool, status, count(*), coalesce(sum(duration_ms), 0) FROM tool_calls WHERE run_id = ?1 AND id > ?2 GROUP BY tool, status",
    )?;
    let mut rows = s.query(params![run_id, mark])?;
    while let Some(r) = rows.next()? {
        add(r)?;
    }
    Ok(out)
}
