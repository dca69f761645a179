//! The running totals behind the global, per-tool and per-run summaries: the same
//! numbers as counting every record, whether the records are folded into the totals
//! yet or not, on both backends; an older SQLite database (schema 6) brought up with its
//! records folded in; and the same records written to both backends (concurrently, in
//! many transactions) giving the same summaries, lists and trees.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde_json::json;
use toolgate::protocol::{CallStatus, CallerKind, RunStatus};
use toolgate::store::{CallRecord, GlobalStats, Scope, Store};

use crate::databases::TestDb;
use crate::store::on_both;

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
        attempts: Vec::new(),
        cached: None,
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

/// Runs `sql` (statements) on the test's database, beside the store.
pub fn execute(db: &TestDb, sql: &str) {
    match db {
        TestDb::Sqlite { path, .. } => Connection::open(path).unwrap().execute_batch(sql).unwrap(),
        TestDb::Postgres { url } => rt().block_on(async {
            let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .unwrap();
            let conn = tokio::spawn(conn);
            client.batch_execute(sql).await.unwrap();
            drop(client);
            let _ = conn.await;
        }),
    }
}

/// The first column of the first row of `sql`, a number.
fn number(db: &TestDb, sql: &str) -> i64 {
    match db {
        TestDb::Sqlite { path, .. } => Connection::open(path)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap(),
        TestDb::Postgres { url } => rt().block_on(async {
            let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .unwrap();
            let conn = tokio::spawn(conn);
            let n: i64 = client.query_one(sql, &[]).await.unwrap().get(0);
            drop(client);
            let _ = conn.await;
            n
        }),
    }
}

/// Whether any record is folded into the totals yet.
fn folded(db: &TestDb) -> bool {
    number(db, "SELECT folded_to FROM totals_mark") > 0
}

/// Waits (20 s at most) until some records are folded.
fn wait_for_a_fold(db: &TestDb) {
    let waited = std::time::Instant::now();
    while !folded(db) && waited.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(folded(db), "the records were never folded");
}

/// A run row written directly (the runs' own operations are beside the point here).
pub fn add_run(
    db: &TestDb,
    id: &str,
    conversation: &str,
    parent: Option<(&str, i64)>,
    tenant: &str,
    created_at: i64,
) {
    let (parent, call, depth) = match parent {
        Some((p, depth)) => (format!("'{p}'"), format!("'call_{id}'"), depth),
        None => ("NULL".to_string(), "NULL".to_string(), 0),
    };
    execute(
        db,
        &format!(
            "INSERT INTO runs (id, conversation_id, agent, status, state, iteration, created_at, updated_at, parent_run_id, parent_call_id, depth, tenant) \
             VALUES ('{id}', '{conversation}', 'a', 'completed', '{{}}', 1, {created_at}, {}, {parent}, {call}, {depth}, '{tenant}')",
            created_at + 250
        ),
    );
}

#[test]
fn summaries_are_exact_before_and_after_the_fold() {
    on_both(|db, store| {
        let rt = rt();
        // A few records: all in the tail.
        rt.block_on(store.record_calls((0..50).map(record).collect()))
            .unwrap();
        check(&store.global_stats(Scope::All).block().unwrap(), 50);
        // Enough that the totals fold them, then a tail on top.
        for from in (50..9_000).step_by(1_000) {
            rt.block_on(
                store.record_calls((from..(from + 1_000).min(9_000)).map(record).collect()),
            )
            .unwrap();
        }
        wait_for_a_fold(db);
        rt.block_on(store.record_calls((9_000..9_100).map(record).collect()))
            .unwrap();
        let stats = store.global_stats(Scope::All).block().unwrap();
        check(&stats, 9_100);
        let shell = store.tool_stats(Scope::All, "shell").block().unwrap();
        assert_eq!(stats.tools.iter().find(|t| t.tool == "shell"), Some(&shell));
        assert_eq!(
            store
                .tool_stats(Scope::All, "nothing")
                .block()
                .unwrap()
                .calls
                .total_calls,
            0
        );
    });
}

