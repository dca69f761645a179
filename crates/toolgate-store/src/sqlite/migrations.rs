//! The schema: numbered migrations applied in order, each in its own transaction, the
//! version kept in `PRAGMA user_version`, and `PRAGMA application_id` marking the file
//! as toolgate's so that a foreign database is never touched.

use rusqlite::Connection;

/// `TGAT`: what toolgate writes into `PRAGMA application_id`.
pub const APPLICATION_ID: i64 = 0x5447_4154;

/// The migrations, in order; migration `i` takes the schema to version `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_messages.sql"),
    include_str!("migrations/0003_responses.sql"),
    include_str!("migrations/0004_secrets.sql"),
    include_str!("migrations/0005_subagents.sql"),
    include_str!("migrations/0006_decided_by.sql"),
    include_str!("migrations/0007_totals.sql"),
    include_str!("migrations/0008_standing_by_agent.sql"),
    include_str!("migrations/0009_requested_at.sql"),
    include_str!("migrations/0010_approval_policy.sql"),
    include_str!("migrations/0011_identities.sql"),
    include_str!("migrations/0012_response_input.sql"),
    include_str!("migrations/0013_changes.sql"),
    include_str!("migrations/0014_run_usage.sql"),
    include_str!("migrations/0015_allow_lists.sql"),
    include_str!("migrations/0016_knowledge.sql"),
    include_str!("migrations/0017_call_attempts.sql"),
    include_str!("migrations/0018_mcp_tasks.sql"),
    include_str!("migrations/0019_spend.sql"),
    include_str!("migrations/0020_tool_validations.sql"),
    include_str!("migrations/0021_oauth.sql"),
    include_str!("migrations/0022_tool_cache.sql"),
    include_str!("migrations/0023_oauth_clients.sql"),
];

/// The migration that adds the running totals: the records already there are folded
/// into them in the same transaction.
const TOTALS: usize = 6;

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// What an opened file turned out to be.
#[derive(Debug, PartialEq)]
pub enum Found {
    /// A toolgate database at this version (0 for a new, empty file).
    Ours(i64),
    /// A toolgate database from a newer build.
    Newer(i64),
    /// Some other database.
    Foreign(String),
}

/// Looks at a database before anything is written to it.
/// The three reads share one snapshot: another process migrating the same new file
/// meanwhile must not show its tables beside the header of before.
pub fn inspect(conn: &Connection) -> rusqlite::Result<Found> {
    let snapshot = conn.unchecked_transaction()?;
    let app: i64 = snapshot.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i64 = snapshot.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let tables: i64 = snapshot.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
        [],
        |r| r.get(0),
    )?;
    snapshot.finish()?;
    Ok(if app == APPLICATION_ID {
        if version > LATEST {
            Found::Newer(version)
        } else {
            Found::Ours(version)
        }
    } else if app == 0 && version == 0 && tables == 0 {
        Found::Ours(0)
    } else if app != 0 {
        Found::Foreign(format!("its application id is {app:#x}"))
    } else {
        Found::Foreign(format!(
            "it holds {tables} table(s) that toolgate did not create"
        ))
    })
}

/// Applies the migrations after `from`, one transaction each. Another process may be
/// migrating the same file (two commands started at once on a new database): each
/// transaction reads the version again once it holds the write lock, and skips what
/// the other already applied, so that no migration runs twice (one that can, like a
/// table rebuilt, would otherwise set the version back under the later ones).
pub fn migrate(conn: &mut Connection, from: i64) -> rusqlite::Result<()> {
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let now: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if now > i as i64 {
            tx.commit()?;
            continue;
        }
        tx.execute_batch(sql)?;
        if i == TOTALS {
            super::totals::fold_all(&tx)?;
        }
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The run usage migration fills the new columns from each run's state JSON, and
    /// leaves zeros where the state has no usage (or is not JSON).
    #[test]
    fn run_usage_is_filled_from_the_state() {
        let usage = MIGRATIONS
            .iter()
            .position(|m| m.contains("ADD COLUMN prompt_tokens"))
            .unwrap();
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..usage] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", usage as i64)
            .unwrap();
        let state = r#"{"usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10, "model_calls": 2, "compactions": 1}}"#;
        for (id, state) in [("a", state), ("b", "{}"), ("c", "not json")] {
            conn.execute(
                "INSERT INTO runs (id, conversation_id, agent, status, state, created_at, updated_at) VALUES (?1, 'c', 'x', 'completed', ?2, 0, 0)",
                [id, state],
            )
            .unwrap();
        }
        migrate(&mut conn, usage as i64).unwrap();
        let read = |id: &str| -> (i64, i64, i64, i64, i64, i64) {
            conn.query_row(
                "SELECT prompt_tokens, completion_tokens, total_tokens, model_calls, cache_read_tokens, compactions FROM runs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )
            .unwrap()
        };
        assert_eq!(read("a"), (7, 3, 10, 2, 0, 1));
        assert_eq!(read("b"), (0, 0, 0, 0, 0, 0));
        assert_eq!(read("c"), (0, 0, 0, 0, 0, 0));
    }
}
