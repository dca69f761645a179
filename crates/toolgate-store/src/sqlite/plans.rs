//! Cached statements stay prepared: a statement taken from a connection's cache again
//! and again, with new values bound each time, is never parsed and planned again.

#![allow(clippy::unwrap_used)]

use rusqlite::StatementStatus;

use super::SqliteStore;

/// The read of a run's items, as `runs::pending_rows` runs it, 50 times with 50 run
/// ids on one pooled read connection: prepared once, never again (before the store set
/// stable plans, it was prepared again at every use).
#[test]
fn a_cached_statement_is_not_prepared_again_at_each_use() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_with(dir.path().join("t.db"), Default::default()).unwrap();
    let sql = "SELECT call_id FROM pending WHERE run_id = ?1 ORDER BY rowid";
    let reprepared = store
        .read(|conn| {
            for i in 0..50 {
                let mut stmt = conn.prepare_cached(sql)?;
                let rows: Vec<String> = stmt
                    .query_map([format!("run-{i}")], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                assert!(rows.is_empty());
            }
            Ok(conn
                .prepare_cached(sql)?
                .get_status(StatementStatus::RePrepare))
        })
        .unwrap();
    assert_eq!(
        reprepared, 0,
        "prepared again {reprepared} times in 50 uses"
    );
}
