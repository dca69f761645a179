//! The writer: the only writing connection, and group commit without a thread of its
//! own. A caller queues its work (records to insert, or a transaction to run); when no
//! one is writing it becomes the writer and commits what is queued, its own and what
//! others queue meanwhile, group after group, until the queue is empty; otherwise the
//! writer of the moment commits it. Each caller is answered only once its records are
//! committed. So a lone run commits on its own thread, with no hand-off, and many runs
//! still share commits. The upkeep thread (`upkeep.rs`) folds the running totals and
//! checkpoints the WAL when no one waits. It logs each group commit (debug), its own
//! transactions (trace), every failed commit (warn) and its totals when it closes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::StoreError;
use super::record::{CallRecord, INSERT, insert};

/// Most batches in one transaction.
const GROUP_MAX: usize = 512;

pub(crate) type Job = Box<dyn FnOnce(&mut Connection) + Send>;

pub(crate) enum Msg {
    /// Records to insert; the answer (the records given back) comes after the commit.
    Calls(Vec<CallRecord>, Ack),
    /// Work that needs a transaction of its own (run state, decisions); it answers
    /// through its own channel.
    Exec(Job),
}

pub(crate) type Ack = oneshot::Sender<Result<Vec<CallRecord>, StoreError>>;

type Describe = Box<dyn Fn(rusqlite::Error) -> StoreError + Send + Sync>;

/// The queue and the connection; shared by every clone of a store.
pub(crate) struct Writer {
    /// The database file, for the logs' `store_writer{db}` span.
    db: String,
    queue: Mutex<Queue>,
    conn: Mutex<Option<(Connection, Totals)>>,
    describe: Describe,
    /// Transactions committed so far (the upkeep thread watches it).
    pub(crate) commits: AtomicU64,
    /// Records committed since the upkeep thread was last nudged.
    unnudged: AtomicU64,
    nudge: Mutex<Option<std::sync::mpsc::SyncSender<()>>>,
}

#[derive(Default)]
struct Queue {
    msgs: Vec<Msg>,
    /// Someone is writing: what is queued is theirs to commit.
    writing: bool,
    closed: bool,
}

/// The target of the writer's logs: where they were before the SQLite backend got its
/// own folder (log filters and readers name it).
const LOG: &str = "toolgate::store::writer";

/// Work refused because the writer is closed.
pub(crate) struct Closed;

impl Writer {
    pub(crate) fn new(conn: Connection, describe: Describe) -> Self {
        let db = conn.path().unwrap_or_default().to_string();
        tracing::debug_span!(target: LOG, "store_writer", db = %db)
            .in_scope(|| tracing::debug!(target: LOG, "store writer started"));
        Self {
            db,
            queue: Mutex::new(Queue::default()),
            conn: Mutex::new(Some((conn, Totals::default()))),
            describe,
            commits: AtomicU64::new(0),
            unnudged: AtomicU64::new(0),
            nudge: Mutex::new(None),
        }
    }