#[test]
fn durations_above_a_millisecond_keep_three_significant_digits() {
    on_both(|_, store| {
        let mut r = record(0);
        r.duration_ms = 12_345.678;
        rt().block_on(store.record_calls(vec![r])).unwrap();
        let s = store.tool_stats(Scope::All, "echo").block().unwrap();
        assert_eq!((s.duration_ms.p50, s.duration_ms.p95), (12_300.0, 12_300.0));
        // The conversation summary stays exact (to the microsecond).
        let c = store.conversation_summary("conv0").block().unwrap();
        assert_eq!(c.duration_ms.p50, 12_345.678);
    });
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
         DROP TABLE knowledge_fts; DROP TABLE knowledge_chunks; DROP TABLE knowledge_documents;
         DROP TABLE knowledge_bases; ALTER TABLE tool_calls DROP COLUMN attempts;
         DROP TABLE mcp_tasks; DROP TABLE model_requests; DROP TABLE tool_validations;
         DROP TABLE oauth_tokens; DROP TABLE oauth_consents;
         DROP TABLE tool_cache; DROP INDEX tool_calls_cached; ALTER TABLE tool_calls DROP COLUMN cached;
         DROP TABLE oauth_clients;
         PRAGMA user_version = 6;",
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    assert_eq!(folded_to(&path), 3_000);
    check(&store.global_stats(Scope::All).block().unwrap(), 3_000);
}

#[test]
fn a_run_tree_counts_folded_and_unfolded_records() {
    on_both(|db, store| {
        let rt = rt();
        add_run(db, "run_top", "conv_t", None, "default", 1_000);
        let mine = |range: std::ops::Range<usize>| -> Vec<CallRecord> {
            range
                .map(|n| CallRecord {
                    run_id: Some("run_top".into()),
                    ..record(n)
                })
                .collect()
        };
        for from in (0..5_000).step_by(1_000) {
            rt.block_on(store.record_calls(mine(from..from + 1_000)))
                .unwrap();
        }
        wait_for_a_fold(db);
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
        // By a prefix of its id, too.
        assert_eq!(store.run_tree("run_t").block().unwrap(), tree);
    });
}

/// Record `n` of the cross-backend set: eleven tools, every status, durations from a
/// microsecond to a minute (some on a rounding edge, in records without a run), runs in
/// three tenants and records without a run.
fn varied(n: usize) -> CallRecord {
    const ALL: [CallStatus; 6] = [
        CallStatus::Succeeded,
        CallStatus::Failed,
        CallStatus::Denied,
        CallStatus::Timeout,
        CallStatus::Cancelled,
        CallStatus::Client,
    ];
    let in_run = !n.is_multiple_of(6);
    let duration_ms = match n % 5 {
        // A run tree sums its durations: binary fractions keep any order of addition
        // exact (decimal ones differ in the last bit with the order).
        _ if in_run => ((n * 7919) % 60_000) as f64 + (n % 1000) as f64 / 1024.0,
        0 => (n % 1000) as f64 / 1000.0,
        1 => ((n * 7919) % 60_000) as f64 + 0.5,
        2 => 12.345 + (n % 17) as f64 * 0.0005,
        3 => ((n * 31) % 9_973) as f64 / 8.0,
        _ => 0.0015 * (n % 9) as f64,
    };
    CallRecord {
        call_id: format!("call_{n}"),
        run_id: in_run.then(|| RUNS[n % RUNS.len()].0.to_string()),
        conversation_id: format!("conv{}", n % 23),
        agent: Some("a".into()),
        caller: CallerKind::Agent,
        tool: format!("tool{}", (n * n) % 11),
        arguments: json!({"n": n}),
        result: Some(format!("r{n}")),
        result_size: 3,
        status: ALL[(n / 3) % 6],
        error_kind: None,
        error_message: None,
        started_at: 10_000 + (n as i64 * 37) % 4_000,
        duration_ms,
        replaced: n.is_multiple_of(50),
        attempts: Vec::new(),
        cached: None,
    }
}

/// A run of the cross-backend set: id, parent (and depth), tenant.
type Run = (&'static str, Option<(&'static str, i64)>, &'static str);

