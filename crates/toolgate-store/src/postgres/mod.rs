//! The PostgreSQL backend: a database URL opens a pool of connections (tokio-postgres
//! with deadpool), on a small runtime of the store's own so that any caller (a CLI
//! command's short-lived runtime, a test's, the server's) can use it; its numbered
//! migrations; and errors that name the database (without its password).

mod changes;
mod clock;
mod deadlines;
mod decisions;
mod key_budgets;
mod keys;
mod knowledge;
mod listener;
mod lists;
mod mcp_tasks;
mod migrations;
mod oauth;
mod prepared;
mod records;
mod responses;
mod rows;
mod run_rows;
mod runs;
mod save_rows;
mod secrets;
mod spend;
mod summary;
mod tool_cache;
mod totals;
mod tree;
mod unheld;
mod validations;
mod waiting;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

pub(crate) use super::StoreError;
use migrations::Found;
pub use migrations::LATEST as SCHEMA_VERSION;

/// The environment variable capping the connections one store opens (default 16).
pub const POOL_ENV: &str = "TOOLGATE_DB_POOL";
/// Connections a store opens at most, unless [`POOL_ENV`] says otherwise.
const POOL_DEFAULT: usize = 16;

/// Whether `db` names a PostgreSQL database (`postgres://` or `postgresql://`) rather
/// than a SQLite file; the URL when it does.
pub fn postgres_url(db: &Path) -> Option<&str> {
    let s = db.to_str()?;
    (s.starts_with("postgres://") || s.starts_with("postgresql://")).then_some(s)
}

/// The PostgreSQL backend: a connection pool, driven on the store's own runtime.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The URL without its password: what messages name.
    shown: PathBuf,
    pool: Pool,
    /// The runtime every query runs on (its connections' tasks live there).
    rt: Option<tokio::runtime::Runtime>,
    /// Transactions committed through this store, for benchmarks and diagnostics.
    commits: AtomicU64,
    /// Set by `close`: later writes fail with `WriterGone`.
    closed: AtomicBool,
    /// The change feed's watchers, once someone watches.
    feed: std::sync::OnceLock<tokio::sync::broadcast::Sender<crate::Change>>,
    /// How to connect outside the pool: the change feed's listener holds a connection
    /// of its own (LISTEN lasts as long as its session).
    config: tokio_postgres::Config,
    /// When the running totals are folded next (`totals.rs`).
    folding: totals::Folding,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropped wherever the last handle goes, an async task included: the runtime
        // must not wait there for its threads.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The URL as messages show it: without a password.
fn shown(url: &str) -> PathBuf {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            PathBuf::from(u.to_string())
        }
        Err(_) => PathBuf::from("postgres://(an unreadable URL)"),
    }
}

impl PgStore {
    /// Connects to the database at `url` and brings its schema up to date (refusing a
    /// newer or foreign one untouched).
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        let shown = shown(url);
        let fail = |message: String| StoreError::Database {
            path: shown.clone(),
            message,
        };
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| fail(format!("not a PostgreSQL URL: {e}")))?;
        // No JIT: toolgate's statements are short, and a row estimate past the JIT's
        // threshold (a summary's tail, before it knows the mark) costs 20 ms of compiling.
        let options = format!("{} -c jit=off", config.get_options().unwrap_or_default());
        config.options(options.trim());
        let size = std::env::var(POOL_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(POOL_DEFAULT);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolgate-pg")
            .enable_all()
            .build()
            .map_err(|e| fail(format!("cannot start the database's runtime: {e}")))?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(std::time::Duration::from_secs(30)))
            .create_timeout(Some(std::time::Duration::from_secs(10)))
            .build()
            .map_err(|e| fail(format!("cannot make the connection pool: {e}")))?;
        let store = PgStore {
            inner: Arc::new(Inner {
                shown: shown.clone(),
                pool,
                rt: Some(rt),
                commits: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                feed: std::sync::OnceLock::new(),
                config,
                folding: totals::Folding::default(),
            }),
        };
        let found = store.wait(|s| async move {
            let mut client = s.client().await?;
            migrations::migrate(&mut client)
                .await
                .map_err(|e| s.error(e))
        })?;
        match found {
            Found::Ours(_) => Ok(store),
            Found::Newer(found) => Err(StoreError::TooNew {
                path: shown,
                found,
                known: SCHEMA_VERSION,
            }),
            Found::Foreign(why) => Err(StoreError::Foreign { path: shown, why }),
        }
    }

    /// The database's URL, without its password.
    pub fn path(&self) -> &Path {
        &self.inner.shown
    }

    /// Transactions committed through this store so far.
    pub fn commits(&self) -> u64 {
        self.inner.commits.load(Ordering::Relaxed)
    }

    /// Counts one committed transaction.
    pub(crate) fn committed(&self) {
        self.inner.commits.fetch_add(1, Ordering::Relaxed);
    }

    /// Refuses writes from now on.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::Relaxed);
    }

    /// `WriterGone` once the store is closed.
    pub(crate) fn open_for_writes(&self) -> Result<(), StoreError> {
        if self.inner.closed.load(Ordering::Relaxed) {
            return Err(StoreError::WriterGone {
                path: self.inner.shown.clone(),
            });
        }
        Ok(())
    }

    /// A connection from the pool.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.inner.pool.get().await.map_err(|e| self.pool_error(e))
    }

    /// A database error as a message a user can act on, naming the database.
    pub(crate) fn error(&self, e: tokio_postgres::Error) -> StoreError {
        let message = match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => {
                let text = e.to_string();
                if e.is_closed() {
                    format!("the connection to the database closed: {text}")
                } else {
                    text
                }
            }
        };
        StoreError::Database {
            path: self.inner.shown.clone(),
            message,
        }
    }

    fn pool_error(&self, e: deadpool_postgres::PoolError) -> StoreError {
        let message = match e {
            deadpool_postgres::PoolError::Backend(e) => return self.error(e),
            deadpool_postgres::PoolError::Timeout(_) => {
                "cannot reach the database (no connection within the timeout; is the server up?)"
                    .to_string()
            }
            other => format!("cannot reach the database: {other}"),
        };
        StoreError::Database {
            path: self.inner.shown.clone(),
            message,
        }
    }

    /// Runs `f` on the store's runtime and waits for it, from any async context.
    pub(crate) async fn on_pool<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(PgStore) -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let rt = self.runtime()?;
        rt.spawn(f(self.clone()))
            .await
            .map_err(|e| StoreError::Corrupt(format!("a database operation stopped: {e}")))?
    }

    /// Runs `f` on the store's runtime and blocks this thread until it is done (for
    /// opening, from synchronous code).
    fn wait<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(PgStore) -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let rt = self.runtime()?;
        let (tx, rx) = std::sync::mpsc::channel();
        rt.spawn({
            let fut = f(self.clone());
            async move {
                let _ = tx.send(fut.await);
            }
        });
        rx.recv()
            .map_err(|_| StoreError::Corrupt("the database's runtime stopped".into()))?
    }

    fn runtime(&self) -> Result<&tokio::runtime::Handle, StoreError> {
        self.inner
            .rt
            .as_ref()
            .map(|rt| rt.handle())
            .ok_or_else(|| StoreError::WriterGone {
                path: self.inner.shown.clone(),
            })
    }
}
