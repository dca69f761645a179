//! Upkeep off the hot path, on a thread of its own: it folds new records into the
//! running totals (`totals.rs`) when no one waits to write (or, under constant load,
//! once the tail grows long), prunes the change feed's old rows, and checkpoints the
//! WAL with its own connection when the WAL has grown (PASSIVE: commits go on
//! meanwhile; the writer's connection never checkpoints inside a commit). Under
//! constant load a passive checkpoint never finds a moment without readers, so the WAL
//! is never reset and grows without end: past [`WAL_BOUND`] the writer itself runs a
//! RESTART checkpoint, holding this process's writes (and, through SQLite's lock, other
//! processes') for the moment it takes, and its next commit cuts the file back to
//! [`WAL_CEILING`] when it grew past it. It wakes when the writer nudges it and
//! every quarter second, and ends with the store.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use super::totals::{self, FOLD_AT, FOLD_BUSY};
use super::writer::{Job, Writer};

/// The WAL size that asks for a checkpoint (about SQLite's own default).
pub(crate) const WAL_BYTES: u64 = 4 << 20;
/// The WAL size that a store opening empties first. Each process that opens the
/// database reads its whole WAL once (to rebuild the WAL index), and processes that
/// live a few milliseconds (`toolgate run` to a pause) never stay for a checkpoint:
/// without this, each of them reads a WAL that only grows.
const WAL_OPEN_BYTES: u64 = 1 << 20;
/// The WAL size past which the writer resets it (a RESTART checkpoint), whatever the
/// load.
pub(crate) const WAL_BOUND: u64 = 32 << 20;
/// The WAL file's ceiling: the writer's first commit after a reset cuts a longer file
/// back to this (`journal_size_limit`). Below it the file keeps its size, since
/// rewriting blocks it has is cheaper than growing it again.
pub(crate) const WAL_CEILING: u64 = 64 << 20;
/// Commits between two prunes of the change feed.
const PRUNE_EVERY: u64 = 2000;
/// How often it looks without being nudged.
const TICK: Duration = Duration::from_millis(250);

/// Starts the thread for `writer` on the database at `db`.
pub(crate) fn start(writer: &Arc<Writer>, db: &Path, busy: Duration) -> std::io::Result<()> {
    let (nudge, rx) = sync_channel(1);
    writer.set_nudge(nudge);
    let weak = Arc::downgrade(writer);
    let path = db.to_path_buf();
    std::thread::Builder::new()
        .name("toolgate-store-upkeep".into())
        .spawn(move || run(&weak, &path, busy, &rx))?;
    Ok(())
}

fn run(writer: &Weak<Writer>, path: &Path, busy: Duration, rx: &Receiver<()>) {
    let wal = wal_of(path);
    let mut conn: Option<Connection> = None;
    // A WAL left long by short-lived processes was emptied at open (`empty_long_wal`).
    let mut seen = 0;
    let mut pruned = 0;
    loop {
        if let Err(RecvTimeoutError::Disconnected) = rx.recv_timeout(TICK) {
            break;
        }
        let Some(w) = writer.upgrade() else { break };
        let commits = w.commits();
        if commits == seen {
            continue;
        }
        if conn.is_none() {
            conn = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .and_then(|c| c.busy_timeout(busy).map(|()| c))
            .and_then(|c| super::configure(&c).map(|()| c))
            .map_err(|e| tracing::warn!(error = %e, "no upkeep connection"))
            .ok();
        }
        let Some(c) = &conn else { continue };
        let mut caught_up = true;
        match totals::unfolded(c) {
            Ok(n) if n >= FOLD_AT => {
                if !w.try_idle_job(fold_job()) {
                    if n >= FOLD_BUSY {
                        let _ = w.queue_job(fold_job());
                    } else {
                        // Busy: again at the next tick.
                        caught_up = false;
                    }
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read the totals' mark"),
        }
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_BYTES)
            && let Some(log) = checkpoint(c)
        {
            // The WAL in use (not the file, which keeps its size up to its ceiling)
            // past the bound: the writer restarts it (a RESTART checkpoint copies what
            // the passive one left).
            let in_use = log.max(0) as u64 * page_size(c);
            if in_use > WAL_BOUND {
                let _ = w.queue_job(reset_job(in_use, busy));
            }
        }
        if commits >= pruned + PRUNE_EVERY && w.try_idle_job(prune_job()) {
            pruned = commits;
        }
        if caught_up {
            seen = commits;
        }
    }
}

/// A transaction that folds one chunk of records into the totals.
fn fold_job() -> Job {
    Box::new(|conn: &mut Connection| {
        let started = Instant::now();
        let result = (|| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let n = totals::fold(&tx)?;
            tx.commit()?;
            Ok::<i64, rusqlite::Error>(n)
        })();
        match result {
            Ok(0) => {}
            Ok(n) => tracing::debug!(
                records = n,
                ms = started.elapsed().as_secs_f64() * 1e3,
                "totals folded"
            ),
            // The totals stay behind; summaries read the tail meanwhile.
            Err(e) => tracing::warn!(error = %e, "totals not folded"),
        }
    })
}

