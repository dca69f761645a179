//! After the load: what the database holds (every run completed, nothing waiting, one
//! record per call) and what the world saw (the lines the tool appended, in every
//! worker's workspace: one per approved call).

use std::collections::BTreeMap;

use crate::Res;

/// What the database says of the soak's runs.
pub struct Recorded {
    /// Run id -> status.
    pub statuses: BTreeMap<String, String>,
    /// Pending items not done.
    pub waiting: i64,
    /// Run id -> (record status, how many records of call_deploy).
    pub deploys: BTreeMap<String, Vec<String>>,
}

/// Reads the runs, pending items and records from the database at `url`.
pub async fn read(url: &str) -> Res<Recorded> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    let conn = tokio::spawn(conn);
    let q = |e: tokio_postgres::Error| e.to_string();
    let mut statuses = BTreeMap::new();
    for row in client
        .query("SELECT id, status FROM runs", &[])
        .await
        .map_err(q)?
    {
        statuses.insert(row.get(0), row.get(1));
    }
    let waiting: i64 = client
        .query_one("SELECT COUNT(*) FROM pending WHERE state <> 'done'", &[])
        .await
        .map_err(q)?
        .get(0);
    let mut deploys: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in client
        .query(
            "SELECT run_id, status FROM tool_calls WHERE call_id = 'call_deploy' ORDER BY id",
            &[],
        )
        .await
        .map_err(q)?
    {
        let run: Option<String> = row.get(0);
        deploys
            .entry(run.unwrap_or_default())
            .or_default()
            .push(row.get(1));
    }
    drop(client);
    let _ = conn.await;
    Ok(Recorded {
        statuses,
        waiting,
        deploys,
    })
}

/// Every `RUN CALL` line the tool wrote, in the workspaces under `folders`: run -> count.
pub fn effects(folders: &[std::path::PathBuf]) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for f in folders {
        let text = std::fs::read_to_string(f.join("workspace").join(crate::workers::EFFECTS))
            .unwrap_or_default();
        for line in text.lines() {
            if let Some((run, call)) = line.split_once(' ')
                && call == "call_deploy"
            {
                *seen.entry(run.to_string()).or_insert(0) += 1;
            }
        }
    }
    seen
}

/// The broken invariants; `interrupted` counts the calls whose execution a kill cut
/// (recorded, not succeeded, at most one effect): the at-most-once side of the fence.
pub fn judge(
    runs: &[String],
    recorded: &Recorded,
    effects: &BTreeMap<String, usize>,
    interrupted: &mut Vec<String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    if recorded.statuses.len() != runs.len() {
        failures.push(format!(
            "database: {} runs, the clients completed {}",
            recorded.statuses.len(),
            runs.len()
        ));
    }
    for (id, status) in &recorded.statuses {
        if status != "completed" {
            failures.push(format!("run {id} is {status}"));
        }
        let records = recorded.deploys.get(id).cloned().unwrap_or_default();
        let done = effects.get(id).copied().unwrap_or(0);
        match records.as_slice() {
            [one] if one == "succeeded" => {
                if done != 1 {
                    failures.push(format!(
                        "run {id}: the approved call succeeded but its side effect happened {done} times"
                    ));
                }
            }
            [one] => {
                if done > 1 {
                    failures.push(format!(
                        "run {id}: the call ({one}) had its side effect {done} times"
                    ));
                }
                interrupted.push(format!("{id} ({one}, {done} effect)"));
            }
            other => failures.push(format!(
                "run {id}: {} records of the approved call ({other:?})",
                other.len()
            )),
        }
    }
    for run in effects
        .keys()
        .filter(|r| !recorded.statuses.contains_key(*r))
    {
        failures.push(format!("a side effect of an unknown run '{run}'"));
    }
    if recorded.waiting != 0 {
        failures.push(format!("{} pending items not done", recorded.waiting));
    }
    failures
}

/// What database `db` has executed so far (pg_stat_statements must be loaded):
/// (statements other than BEGIN/COMMIT/ROLLBACK, COMMITs).
pub async fn counters(server: &str, db: &str) -> Res<(i64, i64)> {
    let (client, conn) = tokio_postgres::connect(server, tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    let conn = tokio::spawn(conn);
    let q = |e: tokio_postgres::Error| e.to_string();
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .map_err(q)?;
    let row = client
        .query_one(
            "SELECT
                 COALESCE(SUM(calls) FILTER (WHERE upper(query) NOT IN ('BEGIN', 'COMMIT', 'ROLLBACK')), 0)::bigint,
                 COALESCE(SUM(calls) FILTER (WHERE upper(query) = 'COMMIT'), 0)::bigint
             FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
             WHERE d.datname = $1",
            &[&db],
        )
        .await
        .map_err(q)?;
    drop(client);
    let _ = conn.await;
    Ok((row.get(0), row.get(1)))
}

/// Creates database `name` on the server; its URL.
pub async fn create_database(server: &str, name: &str) -> Res<String> {
    let (client, conn) = tokio_postgres::connect(server, tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    let conn = tokio::spawn(conn);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .map_err(|e| e.to_string())?;
    drop(client);
    let _ = conn.await;
    let mut url = url::Url::parse(server).map_err(|e| e.to_string())?;
    url.set_path(name);
    Ok(url.to_string())
}
