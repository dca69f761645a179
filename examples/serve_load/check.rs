//! The checks after the load: every run completed, nothing waits, every call of every
//! run recorded exactly once with its tool and outcome (in the SQLite file, or in the
//! PostgreSQL database for the runs of this load), and no error in the servers' logs.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{EXPECTED_CALLS, Res, truncate};

/// A run's calls as recorded: (call id, tool, status) -> how many rows.
pub type Recorded = BTreeMap<String, BTreeMap<(String, String, String), usize>>;

/// What the database holds of the runs: their statuses, the items still waiting, their
/// call records.
pub struct Held {
    pub statuses: BTreeMap<String, String>,
    pub waiting: i64,
    pub calls: Recorded,
}

/// The SQLite file after the servers stopped: every run in it is one of this load's.
pub fn sqlite(path: &Path, runs: usize) -> Vec<String> {
    match read_sqlite(path) {
        Ok(held) => judge(runs, &held),
        Err(e) => vec![format!("{}: {e}", path.display())],
    }
}

fn read_sqlite(path: &Path) -> rusqlite::Result<Held> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statuses = BTreeMap::new();
    let mut stmt = conn.prepare("SELECT id, status FROM runs")?;
    for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))? {
        let (id, status) = row?;
        statuses.insert(id, status);
    }
    let waiting: i64 = conn.query_row(
        "SELECT COUNT(*) FROM pending WHERE state != 'done'",
        [],
        |r| r.get(0),
    )?;
    let mut calls: Recorded = BTreeMap::new();
    let mut stmt = conn.prepare("SELECT run_id, call_id, tool, status FROM tool_calls")?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?.unwrap_or_default(),
            (r.get(1)?, r.get(2)?, r.get(3)?),
        ))
    })? {
        let (run, call) = row?;
        *calls.entry(run).or_default().entry(call).or_default() += 1;
    }
    Ok(Held {
        statuses,
        waiting,
        calls,
    })
}

/// The PostgreSQL database after the load: the runs this load completed (the database
/// may hold others').
pub async fn postgres(url: &str, run_ids: &[String]) -> Vec<String> {
    match read_postgres(url, run_ids).await {
        Ok(held) => judge(run_ids.len(), &held),
        Err(e) => vec![format!("PostgreSQL: {e}")],
    }
}

async fn read_postgres(url: &str, ids: &[String]) -> Res<Held> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let e = |e: tokio_postgres::Error| e.to_string();
    let ids = ids.to_vec();
    let mut statuses = BTreeMap::new();
    for row in client
        .query("SELECT id, status FROM runs WHERE id = ANY($1)", &[&ids])
        .await
        .map_err(e)?
    {
        statuses.insert(row.get(0), row.get(1));
    }
    let waiting: i64 = client
        .query_one(
            "SELECT COUNT(*) FROM pending WHERE run_id = ANY($1) AND state != 'done'",
            &[&ids],
        )
        .await
        .map_err(e)?
        .get(0);
    let mut calls: Recorded = BTreeMap::new();
    for row in client
        .query(
            "SELECT run_id, call_id, tool, status FROM tool_calls WHERE run_id = ANY($1)",
            &[&ids],
        )
        .await
        .map_err(e)?
    {
        let run: Option<String> = row.get(0);
        let call = (row.get(1), row.get(2), row.get(3));
        *calls
            .entry(run.unwrap_or_default())
            .or_default()
            .entry(call)
            .or_default() += 1;
    }
    Ok(Held {
        statuses,
        waiting,
        calls,
    })
}

fn judge(runs: usize, held: &Held) -> Vec<String> {
    let mut failures = Vec::new();
    if held.statuses.len() != runs {
        failures.push(format!(
            "database: {} runs, expected {runs}",
            held.statuses.len()
        ));
    }
    let want: BTreeMap<(String, String, String), usize> = EXPECTED_CALLS
        .iter()
        .map(|(a, b, c)| ((a.to_string(), b.to_string(), c.to_string()), 1))
        .collect();
    for (id, status) in &held.statuses {
        if status != "completed" {
            failures.push(format!("database: run {id} is {status}"));
        }
        let got = held.calls.get(id).cloned().unwrap_or_default();
        if got != want {
            failures.push(format!("database: run {id} has the records {got:?}"));
        }
    }
    for run in held
        .calls
        .keys()
        .filter(|r| !held.statuses.contains_key(*r))
    {
        failures.push(format!("database: records of an unknown run '{run}'"));
    }
    if held.waiting != 0 {
        failures.push(format!("database: {} pending items not done", held.waiting));
    }
    failures
}

/// A server's log: no error lines (a 5xx, a lock error, a lost lease...).
pub fn log(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            l.contains("ERROR") || lower.contains("locked") || lower.contains("panicked")
        })
        .map(|l| format!("server log: {}", truncate(l)))
        .collect()
}

/// The calls `GET /v1/stats` counts over every run.
pub async fn global_stats(base: &str) -> Res<u64> {
    let body: serde_json::Value = reqwest::Client::new()
        .get(format!("{base}/v1/stats"))
        .send()
        .await
        .map_err(|e| format!("GET /v1/stats: {e}"))?
        .json()
        .await
        .map_err(|e| format!("GET /v1/stats: {e}"))?;
    body["total_calls"]
        .as_u64()
        .ok_or_else(|| format!("GET /v1/stats: no total_calls in {body}"))
}