/// Prunes the change feed's old rows.
fn prune_job() -> Job {
    Box::new(|conn: &mut Connection| match super::changes::prune(conn) {
        Ok(n) => tracing::debug!(rows = n, "change feed pruned"),
        Err(e) => tracing::warn!(error = %e, "change feed not pruned"),
    })
}

/// How long a reset waits for readers of older snapshots before it gives up until the
/// next tick (writes wait meanwhile, so not long).
const RESET_WAIT: Duration = Duration::from_millis(200);

/// On the writer: checkpoints what is left of the WAL and restarts it from its start
/// (RESTART: the file keeps its size, rewriting its blocks is cheaper than growing it
/// again). It waits (at most [`RESET_WAIT`]) for readers of older snapshots to finish;
/// new writes wait for it.
fn reset_job(in_use: u64, busy: Duration) -> Job {
    Box::new(move |conn: &mut Connection| {
        let started = Instant::now();
        let _ = conn.busy_timeout(RESET_WAIT);
        match conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        }) {
            Ok((blocked, pages)) => tracing::debug!(
                wal_bytes = in_use,
                reset = blocked == 0,
                wal_pages = pages,
                ms = started.elapsed().as_secs_f64() * 1e3,
                "long wal reset"
            ),
            Err(e) => tracing::debug!(error = %e, "the long wal could not be reset yet"),
        }
        let _ = conn.busy_timeout(busy);
    })
}

/// At open: a WAL past [`WAL_OPEN_BYTES`] is checkpointed whole and emptied, unless
/// another process is using it right now (then it is left for later: no wait).
pub(crate) fn empty_long_wal(conn: &Connection, db: &Path, busy: Duration) {
    if !std::fs::metadata(wal_of(db)).is_ok_and(|m| m.len() > WAL_OPEN_BYTES) {
        return;
    }
    let started = Instant::now();
    let _ = conn.busy_timeout(Duration::ZERO);
    match conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
    }) {
        Ok((blocked, pages)) => tracing::debug!(
            emptied = blocked == 0,
            wal_pages = pages,
            ms = started.elapsed().as_secs_f64() * 1e3,
            "long wal checkpointed at open"
        ),
        Err(e) => tracing::debug!(error = %e, "long wal left for later (in use)"),
    }
    let _ = conn.busy_timeout(busy);
}

/// The WAL file beside the database `db`.
fn wal_of(db: &Path) -> PathBuf {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    PathBuf::from(wal)
}

/// A PASSIVE checkpoint: the WAL's frames in use (how many it copied is logged).
fn checkpoint(conn: &Connection) -> Option<i64> {
    let started = Instant::now();
    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
    }) {
        Ok((log, done)) => {
            tracing::debug!(
                wal_pages = log,
                checkpointed = done,
                ms = started.elapsed().as_secs_f64() * 1e3,
                "wal checkpoint"
            );
            Some(log)
        }
        Err(e) => {
            tracing::warn!(error = %e, "wal checkpoint failed");
            None
        }
    }
}

/// The database's page size (the WAL's frames hold one page each).
fn page_size(conn: &Connection) -> u64 {
    conn.query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .map_or(4096, |p| p.max(512) as u64)
}
