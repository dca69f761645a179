//! The store: one `Store` facade over a backend (SQLite, in `sqlite/`, the only place
//! with SQL), every operation async, one `StoreError`.
//!
//! The backend is an enum, not a trait object: a second backend (PostgreSQL) is coming,
//! and an enum keeps the record hot path free of boxed futures (`async_trait`), while
//! every `match` in `facade/` names the operations a new backend must answer.

mod error;
mod facade;
mod feed;
pub mod knowledge;
mod lease;
mod mcp_tasks;
pub mod model;
pub mod oauth;
mod postgres;
pub mod spend;
mod sqlite;
mod summary;
pub mod tool_cache;
mod validations;

use std::path::Path;

pub use error::{Refusal, StoreError};
pub use feed::{Change, ChangeKind, Watched, next_change_of};
pub use lease::{is_this_process, lease_owner_name, lease_pid};
pub use mcp_tasks::{McpTask, TaskPage};
pub use model::{
    Attempt, CallRecord, DecisionChanges, NewRun, PendingRow, PendingState, RESULT_CAP, RunLink,
    RunRow, RunSave, Scope, SecretScope, StoredCall,
};
pub use spend::{ModelRequestRow, Spend, SpendBy, SpendFilter, SpendRow};
pub use sqlite::{
    APPLICATION_ID, CallQuery, DEADLINE, Decided, Decider, DueItem, EXPIRED, KeyChange, KeyInfo,
    KeyLookup, NewKey, Page, PauseRow, ResponseRow, SCHEMA_VERSION, SecretInfo, StoreOptions,
    TimelineRows, Waiting,
};
pub use summary::{CacheStats, CallCounts, ConversationSummary, Durations, GlobalStats, ToolStats};
pub use validations::ToolValidation;

use postgres::PgStore;
pub use postgres::{POOL_ENV, postgres_url};
use sqlite::SqliteStore;

/// The default database file, relative to the current folder.
pub const DEFAULT_DB: &str = "toolgate.db";

/// The record of every run, call and decision, behind one backend.
#[derive(Clone)]
pub struct Store {
    backend: Backend,
}

/// The backends a [`Store`] can hold.
#[derive(Clone)]
enum Backend {
    /// A SQLite file (WAL, one writer, pooled readers).
    Sqlite(SqliteStore),
    /// A PostgreSQL database (a pool of connections), shared by many workers.
    Postgres(PgStore),
}

impl Store {
    /// Opens (or creates) the database at `path`, bringing its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Self::open_with(path, StoreOptions::default())
    }

    /// [`Store::open`] with options.
    ///
    /// Several processes opening one new file at once can find it busy at once: the
    /// open is tried again until the busy timeout has passed.
    /// A `postgres://` (or `postgresql://`) URL in place of the path opens that
    /// PostgreSQL database instead (the options are SQLite's and do not apply).
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store, StoreError> {
        let path = path.as_ref();
        let backend = match postgres_url(path) {
            Some(url) => Backend::Postgres(PgStore::open(url)?),
            None => Backend::Sqlite(SqliteStore::open_with(path, options)?),
        };
        Ok(Store { backend })
    }

    /// Whether the store is a PostgreSQL database (shared by workers on many hosts)
    /// rather than a SQLite file.
    pub fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// Where the database is (the file, for SQLite; the URL without its password, for
    /// PostgreSQL).
    pub fn path(&self) -> &Path {
        match &self.backend {
            Backend::Sqlite(s) => s.path(),
            Backend::Postgres(s) => s.path(),
        }
    }

    /// Transactions this store's writer has committed so far (group commits of records
    /// and transactions of their own), for benchmarks and diagnostics.
    pub fn commits(&self) -> u64 {
        match &self.backend {
            Backend::Sqlite(s) => s.commits(),
            Backend::Postgres(s) => s.commits(),
        }
    }

    /// Stops the writer after everything sent so far is written; later writes fail with
    /// [`StoreError::WriterGone`].
    pub fn close(&self) {
        match &self.backend {
            Backend::Sqlite(s) => s.close(),
            Backend::Postgres(s) => s.close(),
        }
    }

    /// Every run's changes from now on, whoever makes them (this process or another on
    /// the same store), in commit order. A watcher that falls behind is told how many
    /// it missed.
    pub fn watch(&self) -> tokio::sync::broadcast::Receiver<Change> {
        match &self.backend {
            Backend::Sqlite(s) => s.watch(),
            Backend::Postgres(s) => s.watch(),
        }
    }
}
