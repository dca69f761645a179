//! The running totals behind the global, per-tool and per-run summaries: the same
//! numbers as counting every record, whether the records are folded into the totals
//! yet or not, and an older database (schema 6) brought up with its records folded in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde_json::json;
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{CallRecord, GlobalStats, Store};

const TOOLS: [&str; 3] = ["echo", "shell", "web_search"];
const STATUSES: [CallStatus; 4] = [
    CallStatus::Succeeded,
    CallStatus::Succeeded,
    CallStatus::Failed,
    CallStatus::Denied,
];

/// Record `n`: whole milliseconds below a second, so the histogram holds them exactly.
fn record(n: usize) -> CallRecord {
    CallRecord {
        call_id: format!("call_{n}"),
        run_id: Some(format!("run_{}", n % 7)),
        conversation_id: format!("conv{}", n % 13),
        agent: None,
        caller: CallerKind::Agent,
        tool: TOOLS[n % 3].into(),
        arguments: json!({"n": n}),
        result: Some("ok".into()),
        result_size: 2,
        status: STATUSES[n % 4],
        error_kind: None,
        error_message: None,
        started_at: 1_000 + n as i64,
        duration_ms: ((n * 37) % 997) as f64,
        replaced: false,
    }
}

/// Waits for a store operation from a synchronous test.
trait Block: std::future::Future + Sized {
    fn block(self) -> Self::Output {
        rt().block_on(self)
    }
}

impl<F: std::future::Future> Block for F {}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Nearest rank, as the summaries compute it.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The global statistics counted by hand over records `0..n`.
fn check(stats: &GlobalStats, n: usize) {
    let records: Vec<CallRecord> = (0..n).map(record).collect();
    assert_eq!(stats.calls.total_calls, n as u64);
    let ok = records
        .iter()
        .filter(|r| r.status == CallStatus::Succeeded)
        .count() as u64;
    assert_eq!(stats.calls.successful_calls, ok);
    let denied = records
        .iter()
        .filter(|r| r.status == CallStatus::Denied)
        .count() as u64;
    assert_eq!(stats.calls.denied_calls, denied);
    assert_eq!(stats.conversations, 13.min(n) as u64);
    let mut all: Vec<f64> = records.iter().map(|r| r.duration_ms).collect();
    all.sort_by(f64::total_cmp);
    assert_eq!(stats.duration_ms.p50, percentile(&all, 0.5));
    assert_eq!(stats.duration_ms.p95, percentile(&all, 0.95));
    let mut per_tool: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in &records {
        per_tool.entry(&r.tool).or_default().push(r.duration_ms);
    }
    assert_eq!(stats.tools.len(), per_tool.len());
    for t in &stats.tools {
        let mut d = per_tool[t.tool.as_str()].clone();
        d.sort_by(f64::total_cmp);
        assert_eq!(t.calls.total_calls, d.len() as u64, "{}", t.tool);
        assert_eq!(t.duration_ms.p50, percentile(&d, 0.5), "{}", t.tool);
        assert_eq!(t.duration_ms.p95, percentile(&d, 0.95), "{}", t.tool);
    }
}

fn folded_to(path: &std::path::Path) -> i64 {
    let conn = Connection::open(path).unwrap();
    conn.query_row("SELECT folded_to FROM totals_mark", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn summaries_are_exact_before_and_after_the_fold() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let store = Store::open(&path).unwrap();
    let rt = rt();
    // A few records: all in the tail.
    rt.block_on(store.record_calls((0..50).map(record).collect()))
        .unwrap();
    check(&store.global_stats().block().unwrap(), 50);
    // Enough that the idle writer folds them, then a tail on top.
    rt.block_on(store.record_calls((50..9_000).map(record).collect()))
        .unwrap();
    let waited = std::time::Instant::now();
    while folded_to(&path) == 0 && waited.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(folded_to(&path) > 0, "the writer never folded");
    rt.block_on(store.record_calls((9_000..9_100).map(record).collect()))
        .unwrap();
    let stats = store.global_stats().block().unwrap();
    check(&stats, 9_100);
    let shell = store.tool_stats("shell").block().unwrap();
    assert_eq!(stats.tools.iter().find(|t| t.tool == "shell"), Some(&shell));
    assert_eq!(
        store
            .tool_stats("nothing")
            .block()
            .unwrap()
            .calls
            .total_calls,
        0
    );
}

#[test]
fn durations_above_a_millisecond_keep_three_significant_digits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("d.db")).unwrap();
    let mut r = record(0);
    r.duration_ms = 12_345.678;
    rt().block_on(store.record_calls(vec![r])).unwrap();
    let s = store.tool_stats("echo").block().unwrap();
    assert_eq!((s.duration_ms.p50, s.duration_ms.p95), (12_300.0, 12_300.0));
    // The conversation summary stays exact (to the microsecond).
    let c = store.conversation_summary("conv0").block().unwrap();
    assert_eq!(c.duration_ms.p50, 12_345.678);
}

