//! The SQLite side of the change feed: one thread per store follows the `changes` rows
//! the schema's triggers write (migration 13), from the last it saw, and hands each to
//! every watcher. It asks SQLite's `data_version` first, so an idle store costs one
//! pragma per tick; old rows are pruned by the upkeep.

use std::path::Path;
use std::sync::Weak;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, params};
use tokio::sync::broadcast;

use crate::feed::{Change, ChangeKind};
use toolgate_protocol::RunStatus;

/// How often it looks.
const TICK: Duration = Duration::from_millis(25);
/// Changes a slow watcher may fall behind by before it misses some.
pub(crate) const BACKLOG: usize = 4096;
/// Rows kept; older ones are pruned (a process starting now begins after the newest).
pub(crate) const KEEP: i64 = 20_000;
/// Most rows read at a time.
const BATCH: i64 = 1000;

/// Starts the thread following `db` for `tx`'s watchers; it ends when `alive` does.
pub(crate) fn start(
    db: &Path,
    busy: Duration,
    tx: broadcast::Sender<Change>,
    alive: Weak<()>,
) -> std::io::Result<()> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|c| c.busy_timeout(busy).map(|()| c))
    .and_then(|c| super::configure(&c).map(|()| c))
    .and_then(|c| c.pragma_update(None, "query_only", "ON").map(|()| c))
    .map_err(std::io::Error::other)?;
    let mut last = newest(&conn).map_err(std::io::Error::other)?;
    std::thread::Builder::new()
        .name("toolgate-store-feed".into())
        .spawn(move || {
            let mut version = None;
            while alive.strong_count() > 0 {
                match follow(&conn, &mut last, &mut version, &tx) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "the change feed cannot read the store"),
                }
                std::thread::sleep(TICK);
            }
        })?;
    Ok(())
}

/// The newest change's number (0 when none).
fn newest(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT COALESCE(max(seq), 0) FROM changes", [], |r| {
        r.get(0)
    })
}

/// Hands on the changes after `last`, when the store changed since `version`. True
/// when a full batch was read (more may wait).
fn follow(
    conn: &Connection,
    last: &mut i64,
    version: &mut Option<i64>,
    tx: &broadcast::Sender<Change>,
) -> rusqlite::Result<bool> {
    let now: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
    if *version == Some(now) {
        return Ok(false);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT seq, run_id, tenant, kind, status, origin FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2",
    )?;
    let rows = stmt
        .query_map(params![*last, BATCH], |r| {
            let kind: String = r.get(3)?;
            let status: String = r.get(4)?;
            Ok(Change {
                seq: r.get(0)?,
                run_id: r.get(1)?,
                tenant: r.get(2)?,
                kind: kind.parse().unwrap_or(ChangeKind::Saved),
                status: status.parse().unwrap_or(RunStatus::InProgress),
                origin: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let full = rows.len() as i64 == BATCH;
    if !full {
        // Everything up to this version is read.
        *version = Some(now);
    }
    for change in rows {
        *last = change.seq;
        // No watcher now: nothing to hand on.
        let _ = tx.send(change);
    }
    Ok(full)
}

/// Deletes all but the newest [`KEEP`] rows.
pub(crate) fn prune(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?1",
        [KEEP],
    )
}
