//! Rows written and read straight in a test's database, on either backend: the runs
//! and items a worker would have left (so that a store test needs only the operations
//! it tests), and what a table holds afterwards, every column read as text.

use crate::databases::TestDb;

/// Runs one SQL batch (no parameters: literal values) on `db`, opened already.
pub fn exec(db: &TestDb, batch: &str) {
    match db {
        TestDb::Sqlite { path, .. } => {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.busy_timeout(std::time::Duration::from_secs(10))
                .unwrap();
            conn.execute_batch(batch)
                .unwrap_or_else(|e| panic!("sqlite: {e}: {batch}"));
        }
        TestDb::Postgres { url } => {
            on_postgres(url, |client| async move {
                client
                    .batch_execute(batch)
                    .await
                    .unwrap_or_else(|e| panic!("postgres: {e}: {batch}"));
                Vec::new()
            });
        }
    }
}

/// The rows `query` reads on `db`, each column as text (`None` for NULL): select
/// `CAST(x AS TEXT)` for a column that is not text.
pub fn read(db: &TestDb, query: &str) -> Vec<Vec<Option<String>>> {
    match db {
        TestDb::Sqlite { path, .. } => {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.busy_timeout(std::time::Duration::from_secs(10))
                .unwrap();
            let mut stmt = conn
                .prepare(query)
                .unwrap_or_else(|e| panic!("sqlite: {e}: {query}"));
            let n = stmt.column_count();
            stmt.query_map([], |r| {
                (0..n)
                    .map(|i| r.get::<_, Option<String>>(i))
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap()
        }
        TestDb::Postgres { url } => on_postgres(url, |client| async move {
            let rows = client
                .query(query, &[])
                .await
                .unwrap_or_else(|e| panic!("postgres: {e}: {query}"));
            rows.iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| r.get::<_, Option<String>>(i))
                        .collect()
                })
                .collect()
        }),
    }
}

fn on_postgres<F, Fut>(url: &str, f: F) -> Vec<Vec<Option<String>>>
where
    F: FnOnce(std::sync::Arc<tokio_postgres::Client>) -> Fut,
    Fut: std::future::Future<Output = Vec<Vec<Option<String>>>>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        let conn = tokio::spawn(conn);
        let client = std::sync::Arc::new(client);
        let out = f(client.clone()).await;
        drop(client);
        let _ = conn.await;
        out
    })
}

/// A run as its worker left it: `status`, below `parent` when given (depth 1).
pub fn run(id: &str, parent: Option<&str>, status: &str) -> String {
    let (parent, depth) = match parent {
        Some(p) => (format!("'{p}'"), 1),
        None => ("NULL".to_string(), 0),
    };
    format!(
        "INSERT INTO runs (id, conversation_id, agent, status, state, created_at, updated_at, parent_run_id, parent_call_id, depth, tenant)
         VALUES ('{id}', 'conv_{id}', 'assistant', '{status}', '{{}}', 1000, 1000, {parent}, {call}, {depth}, 'default');\n",
        call = if depth == 1 { format!("'call_{id}'") } else { "NULL".into() },
    )
}

/// An item of run `run_id`, waiting, of `kind`, expiring at `expires_at` (Unix ms).
pub fn item(run_id: &str, call_id: &str, kind: &str, expires_at: Option<i64>) -> String {
    let expires = expires_at.map_or("NULL".to_string(), |t| t.to_string());
    format!(
        "INSERT INTO pending (run_id, call_id, kind, tool, arguments, state, requested_at, reason, expires_at, on_timeout)
         VALUES ('{run_id}', '{call_id}', '{kind}', 'pay', '{{\"amount\": 5000}}', 'waiting', 900, 'confirm_if: args.amount > 1000', {expires}, 'deny');\n"
    )
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