/// The runs of the cross-backend set.
const RUNS: [Run; 6] = [
    ("run_top", None, "default"),
    ("run_child", Some(("run_top", 1)), "default"),
    ("run_grandchild", Some(("run_child", 2)), "default"),
    ("run_sibling", Some(("run_top", 1)), "default"),
    ("run_t1", None, "t1"),
    ("run_t2", None, "t2"),
];

/// Every summary, list and tree of the cross-backend set, as JSON.
fn everything(store: &Store) -> Vec<(String, serde_json::Value)> {
    let json = |v: &dyn erased::Json| v.json();
    let mut out: Vec<(String, serde_json::Value)> = Vec::new();
    for c in 0..24 {
        let id = format!("conv{c}");
        out.push((
            id.clone(),
            json(&store.conversation_summary(&id).block().unwrap()),
        ));
    }
    for t in 0..12 {
        let tool = format!("tool{t}");
        out.push((
            tool.clone(),
            json(&store.tool_stats(Scope::All, &tool).block().unwrap()),
        ));
        for tenant in ["default", "t1", "t2", "none"] {
            out.push((
                format!("{tool} of {tenant}"),
                json(
                    &store
                        .tool_stats(Scope::Tenant(tenant), &tool)
                        .block()
                        .unwrap(),
                ),
            ));
        }
    }
    out.push((
        "global".into(),
        json(&store.global_stats(Scope::All).block().unwrap()),
    ));
    for tenant in ["default", "t1", "t2", "none"] {
        out.push((
            format!("global of {tenant}"),
            json(&store.global_stats(Scope::Tenant(tenant)).block().unwrap()),
        ));
    }
    for (run, ..) in RUNS {
        out.push((
            format!("tree {run}"),
            json(&store.run_tree(run).block().unwrap()),
        ));
    }
    out.push((
        "trees of conv_x".into(),
        json(&store.conversation_trees("conv_x").block().unwrap()),
    ));
    let queries = [
        toolgate::store::CallQuery::default(),
        toolgate::store::CallQuery {
            conversation_id: Some("conv3".into()),
            newest_first: true,
            limit: Some(7),
            offset: 3,
            ..Default::default()
        },
        toolgate::store::CallQuery {
            tenant: Some("t1".into()),
            status: Some(CallStatus::Denied),
            ..Default::default()
        },
        toolgate::store::CallQuery {
            tenant: Some("default".into()),
            tool: Some("tool4".into()),
            since: Some(11_000),
            until: Some(13_000),
            limit: Some(10_000),
            ..Default::default()
        },
        toolgate::store::CallQuery {
            run_id: Some("run_child".into()),
            ..Default::default()
        },
    ];
    // Record ids follow the order of commits, which many tasks make differ.
    for (i, q) in queries.iter().enumerate() {
        let mut page = json(&store.calls(q).block().unwrap());
        for call in page["calls"].as_array_mut().unwrap() {
            call.as_object_mut().unwrap().remove("id");
        }
        out.push((format!("calls {i}"), page));
    }
    let listed = store
        .runs_with_pending(Scope::All, None, Some("conv_x"), None, 100)
        .block()
        .unwrap();
    let listed: Vec<_> = listed
        .iter()
        .map(|(run, pending)| {
            let items: Vec<_> = pending
                .iter()
                .map(|p| (json(&p.item), p.state.as_str()))
                .collect();
            (run.id.clone(), run.status.as_str(), items)
        })
        .collect();
    out.push(("runs with pending".into(), json(&listed)));
    for tenant in ["default", "t1"] {
        out.push((
            format!("in progress in {tenant}"),
            json(&store.runs_in_progress(tenant, "me").block().unwrap()),
        ));
    }
    let paused = store
        .runs(
            Scope::Tenant("default"),
            Some(RunStatus::RequiresAction),
            None,
            2,
        )
        .block()
        .unwrap();
    out.push((
        "paused, two".into(),
        json(&paused.iter().map(|r| r.id.clone()).collect::<Vec<_>>()),
    ));
    let timeline = store.run_timeline("run_gr").block().unwrap();
    let mut calls: Vec<_> = timeline
        .calls
        .iter()
        .map(|c| c.record.call_id.clone())
        .collect();
    calls.sort();
    let pauses: Vec<_> = timeline
        .pauses
        .iter()
        .map(|p| {
            (
                p.item.call_id.clone(),
                p.state.as_str(),
                p.decided_by.clone(),
            )
        })
        .collect();
    out.push((
        "timeline".into(),
        json(&(&timeline.run.id, &timeline.messages, pauses, calls)),
    ));
    let runs = store.runs(Scope::All, None, None, 100).block().unwrap();
    out.push((
        "runs".into(),
        serde_json::json!(
            runs.iter()
                .map(|r| (&r.id, &r.tenant, r.depth))
                .collect::<Vec<_>>()
        ),
    ));
    out.push((
        "result".into(),
        json(&store.call_result("conv7", "call_7").block().unwrap()),
    ));
    let calls: Vec<String> = (0..40).map(|n| format!("call_{n}")).collect();
    let mut records = store.run_call_records("run_child", &calls).block().unwrap();
    records.sort_by(|a, b| a.call_id.cmp(&b.call_id));
    out.push(("run calls".into(), json(&records)));
    out
}

