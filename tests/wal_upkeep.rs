//! The WAL that short-lived processes leave behind: each closes without a checkpoint
//! (no fsync on the way out), so the next store to open a long WAL empties it first,
//! unless another connection is using it (then it is left, without waiting).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::json;
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{CallRecord, Store};

fn record(n: usize) -> CallRecord {
    CallRecord {
        call_id: format!("call_{n}"),
        run_id: None,
        conversation_id: format!("conv{}", n % 5),
        agent: None,
        caller: CallerKind::Agent,
        tool: "echo".into(),
        arguments: json!({"n": n}),
        result: Some("x".repeat(1_000)),
        result_size: 1_000,
        status: CallStatus::Succeeded,
        error_kind: None,
        error_message: None,
        started_at: 1_000 + n as i64,
        duration_ms: 1.0,
        replaced: false,
        attempts: Vec::new(),
        cached: None,
    }
}

fn wal_of(db: &Path) -> PathBuf {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    PathBuf::from(wal)
}

/// A database whose WAL holds 3,000 records (about 4 MB), as a process leaves it. The
/// records are written by a plain connection that, like the store's, closes without a
/// checkpoint: a store would leave its upkeep thread behind for a moment, which may be
/// checkpointing still when the next store opens (then the WAL is rightly left).
fn long_wal(dir: &tempfile::TempDir) -> PathBuf {
    let db = dir.path().join("t.db");
    // The schema: no records, so its upkeep thread never opens a connection.
    Store::open(&db).unwrap().close();
    let mut conn = Connection::open(&db).unwrap();
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    for chunk in (0..3_000).collect::<Vec<i64>>().chunks(100) {
        let tx = conn.transaction().unwrap();
        for n in chunk {
            tx.execute(
                "INSERT INTO tool_calls (call_id, conversation_id, caller, tool, arguments, result, result_size, status, started_at, duration_ms) VALUES (?1, 'conv', 'agent', 'echo', '{}', ?2, 1000, 'succeeded', ?3, 1.0)",
                rusqlite::params![format!("call_{n}"), "x".repeat(1_000), 1_000 + n],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    drop(conn);
    let len = std::fs::metadata(wal_of(&db)).unwrap().len();
    assert!(len > 2 << 20, "the WAL should be long, it is {len} bytes");
    db
}

fn count(db: &Path) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row("SELECT count(*) FROM tool_calls", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_long_wal_is_emptied_by_the_next_store_to_open_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = long_wal(&dir);
    let store = Store::open(&db).unwrap();
    assert_eq!(std::fs::metadata(wal_of(&db)).unwrap().len(), 0);
    store.close();
    assert_eq!(count(&db), 3_000);
}

#[test]
fn a_long_wal_in_use_elsewhere_is_left_for_later() {
    let dir = tempfile::tempdir().unwrap();
    let db = long_wal(&dir);
    // Another process reading: an emptied WAL would pull its snapshot away.
    let other = Connection::open(&db).unwrap();
    other.execute_batch("BEGIN").unwrap();
    let seen: i64 = other
        .query_row("SELECT count(*) FROM tool_calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(seen, 3_000);
    let before = std::fs::metadata(wal_of(&db)).unwrap().len();
    let store = Store::open(&db).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(store.record_calls(vec![record(3_000)]))
        .unwrap();
    assert!(std::fs::metadata(wal_of(&db)).unwrap().len() >= before);
    other.execute_batch("COMMIT").unwrap();
    store.close();
    drop(store);
    assert_eq!(count(&db), 3_001);
}
