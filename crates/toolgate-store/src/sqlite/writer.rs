//! The writer: the only writing connection, on a thread of its own, with group commit
//! for everything it writes. Callers queue their work (records to insert, or a
//! transaction's work) and await the answer; they never block their own thread, so a
//! server's runtime threads keep serving while the writer commits. The thread takes
//! everything queued at once and runs it in one transaction, each caller's work in a
//! savepoint of its own (a failing piece is rolled back alone), commits once, and only
//! then answers each caller (when SQLite rolls the whole transaction back with a
//! failing piece, those before it are answered with that failure). Many runs share one
//! commit, one WAL append and one wake-up. Upkeep work (`upkeep.rs`: folding totals, checkpoints) runs between groups,
//! outside any transaction. It logs each group commit (debug), every failed commit
//! (warn) and its totals when it closes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::StoreError;
use super::record::{CallRecord, INSERT, insert};

/// Most pieces of work in one transaction.
const GROUP_MAX: usize = 512;

/// Work on the bare connection, outside any transaction (upkeep).
pub(crate) type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A transaction's work, run inside the group's transaction: given the connection (or
/// the reason there is no transaction to run in), it does its work in a savepoint and
/// returns what answers its caller once the group is committed (`None` when it has
/// answered already: it failed, and its savepoint was rolled back).
pub(crate) type TxJob =
    Box<dyn FnOnce(Result<&mut Connection, StoreError>) -> Option<Settle> + Send>;

/// Answers a caller with the group's commit.
pub(crate) type Settle = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

pub(crate) enum Msg {
    /// Records to insert; the answer (the records given back) comes after the commit.
    Calls(Vec<CallRecord>, Ack),
    /// A transaction's work (run state, decisions), grouped with the rest.
    Tx(TxJob),
    /// Upkeep on the bare connection, between groups.
    Exec(Job),
}

pub(crate) type Ack = oneshot::Sender<Result<Vec<CallRecord>, StoreError>>;

type Describe = Box<dyn Fn(rusqlite::Error) -> StoreError + Send + Sync>;

/// What callers share with the writer's thread.
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Transactions committed so far (the upkeep thread watches it).
    commits: AtomicU64,
    /// Records committed since the upkeep thread was last nudged.
    unnudged: AtomicU64,
    nudge: Mutex<Option<std::sync::mpsc::SyncSender<()>>>,
}

#[derive(Default)]
struct Queue {
    msgs: Vec<Msg>,
    /// The thread is writing a group (what is queued waits for the next).
    busy: bool,
    closed: bool,
}

/// The handle every clone of a store shares; dropping it stops the thread once what is
/// queued is written.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The target of the writer's logs: where they were before the SQLite backend got its
/// own folder (log filters and readers name it).
const LOG: &str = "toolgate::store::writer";

/// Work refused because the writer is closed.
pub(crate) struct Closed;

