//! The SQLite backend: opening (WAL, migrations, refusing foreign or newer files), the
//! writer that commits call records in groups, the upkeep thread (running totals, WAL
//! checkpoints), read connections for queries,
//! and errors that name the file and say what is wrong with it.

mod changes;
mod deadlines;
mod decisions;
mod key_budgets;
pub(crate) mod keys;
mod knowledge;
mod mcp_tasks;
mod migrations;
mod oauth;
#[cfg(test)]
mod plans;
mod queries;
mod record;
mod responses;
mod run_errors;
mod run_list;
mod runs;
mod secrets;
mod spend;
mod summary;
mod timeline;
mod tool_cache;
mod totals;
mod tree;
mod unheld;
mod upkeep;
mod validations;
mod waiting;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, ErrorCode, OpenFlags};
use tokio::sync::oneshot;

pub(crate) use super::StoreError;
pub use deadlines::{DEADLINE, DueItem, EXPIRED};
pub use decisions::{Decided, Decider};
pub use keys::{KeyChange, KeyInfo, KeyLookup, NewKey};
pub use migrations::{APPLICATION_ID, LATEST as SCHEMA_VERSION};
pub use queries::{CallQuery, Page};
pub use record::{CallRecord, StoredCall};
pub use responses::ResponseRow;
pub(crate) use run_errors::RunsError;
pub use runs::{PendingRow, RunRow};
pub use secrets::SecretInfo;
pub use timeline::{PauseRow, TimelineRows};
pub use waiting::Waiting;

use migrations::Found;

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 64;

/// Settings for opening the store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// How long a write waits for another process's lock before it fails.
    pub busy_timeout: std::time::Duration,
    /// A cap on the database size (SQLite's `max_page_count`); `None` for no cap.
    pub max_bytes: Option<u64>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            busy_timeout: std::time::Duration::from_secs(5),
            max_bytes: None,
        }
    }
}

/// How many reads run on the blocking pool at once: the cores this process may use
/// (at least 2, at most 16).
fn read_slots() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 16))
}

/// How a busy or locked database is described.
const LOCKED: &str = "the database is locked by another process";

/// Turns an SQLite error into a message a user can act on.
fn describe(path: &Path, busy: std::time::Duration, e: rusqlite::Error) -> StoreError {
    let message = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            format!("{LOCKED} (waited {:.1} s)", busy.as_secs_f64())
        }
        Some(ErrorCode::ReadOnly) => {
            "the database is read-only; toolgate needs to write to it".to_string()
        }
        Some(ErrorCode::DiskFull) => "the disk (or the database's size limit) is full".to_string(),
        Some(ErrorCode::NotADatabase) => "this file is not an SQLite database".to_string(),
        Some(ErrorCode::CannotOpen) => {
            "the database cannot be opened (does its folder exist?)".to_string()
        }
        Some(ErrorCode::PermissionDenied) => "permission denied".to_string(),
        Some(ErrorCode::DatabaseCorrupt) => "the database file is corrupt".to_string(),
        _ => e.to_string(),
    };
    StoreError::Database {
        path: path.to_path_buf(),
        message,
    }
}

/// How every connection of the store is set up, after its open.
///
/// Closing it (the process ending) leaves the WAL as it is, for the next process to go
/// on with, rather than checkpointing it there and then: checkpoints belong to the
/// upkeep thread, off every command's path.
///
/// Its query plans never depend on bound values (SQLite's query planner stability
/// guarantee). rusqlite clears a cached statement's bindings when it goes back to the
/// cache, and SQLite expires a statement whose plan looked at a bound value when its
/// bindings are cleared: every use of such a statement was parsed and planned again.
/// Measured on a run's items (`pending` by run id): prepared again at every use, 11 to
/// 17 us a query; with stable plans, never, 3 to 4 us.
pub(crate) fn configure(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::config::DbConfig;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// The SQLite backend: one writer thread (group commit), a pool of read connections.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    options: StoreOptions,
    writer: Arc<writer::Writer>,
    readers: Mutex<Vec<Connection>>,
    /// Reads on the blocking pool at once: as many as there are cores (more only queue
    /// in the kernel, each with a thread and a connection of its own, and hold the WAL
    /// open against checkpoints).
    reading: tokio::sync::Semaphore,
    /// The change feed's watchers, once someone watches (`SqliteStore::watch`).
    feed: std::sync::OnceLock<tokio::sync::broadcast::Sender<crate::Change>>,
    /// Held while the store is open: the feed's thread ends with it.
    alive: Arc<()>,
}

