//! The databases a test runs on: a SQLite file in a temporary folder, or a fresh
//! database on a PostgreSQL server the tests started themselves (tests/postgres/server.sh,
//! once per test process, stopped when it ends) or the one `TOOLGATE_TEST_POSTGRES_URL`
//! names. A test that needs PostgreSQL and cannot get it fails; none skips.

use std::path::{Path, PathBuf};

use toolgate::store::Store;

pub use toolgate_test_support::postgres::{fresh_postgres_database, sql};

/// One database for one test.
pub enum TestDb {
    Sqlite {
        _dir: tempfile::TempDir,
        path: PathBuf,
    },
    Postgres {
        url: String,
    },
}

impl TestDb {
    /// A new SQLite file (not created yet) in a folder of its own.
    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolgate.db");
        TestDb::Sqlite { _dir: dir, path }
    }

    /// A new, empty database on the tests' PostgreSQL server.
    pub fn postgres() -> TestDb {
        TestDb::Postgres {
            url: fresh_postgres_database(),
        }
    }

    /// One database of each backend: what a store test runs on.
    pub fn both() -> [TestDb; 2] {
        [TestDb::sqlite(), TestDb::postgres()]
    }

    /// What `--db` (or `TOOLGATE_DB`) takes to name it.
    pub fn arg(&self) -> &str {
        match self {
            TestDb::Sqlite { path, .. } => path.to_str().unwrap(),
            TestDb::Postgres { url } => url,
        }
    }

    /// `sqlite` or `postgres`, for failure messages.
    pub fn name(&self) -> &'static str {
        match self {
            TestDb::Sqlite { .. } => "sqlite",
            TestDb::Postgres { .. } => "postgres",
        }
    }

    /// Opens it (creating and migrating it the first time).
    pub fn open(&self) -> Store {
        Store::open(Path::new(self.arg()))
            .unwrap_or_else(|e| panic!("{}: cannot open the store: {e}", self.name()))
    }
}