impl Writer {
    /// Starts the writer's thread on `conn`.
    pub(crate) fn start(conn: Connection, describe: Describe) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            commits: AtomicU64::new(0),
            unnudged: AtomicU64::new(0),
            nudge: Mutex::new(None),
        });
        let thread = Thread {
            db: conn.path().unwrap_or_default().to_string(),
            conn,
            describe,
            shared: Arc::clone(&shared),
            totals: Totals::default(),
        };
        let handle = std::thread::Builder::new()
            .name("toolgate-store-writer".into())
            .spawn(move || thread.run())?;
        Ok(Self {
            shared,
            thread: Mutex::new(Some(handle)),
        })
    }

    /// Transactions committed so far.
    pub(crate) fn commits(&self) -> u64 {
        self.shared.commits.load(Ordering::Relaxed)
    }

    /// Where to nudge the upkeep thread when many records were committed.
    pub(crate) fn set_nudge(&self, nudge: std::sync::mpsc::SyncSender<()>) {
        if let Ok(mut n) = self.shared.nudge.lock() {
            *n = Some(nudge);
        }
    }

    /// Queues `msg` for the next group; never waits for the disk.
    pub(crate) fn submit(&self, msg: Msg) -> Result<(), Closed> {
        let mut q = self.shared.queue();
        if q.closed {
            return Err(Closed);
        }
        q.msgs.push(msg);
        if q.msgs.len() == 1 {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    /// Queues `job` only when the writer is idle and nothing waits (upkeep that must not
    /// delay anyone). Returns false (and does nothing) otherwise.
    pub(crate) fn try_idle_job(&self, job: Job) -> bool {
        let mut q = self.shared.queue();
        if q.busy || q.closed || !q.msgs.is_empty() {
            return false;
        }
        q.msgs.push(Msg::Exec(job));
        self.shared.wake.notify_one();
        true
    }

    /// Queues `job` after what is queued.
    pub(crate) fn queue_job(&self, job: Job) -> Result<(), Closed> {
        self.submit(Msg::Exec(job))
    }

    /// Refuses new work, lets the thread write what is queued, and waits for it to
    /// close its connection.
    pub(crate) fn close(&self) {
        {
            let mut q = self.shared.queue();
            q.closed = true;
            self.shared.wake.notify_one();
        }
        let handle = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(handle) = handle
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
        if let Ok(mut n) = self.shared.nudge.lock() {
            n.take();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The writer's thread: its connection and what it did.
struct Thread {
    db: String,
    conn: Connection,
    describe: Describe,
    shared: Arc<Shared>,
    totals: Totals,
}

impl Thread {
    fn run(mut self) {
        let _span = tracing::debug_span!(target: LOG, "store_writer", db = %self.db).entered();
        tracing::debug!(target: LOG, "store writer started");
        while let Some(msgs) = self.next_group() {
            // A panicking piece of work loses its own answer (its caller hears that the
            // writer is gone), never the thread: the group is rolled back and the next
            // one goes on.
            let group = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.write_group(msgs);
            }));
            if group.is_err() {
                let _ = self.conn.execute_batch("ROLLBACK");
                tracing::error!(target: LOG, "a store write panicked; its group was rolled back");
            }
            self.shared.queue().busy = false;
        }
        tracing::debug!(
            target: LOG,
            commits = self.totals.commits,
            records = self.totals.records,
            failed_commits = self.totals.failed,
            transactions = self.totals.jobs,
            "store writer stopped"
        );
    }

    /// Waits for work; `None` once closed with nothing left.
    fn next_group(&self) -> Option<Vec<Msg>> {
        let mut q = self.shared.queue();
        loop {
            if !q.msgs.is_empty() {
                q.busy = true;
                let take = q.msgs.len().min(GROUP_MAX);
                let rest = q.msgs.split_off(take);
                return Some(std::mem::replace(&mut q.msgs, rest));
            }
            if q.closed {
                return None;
            }
            q = self.shared.wake.wait(q).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Runs `msgs` in order: transaction work grouped into one commit, upkeep between.
    fn write_group(&mut self, msgs: Vec<Msg>) {
        let mut group = Group::default();
        for msg in msgs {
            match msg {
                Msg::Exec(job) => {
                    // What was queued before it is committed before it runs.
                    self.commit(&mut group);
                    let started = Instant::now();
                    job(&mut self.conn);
                    self.totals.jobs += 1;
                    self.shared.commits.fetch_add(1, Ordering::Relaxed);
                    toolgate_telemetry::metrics::store_committed(false, started.elapsed());
                }
                Msg::Calls(records, ack) => {
                    let written = match self.begin(&mut group) {
                        Ok(conn) => insert_batch(conn, &records).map_err(|e| (self.describe)(e)),
                        Err(e) => Err(e),
                    };
                    match written {
                        Ok(()) => {
                            group.records += records.len();
                            group.batches += 1;
                            group
                                .settles
                                .push(Box::new(move |r: Result<(), StoreError>| {
                                    let _ = ack.send(r.map(|()| records));
                                }));
                        }
                        Err(e) => {
                            tracing::warn!(target: LOG, batches = 1, records = records.len(), error = %e, "call records not committed");
                            self.lost(&mut group, &e);
                            // A caller that stopped waiting does not need the answer.
                            drop(ack.send(Err(e)));
                        }
                    }
                }
                Msg::Tx(job) => {
                    let conn = self.begin(&mut group);
                    if let Some(settle) = job(conn) {
                        group.settles.push(settle);
                    } else {
                        let e = StoreError::Database {
                            path: self.db.clone().into(),
                            message: "a failure in the same transaction rolled it back".into(),
                        };
                        self.lost(&mut group, &e);
                    }
                }
            }
        }
        self.commit(&mut group);
    }

    /// The group's transaction, begun on first use.
    fn begin(&mut self, group: &mut Group) -> Result<&mut Connection, StoreError> {
        if !group.open {
            group.started = Instant::now();
            self.conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(|e| (self.describe)(e))?;
            group.open = true;
        }
        Ok(&mut self.conn)
    }

    /// After a piece failed: when SQLite rolled the whole transaction back with it (a
    /// full disk, say), the pieces before it are lost too; they are answered with
    /// `why` now, and the next piece starts a new group.
    fn lost(&mut self, group: &mut Group, why: &StoreError) {
        if !group.open || !self.conn.is_autocommit() {
            return;
        }
        let group = std::mem::take(group);
        self.totals.failed += 1;
        if !group.settles.is_empty() {
            tracing::warn!(target: LOG, batches = group.batches, records = group.records, error = %why, "call records not committed");
        }
        for settle in group.settles {
            settle(Err(why.clone()));
        }
    }

    /// Commits the group (when one is open) and answers its callers.
    fn commit(&mut self, group: &mut Group) {
        if !group.open {
            return;
        }
        let group = std::mem::take(group);
        let result = self
            .conn
            .execute_batch("COMMIT")
            .map_err(|e| (self.describe)(e));
        if result.is_err() {
            // Whatever failed left no half-written group behind.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        let pieces = group.settles.len();
        match &result {
            Ok(()) => {
                self.totals.commits += 1;
                self.totals.records += group.records as u64;
                self.shared.commits.fetch_add(1, Ordering::Relaxed);
                toolgate_telemetry::metrics::store_committed(true, group.started.elapsed());
                tracing::debug!(
                    target: LOG,
                    batches = group.batches,
                    records = group.records,
                    pieces,
                    ms = elapsed_ms(group.started),
                    "call records committed"
                );
            }
            Err(e) => {
                self.totals.failed += 1;
                tracing::warn!(target: LOG, batches = group.batches, records = group.records, pieces, error = %e, "call records not committed");
            }
        }
        for settle in group.settles {
            settle(result.clone());
        }
        self.nudge_upkeep(group.records as u64);
    }

    /// Wakes the upkeep thread once enough records await folding into the totals.
    fn nudge_upkeep(&self, records: u64) {
        let pending = self
            .shared
            .unnudged
            .fetch_add(records, Ordering::Relaxed)
            .saturating_add(records);
        if pending >= super::totals::FOLD_AT as u64 {
            self.shared.unnudged.store(0, Ordering::Relaxed);
            if let Ok(n) = self.shared.nudge.lock()
                && let Some(n) = n.as_ref()
            {
                let _ = n.try_send(());
            }
        }
    }
}

/// One group's transaction as it is being written.
struct Group {
    open: bool,
    started: Instant,
    /// Callers' batches of records in it, and their records.
    batches: usize,
    records: usize,
    settles: Vec<Settle>,
}

impl Default for Group {
    fn default() -> Self {
        Self {
            open: false,
            started: Instant::now(),
            batches: 0,
            records: 0,
            settles: Vec::new(),
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

/// One caller's records, in a savepoint: all of them or none.
fn insert_batch(conn: &mut Connection, records: &[CallRecord]) -> rusqlite::Result<()> {
    let sp = conn.savepoint()?;
    {
        let mut stmt = sp.prepare_cached(INSERT)?;
        for r in records {
            insert(&mut stmt, r)?;
        }
    }
    sp.commit()
}