impl SqliteStore {
    /// [`SqliteStore::open`] with options.
    ///
    /// Several processes opening one new file at once (it is being laid out, switched
    /// to WAL, migrated) can find it busy at once, before any wait: the open is tried
    /// again until the busy timeout has passed.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: StoreOptions,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let deadline = std::time::Instant::now() + options.busy_timeout;
        loop {
            match Self::open_once(path, options.clone()) {
                Err(StoreError::Database { message, .. })
                    if message.starts_with(LOCKED) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                opened => return opened,
            }
        }
    }

    /// One attempt of [`SqliteStore::open_with`].
    fn open_once(path: &Path, options: StoreOptions) -> Result<SqliteStore, StoreError> {
        let path = path.to_path_buf();
        // No tool's sandbox shows it, nor its key file, even inside a workspace.
        toolgate_sandbox::protect_database(&path);
        let busy = options.busy_timeout;
        let fail = |e| describe(&path, busy, e);
        let mut conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(fail)?;
        conn.busy_timeout(busy).map_err(fail)?;
        // Every statement the writer runs stays prepared (rusqlite keeps 16 by default,
        // fewer than the writer uses, and a statement prepared again costs more than
        // the row it writes).
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        configure(&conn).map_err(fail)?;
        match migrations::inspect(&conn).map_err(fail)? {
            Found::Newer(found) => {
                return Err(StoreError::TooNew {
                    path,
                    found,
                    known: migrations::LATEST,
                });
            }
            Found::Foreign(why) => return Err(StoreError::Foreign { path, why }),
            Found::Ours(version) => {
                // A new, empty file holds nothing to lose: it is laid out (WAL switch,
                // schema) without waiting for the disk; the first fsync comes with the
                // first checkpoint. An existing file migrates with full syncs.
                let fresh = version == 0;
                if fresh {
                    conn.pragma_update(None, "synchronous", "OFF")
                        .map_err(fail)?;
                }
                let mode: String = conn
                    .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
                    .map_err(fail)?;
                if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
                    return Err(StoreError::Database {
                        message: format!(
                            "cannot switch to WAL mode (the journal mode stays {mode})"
                        ),
                        path,
                    });
                }
                if !fresh {
                    conn.pragma_update(None, "synchronous", "NORMAL")
                        .map_err(fail)?;
                }
                conn.pragma_update(None, "foreign_keys", "ON")
                    .map_err(fail)?;
                if version < migrations::LATEST {
                    migrations::migrate(&mut conn, version).map_err(fail)?;
                }
                if fresh {
                    conn.pragma_update(None, "synchronous", "NORMAL")
                        .map_err(fail)?;
                }
                // Checkpoints happen on the upkeep thread (upkeep.rs), not in a commit,
                // and at open when short-lived processes left a long WAL behind.
                conn.pragma_update(None, "wal_autocheckpoint", 0)
                    .map_err(fail)?;
                conn.pragma_update(None, "journal_size_limit", upkeep::WAL_CEILING as i64)
                    .map_err(fail)?;
                // The WAL file keeps its size after a reset up to its ceiling:
                // rewriting blocks it already has is much cheaper than growing it again
                // (a `journal_size_limit` of 0 measured at 0.75x the throughput). Only a
                // long WAL found at open is emptied.
                upkeep::empty_long_wal(&conn, &path, busy);
                if let Some(max) = options.max_bytes {
                    let page: i64 = conn
                        .pragma_query_value(None, "page_size", |r| r.get(0))
                        .map_err(fail)?;
                    let pages = (max as i64 / page.max(512)).max(1);
                    conn.pragma_update(None, "max_page_count", pages)
                        .map_err(fail)?;
                }
            }
        }
        let writer_path = path.clone();
        let writer = Arc::new(
            writer::Writer::start(conn, Box::new(move |e| describe(&writer_path, busy, e)))
                .map_err(|e| StoreError::Database {
                    path: path.clone(),
                    message: format!("cannot start the writer thread: {e}"),
                })?,
        );
        upkeep::start(&writer, &path, busy).map_err(|e| StoreError::Database {
            path: path.clone(),
            message: format!("cannot start the upkeep thread: {e}"),
        })?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path,
                options,
                writer,
                readers: Mutex::new(Vec::new()),
                reading: tokio::sync::Semaphore::new(read_slots()),
                feed: std::sync::OnceLock::new(),
                alive: Arc::new(()),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Transactions this store's writer has committed so far (group commits of records
    /// and transactions of their own), for benchmarks and diagnostics.
    pub fn commits(&self) -> u64 {
        self.inner.writer.commits()
    }

    /// Writes `records` and returns once they are committed (with whatever other
    /// batches shared the transaction).
    pub async fn record_calls(&self, records: Vec<CallRecord>) -> Result<(), StoreError> {
        self.commit_records(records).await.map(drop)
    }

    /// [`SqliteStore::record_calls`], giving the records back once committed (so that a
    /// caller that still needs them does not copy them first).
    pub async fn commit_records(
        &self,
        records: Vec<CallRecord>,
    ) -> Result<Vec<CallRecord>, StoreError> {
        if records.is_empty() {
            return Ok(records);
        }
        let gone = || StoreError::WriterGone {
            path: self.inner.path.clone(),
        };
        let (ack, done) = oneshot::channel();
        self.inner
            .writer
            .submit(writer::Msg::Calls(records, ack))
            .map_err(|_| gone())?;
        done.await.map_err(|_| gone())?
    }

    /// Runs `f` on a read connection from the pool.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let busy = self.inner.options.busy_timeout;
        let fail = |e| describe(&self.inner.path, busy, e);
        let pooled = self.inner.readers.lock().ok().and_then(|mut p| p.pop());
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(
                    &self.inner.path,
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(fail)?;
                c.busy_timeout(busy).map_err(fail)?;
                c.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
                configure(&c).map_err(fail)?;
                c.pragma_update(None, "query_only", "ON").map_err(fail)?;
                c
            }
        };
        let result = f(&conn).map_err(fail);
        if let Ok(mut pool) = self.inner.readers.lock() {
            pool.push(conn);
        }
        result
    }

    /// Runs the synchronous read `f` on a blocking thread (never on an async task's
    /// thread: a read may wait on the disk or on another process's lock).
    pub(crate) async fn blocking<T, E>(
        &self,
        f: impl FnOnce(&SqliteStore) -> Result<T, E> + Send + 'static,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        E: Into<StoreError> + Send + 'static,
    {
        let store = self.clone();
        let _slot = self
            .inner
            .reading
            .acquire()
            .await
            .map_err(|_| StoreError::WriterGone {
                path: self.inner.path.clone(),
            })?;
        tokio::task::spawn_blocking(move || f(&store).map_err(Into::into))
            .await
            .map_err(|e| StoreError::Corrupt(format!("a database read stopped: {e}")))?
    }

    /// Every run's changes from now on (see `Store::watch`). The first watcher starts
    /// the store's one follower thread (`changes.rs`).
    pub fn watch(&self) -> tokio::sync::broadcast::Receiver<crate::Change> {
        self.inner
            .feed
            .get_or_init(|| {
                let (tx, _) = tokio::sync::broadcast::channel(changes::BACKLOG);
                if let Err(e) = changes::start(
                    &self.inner.path,
                    self.inner.options.busy_timeout,
                    tx.clone(),
                    Arc::downgrade(&self.inner.alive),
                ) {
                    tracing::error!(error = %e, "the change feed cannot start; other processes' changes are not seen");
                }
                tx
            })
            .subscribe()
    }

    /// Stops the writer after everything sent so far is written, and closes its
    /// connection; later writes fail with [`StoreError::WriterGone`].
    pub fn close(&self) {
        self.inner.writer.close();
    }
}