/// Serialisation behind a reference, for [`everything`]'s one list.
mod erased {
    pub trait Json {
        fn json(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap()
        }
    }
}

#[test]
fn both_backends_summarise_the_same_records_alike() {
    let dbs = TestDb::both();
    let mut seen = Vec::new();
    for db in &dbs {
        let store = db.open();
        for (i, (id, parent, tenant)) in RUNS.iter().enumerate() {
            add_run(db, id, "conv_x", *parent, tenant, 1_000 + i as i64);
        }
        // Many transactions at once, from many tasks: the totals fold while they commit.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut tasks = Vec::new();
            for task in 0..8usize {
                let store = store.clone();
                tasks.push(tokio::spawn(async move {
                    for batch in 0..25usize {
                        let from = (batch * 8 + task) * 20;
                        store
                            .record_calls((from..from + 20).map(varied).collect())
                            .await
                            .unwrap();
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
        // Paused runs with items: the child's waiting one shows on its parent too.
        execute(
            db,
            "UPDATE runs SET status = 'requires_action' WHERE id IN ('run_top', 'run_child', 'run_grandchild');
             INSERT INTO pending (run_id, call_id, kind, tool, arguments, state) VALUES
                 ('run_top', 'call_p0', 'approval', 'tool2', '{}', 'decided'),
                 ('run_grandchild', 'call_p2', 'approval', 'tool3', '{\"x\": 1}', 'waiting'),
                 ('run_grandchild', 'call_p1', 'submit_tool_output', 'tool1', '{}', 'waiting'),
                 ('run_child', 'call_p3', 'approval', 'tool1', '{}', 'done');
             UPDATE runs SET status = 'in_progress', started_by = 'me' WHERE id = 'run_t1';",
        );
        let early = everything(&store);
        wait_for_a_fold(db);
        let late = everything(&store);
        for ((name, a), (_, b)) in early.iter().zip(&late) {
            assert_eq!(a, b, "{}: {name} changed with the fold", db.name());
        }
        seen.push(late);
    }
    let [sqlite, postgres] = [&seen[0], &seen[1]];
    assert_eq!(sqlite.len(), postgres.len());
    for ((name, a), (_, b)) in sqlite.iter().zip(postgres) {
        assert_eq!(a, b, "{name}: sqlite (left) and postgres (right) differ");
    }
    let total = sqlite.iter().find(|(n, _)| n == "global").unwrap();
    assert_eq!(total.1["total_calls"], 4_000);
    let listed = &sqlite
        .iter()
        .find(|(n, _)| n == "runs with pending")
        .unwrap()
        .1;
    let top = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == "run_top")
        .unwrap();
    let items: Vec<_> = top[2]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i[0]["call_id"].as_str().unwrap(),
                i[0]["path"].as_array().map_or(0, Vec::len),
            )
        })
        .collect();
    assert_eq!(items, [("call_p0", 0), ("call_p2", 3), ("call_p1", 3)]);
    let in_t1 = &sqlite
        .iter()
        .find(|(n, _)| n == "in progress in t1")
        .unwrap()
        .1;
    assert_eq!(in_t1, &json!([1, 1]));
}
