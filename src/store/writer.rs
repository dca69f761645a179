//! The writer thread: it owns the only writing connection and commits in groups. Every
//! batch sent while a transaction is being written joins the next one, so many callers
//! share one commit; each is answered only once its records are committed. When no one
//! waits, it folds new records into the running totals (`totals.rs`). It logs its
//! start and stop and each group commit (debug), its own transactions (trace) and every
//! failed commit (warn), inside a `store_writer{db}` span.

use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::StoreError;
use super::record::{CallRecord, INSERT, insert};

/// Most batches in one transaction.
const GROUP_MAX: usize = 512;

pub(crate) enum Msg {
    /// Records to insert; the answer comes after the commit.
    Calls(Vec<CallRecord>, oneshot::Sender<Result<(), StoreError>>),
    /// Work that needs a transaction of its own (run state, decisions); it answers
    /// through its own channel.
    Exec(Box<dyn FnOnce(&mut Connection) + Send>),
}

type Ack = oneshot::Sender<Result<(), StoreError>>;

/// Runs until every sender is gone.
pub(crate) fn run(
    mut conn: Connection,
    rx: Receiver<Msg>,
    describe: impl Fn(rusqlite::Error) -> StoreError,
) {
    let db = conn.path().unwrap_or_default().to_string();
    let _span = tracing::debug_span!("store_writer", db = %db).entered();
    tracing::debug!("store writer started");
    let mut totals = Totals::default();
    let mut carried: Option<Msg> = None;
    let mut busy_groups = 0u32;
    loop {
        let first = match carried.take() {
            Some(m) => m,
            None => match rx.recv() {
                Ok(m) => m,
                Err(_) => break,
            },
        };
        let mut batches: Vec<(Vec<CallRecord>, Ack)> = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Calls(records, ack) => batches.push((records, ack)),
                Msg::Exec(job) => {
                    // Records sent before this job are committed before it runs.
                    commit(
                        &mut conn,
                        std::mem::take(&mut batches),
                        &describe,
                        &mut totals,
                    );
                    let started = Instant::now();
                    job(&mut conn);
                    totals.jobs += 1;
                    tracing::trace!(ms = elapsed_ms(started), "store transaction done");
                }
            }
            if batches.len() < GROUP_MAX {
                match rx.try_recv() {
                    Ok(m) => next = Some(m),
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
                }
            }
        }
        commit(&mut conn, batches, &describe, &mut totals);
        // Off the hot path: the running totals catch up when nobody waits, or (rarely)
        // when the tail a summary would read grows long under constant load.
        match rx.try_recv() {
            Ok(m) => {
                carried = Some(m);
                busy_groups += 1;
                if busy_groups >= 256 {
                    busy_groups = 0;
                    fold(&mut conn, super::totals::FOLD_BUSY);
                }
            }
            Err(TryRecvError::Empty) => {
                busy_groups = 0;
                fold(&mut conn, super::totals::FOLD_AT);
            }
            Err(TryRecvError::Disconnected) => break,
        }
    }
    tracing::debug!(
        commits = totals.commits,
        records = totals.records,
        failed_commits = totals.failed,
        transactions = totals.jobs,
        "store writer stopped"
    );
}

/// What the writer did in its life, for its last log line.
#[derive(Default)]
struct Totals {
    commits: u64,
    records: u64,
    failed: u64,
    jobs: u64,
}

fn elapsed_ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

fn commit(
    conn: &mut Connection,
    batches: Vec<(Vec<CallRecord>, Ack)>,
    describe: &impl Fn(rusqlite::Error) -> StoreError,
    totals: &mut Totals,
) {
    if batches.is_empty() {
        return;
    }
    let records: usize = batches.iter().map(|(r, _)| r.len()).sum();
    let started = Instant::now();
    let result = write(conn, &batches).map_err(describe);
    match &result {
        Ok(()) => {
            totals.commits += 1;
            totals.records += records as u64;
            tracing::debug!(
                batches = batches.len(),
                records,
                ms = elapsed_ms(started),
                "call records committed"
            );
        }
        Err(e) => {
            totals.failed += 1;
            tracing::warn!(
                batches = batches.len(),
                records,
                error = %e,
                "call records not committed"
            );
        }
    }
    for (_, ack) in batches {
        // A caller that stopped waiting does not need the answer.
        let _ = ack.send(result.clone());
    }
}

/// Folds records into the running totals when at least `threshold` wait.
fn fold(conn: &mut Connection, threshold: i64) {
    let started = Instant::now();
    let result = (|| {
        if super::totals::unfolded(conn)? < threshold {
            return Ok(0);
        }
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let n = super::totals::fold(&tx)?;
        tx.commit()?;
        Ok::<i64, rusqlite::Error>(n)
    })();
    match result {
        Ok(0) => {}
        Ok(n) => tracing::debug!(records = n, ms = elapsed_ms(started), "totals folded"),
        // The totals stay behind; summaries read the tail meanwhile.
        Err(e) => tracing::warn!(error = %e, "totals not folded"),
    }
}

fn write(conn: &mut Connection, group: &[(Vec<CallRecord>, Ack)]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut stmt = tx.prepare_cached(INSERT)?;
        for (records, _) in group {
            for r in records {
                insert(&mut stmt, r)?;
            }
        }
    }
    tx.commit()
}