    /// Where to nudge the upkeep thread when many records were committed.
    pub(crate) fn set_nudge(&self, nudge: std::sync::mpsc::SyncSender<()>) {
        if let Ok(mut n) = self.nudge.lock() {
            *n = Some(nudge);
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `msg`, and commits it (with whatever else is queued) unless someone is
    /// already writing. Blocks while it writes.
    pub(crate) fn submit(&self, msg: Msg) -> Result<(), Closed> {
        {
            let mut q = self.queue();
            if q.closed {
                return Err(Closed);
            }
            q.msgs.push(msg);
            if q.writing {
                return Ok(());
            }
            q.writing = true;
        }
        self.write_queued();
        Ok(())
    }

    /// Becomes the writer if no one is and nothing waits, then runs `job` and commits
    /// what was queued meanwhile. Returns false (and does nothing) otherwise.
    pub(crate) fn try_idle_job(&self, job: Job) -> bool {
        {
            let mut q = self.queue();
            if q.writing || q.closed || !q.msgs.is_empty() {
                return false;
            }
            q.msgs.push(Msg::Exec(job));
            q.writing = true;
        }
        self.write_queued();
        true
    }

    /// Queues `job` to run after what is queued, whoever writes (never waits for it).
    pub(crate) fn queue_job(&self, job: Job) -> Result<(), Closed> {
        self.submit(Msg::Exec(job))
    }

    /// The writer's loop: group after group until the queue is empty.
    fn write_queued(&self) {
        // Should a job panic, the next caller becomes the writer rather than wait forever.
        struct Release<'a>(&'a Writer);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.queue().writing = false;
                }
            }
        }
        let _release = Release(self);
        let _span = tracing::debug_span!(target: LOG, "store_writer", db = %self.db).entered();
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let msgs = {
                let mut q = self.queue();
                if q.msgs.is_empty() {
                    q.writing = false;
                    break;
                }
                std::mem::take(&mut q.msgs)
            };
            match conn.as_mut() {
                // Closed: the answers are dropped, and their callers told the writer is gone.
                None => drop(msgs),
                Some((c, totals)) => self.write_group(c, totals, msgs),
            }
        }
    }

    fn write_group(&self, conn: &mut Connection, totals: &mut Totals, msgs: Vec<Msg>) {
        let mut batches: Vec<(Vec<CallRecord>, Ack)> = Vec::new();
        for msg in msgs {
            match msg {
                Msg::Calls(records, ack) => {
                    batches.push((records, ack));
                    if batches.len() >= GROUP_MAX {
                        self.commit(conn, std::mem::take(&mut batches), totals);
                    }
                }
                Msg::Exec(job) => {
                    // Records queued before this job are committed before it runs.
                    self.commit(conn, std::mem::take(&mut batches), totals);
                    let started = Instant::now();
                    job(conn);
                    totals.jobs += 1;
                    self.commits.fetch_add(1, Ordering::Relaxed);
                    toolgate_telemetry::metrics::store_committed(false, started.elapsed());
                    tracing::trace!(target: LOG, ms = elapsed_ms(started), "store transaction done");
                }
            }
        }
        self.commit(conn, batches, totals);
    }

    fn commit(
        &self,
        conn: &mut Connection,
        batches: Vec<(Vec<CallRecord>, Ack)>,
        totals: &mut Totals,
    ) {
        if batches.is_empty() {
            return;
        }
        let records: usize = batches.iter().map(|(r, _)| r.len()).sum();
        let started = Instant::now();
        let result = write(conn, &batches).map_err(&self.describe);
        match &result {
            Ok(()) => {
                totals.commits += 1;
                totals.records += records as u64;
                self.commits.fetch_add(1, Ordering::Relaxed);
                toolgate_telemetry::metrics::store_committed(true, started.elapsed());
                tracing::debug!(
                    target: LOG,
                    batches = batches.len(),
                    records,
                    ms = elapsed_ms(started),
                    "call records committed"
                );
            }
            Err(e) => {
                totals.failed += 1;
                tracing::warn!(
                    target: LOG,
                    batches = batches.len(),
                    records,
                    error = %e,
                    "call records not committed"
                );
            }
        }
        for (records, ack) in batches {
            // A caller that stopped waiting does not need the answer.
            let _ = ack.send(result.clone().map(|()| records));
        }
        let pending = self
            .unnudged
            .fetch_add(records as u64, Ordering::Relaxed)
            .saturating_add(records as u64);
        if pending >= super::totals::FOLD_AT as u64 {
            self.unnudged.store(0, Ordering::Relaxed);
            if let Ok(n) = self.nudge.lock()
                && let Some(n) = n.as_ref()
            {
                let _ = n.try_send(());
            }
        }
    }

    /// Refuses new work, lets the writer of the moment finish what is queued, and
    /// closes the connection.
    pub(crate) fn close(&self) {
        self.queue().closed = true;
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, totals)) = conn.take() {
            let _span = tracing::debug_span!(target: LOG, "store_writer", db = %self.db).entered();
            tracing::debug!(
                target: LOG,
                commits = totals.commits,
                records = totals.records,
                failed_commits = totals.failed,
                transactions = totals.jobs,
                "store writer stopped"
            );
        }
        if let Ok(mut n) = self.nudge.lock() {
            n.take();
        }
    }
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
