//! The PostgreSQL server the tests start themselves (tests/postgres/server.sh, once per
//! test process, stopped when it ends) or the one `TOOLGATE_TEST_POSTGRES_URL` names,
//! and a fresh database on it per test. A test that needs PostgreSQL and cannot get it
//! fails; none skips.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable naming a PostgreSQL server to use instead of starting one
/// (the role must be allowed to create databases).
pub const POSTGRES_ENV: &str = "TOOLGATE_TEST_POSTGRES_URL";

/// The server's URL (its `postgres` database), started at the first call.
pub fn postgres_server() -> &'static str {
    static SERVER: OnceLock<String> = OnceLock::new();
    SERVER.get_or_init(|| {
        if let Ok(url) = std::env::var(POSTGRES_ENV)
            && !url.trim().is_empty()
        {
            return url.trim().to_string();
        }
        let script = crate::workspace_root().join("tests/postgres/server.sh");
        let out = std::process::Command::new("bash")
            .arg(&script)
            .arg(std::process::id().to_string())
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("bash must be there to run tests/postgres/server.sh");
        assert!(
            out.status.success(),
            "tests/postgres/server.sh could not start PostgreSQL (set {POSTGRES_ENV} to use a running server)"
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .last()
            .expect("tests/postgres/server.sh printed no URL")
            .to_string()
    })
}

/// Runs one SQL batch on the database at `url` (on a thread of its own: the callers may
/// be async tests).
pub fn sql(url: &str, batch: &str) {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                        .await
                        .unwrap_or_else(|e| panic!("cannot connect to PostgreSQL at {url}: {e}"));
                    let conn = tokio::spawn(conn);
                    client
                        .batch_execute(batch)
                        .await
                        .unwrap_or_else(|e| panic!("{batch}: {e}"));
                    drop(client);
                    let _ = conn.await;
                });
            })
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
    });
}

/// Creates a new database on the tests' server and returns its URL.
pub fn fresh_postgres_database() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let server = postgres_server();
    let name = format!(
        "tg_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        uuid::Uuid::new_v4().simple().to_string().get(..8).unwrap()
    );
    sql(server, &format!("CREATE DATABASE {name}"));
    let mut url = url::Url::parse(server).unwrap();
    url.set_path(&name);
    url.to_string()
}
