//! PostgreSQL's schema: numbered migrations of its own, applied in order under an
//! advisory lock (many workers starting at once migrate once), the version kept in
//! `toolgate_schema`; a database of a newer toolgate, or one holding someone else's
//! tables of the same names, is refused untouched.

use tokio_postgres::Client;

/// The migrations, in order; migration `i` takes the schema to version `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_allow_lists.sql"),
    include_str!("migrations/0003_knowledge.sql"),
    include_str!("migrations/0004_call_attempts.sql"),
    include_str!("migrations/0005_mcp_tasks.sql"),
    include_str!("migrations/0006_spend.sql"),
    include_str!("migrations/0007_tool_validations.sql"),
    include_str!("migrations/0008_oauth.sql"),
    include_str!("migrations/0009_tool_cache.sql"),
    include_str!("migrations/0010_oauth_clients.sql"),
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// The advisory lock key migrations take (`TGAT` twice).
const LOCK: i64 = 0x5447_4154_5447_4154;

/// What a database turned out to hold, before anything was written to it.
#[derive(Debug, PartialEq)]
pub enum Found {
    /// toolgate's schema at this version (0 for a database without toolgate's tables).
    Ours(i64),
    /// toolgate's schema from a newer build.
    Newer(i64),
    /// Tables toolgate would create are there, without toolgate's version table.
    Foreign(String),
}

/// Brings the schema up to date, as one transaction holding the migration lock; says
/// what was found when it cannot.
pub async fn migrate(client: &mut Client) -> Result<Found, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await?;
    let found = inspect(&tx).await?;
    if let Found::Ours(version) = found {
        if version < LATEST {
            if version == 0 {
                tx.batch_execute(
                    "CREATE TABLE toolgate_schema (
                         version    BIGINT NOT NULL PRIMARY KEY,
                         applied_at BIGINT NOT NULL
                     )",
                )
                .await?;
            }
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                tx.batch_execute(sql).await?;
                tx.execute(
                    "INSERT INTO toolgate_schema (version, applied_at) VALUES ($1, $2)",
                    &[&(i as i64 + 1), &toolgate_protocol::clock::now_ms()],
                )
                .await?;
            }
        }
        tx.commit().await?;
    }
    Ok(found)
}

/// What the database holds, read inside the migration's transaction.
async fn inspect(tx: &tokio_postgres::Transaction<'_>) -> Result<Found, tokio_postgres::Error> {
    let has = |table: &'static str| async move {
        tx.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
            .await
            .map(|r| r.get::<_, bool>(0))
    };
    if !has("toolgate_schema").await? {
        for table in ["runs", "tool_calls", "pending"] {
            if has(table).await? {
                return Ok(Found::Foreign(format!(
                    "it has a table '{table}' but no toolgate_schema; toolgate keeps its tables in a database (or schema) of their own"
                )));
            }
        }
        return Ok(Found::Ours(0));
    }
    let version: i64 = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM toolgate_schema", &[])
        .await?
        .get(0);
    Ok(if version > LATEST {
        Found::Newer(version)
    } else {
        Found::Ours(version)
    })
}