#[test]
fn a_schema_6_database_is_folded_when_it_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let store = Store::open(&path).unwrap();
    rt().block_on(store.record_calls((0..3_000).map(record).collect()))
        .unwrap();
    store.close();
    drop(store);
    // Back to schema 6: the totals gone, the records kept (and what schemas 9 and 10
    // and the responses' input column added taken out again).
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP INDEX pending_waiting; ALTER TABLE pending DROP COLUMN requested_at;
         DROP TABLE totals_mark; DROP TABLE tool_totals; DROP TABLE duration_totals;
         DROP TRIGGER changes_run_created; DROP TRIGGER changes_run_updated;
         DROP TRIGGER changes_pending_added; DROP TRIGGER changes_pending_decided;
         DROP TABLE changes;
         DROP TABLE conversation_totals; DROP TABLE run_totals;
         DROP INDEX pending_expires;
         ALTER TABLE pending DROP COLUMN reason; ALTER TABLE pending DROP COLUMN expires_at;
         ALTER TABLE pending DROP COLUMN on_timeout; ALTER TABLE pending DROP COLUMN warned_at;
         ALTER TABLE pending DROP COLUMN policy; ALTER TABLE standing_decisions DROP COLUMN policy;
         ALTER TABLE tool_calls DROP COLUMN replaced;
         DROP TABLE api_keys; DROP INDEX runs_tenant; ALTER TABLE runs DROP COLUMN tenant;
         ALTER TABLE runs DROP COLUMN started_by; ALTER TABLE pending DROP COLUMN decided_by_key;
         ALTER TABLE pending DROP COLUMN decided_as;
         CREATE TABLE secrets_old (name TEXT PRIMARY KEY, sealed TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
         DROP TABLE secrets; ALTER TABLE secrets_old RENAME TO secrets;
         ALTER TABLE responses DROP COLUMN input;
         ALTER TABLE runs DROP COLUMN prompt_tokens; ALTER TABLE runs DROP COLUMN completion_tokens;
         ALTER TABLE runs DROP COLUMN total_tokens; ALTER TABLE runs DROP COLUMN model_calls;
         ALTER TABLE runs DROP COLUMN cache_read_tokens;
         ALTER TABLE runs DROP COLUMN cache_creation_tokens; ALTER TABLE runs DROP COLUMN compactions;
         PRAGMA user_version = 6;",
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    assert_eq!(folded_to(&path), 3_000);
    check(&store.global_stats().block().unwrap(), 3_000);
}

#[test]
fn a_run_tree_counts_folded_and_unfolded_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tree.db");
    let store = Store::open(&path).unwrap();
    let rt = rt();
    rt.block_on(store.create_run(
        "run_top",
        "conv_t",
        "a",
        "{}".into(),
        "me",
        60_000,
        vec![],
        0,
    ))
    .unwrap();
    let mine = |range: std::ops::Range<usize>| -> Vec<CallRecord> {
        range
            .map(|n| CallRecord {
                run_id: Some("run_top".into()),
                ..record(n)
            })
            .collect()
    };
    rt.block_on(store.record_calls(mine(0..5_000))).unwrap();
    let waited = std::time::Instant::now();
    while folded_to(&path) == 0 && waited.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    rt.block_on(store.record_calls(mine(5_000..5_010))).unwrap();
    let tree = store.run_tree("run_top").block().unwrap();
    let records: Vec<CallRecord> = (0..5_010).map(record).collect();
    assert_eq!(tree.summary.calls, 5_010);
    let ok = records
        .iter()
        .filter(|r| r.status == CallStatus::Succeeded)
        .count() as u64;
    assert_eq!(tree.summary.succeeded, ok);
    let ms: f64 = records.iter().map(|r| r.duration_ms).sum();
    assert!((tree.summary.call_ms - ms).abs() < 1e-6 * ms);
    assert_eq!(tree.tools["shell"].calls, 1_670);
}
