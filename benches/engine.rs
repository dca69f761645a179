//! Execute + record: 20,000 no-op `echo` calls as steps of 10 parallel calls, each
//! step's records committed before the step is reported done; (a) one conversation,
//! steps in sequence; (b) 100 conversations at once; each beside its floor, raw
//! rusqlite writing the same rows into the same schema (a transaction per step, or one
//! transaction for everything), and the ratios of the two measured in the same run
//! (`ratios`). And summary times over a database of 1,000,000 records, a conversation's
//! and a tree of sub-agent runs'.
//!
//! Run: `cargo bench --bench engine` (`cargo bench --bench engine -- ratios` for the
//! ratios alone)
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use std::sync::Arc;

use divan::Bencher;
use divan::counter::ItemsCount;
use serde_json::json;
use toolgate::engine::{Cancel, Engine, EngineConfig, LimitConfig, call, prepare};
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{CallRecord, Scope, Store};
use toolgate::tool::ToolLibrary;

fn main() {
    divan::main();
}

const CALLS: usize = 20_000;
const STEP: usize = 10;

/// Waits for a store read from the synchronous timing closures.
trait On: std::future::Future + Sized {
    fn on(self, rt: &tokio::runtime::Runtime) -> Self::Output {
        rt.block_on(self)
    }
}

impl<F: std::future::Future> On for F {}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An engine, and the store its calls' records are committed to (none: not recorded).
#[derive(Clone)]
struct Rig {
    engine: Engine,
    store: Option<Store>,
}

fn engine(dir: &tempfile::TempDir) -> Rig {
    let store = Store::open(dir.path().join("bench.db")).unwrap_or_else(|e| panic!("{e}"));
    engine_with(dir, Some(store))
}

fn engine_with(dir: &tempfile::TempDir, store: Option<Store>) -> Rig {
    let limits = LimitConfig {
        global: 64,
        ..LimitConfig::default()
    };
    let engine = Engine::new(
        EngineConfig {
            limits,
            workspace: dir.path().to_path_buf(),
            ..EngineConfig::default()
        },
        None,
    );
    Rig { engine, store }
}

async fn steps(rig: Rig, lib: Arc<ToolLibrary>, conversation: String, count: usize) {
    let echo = lib
        .get("echo")
        .cloned()
        .ok_or_else(|| "no echo".to_string());
    let cancel = Cancel::new();
    for step in 0..count {
        let batch = (0..STEP)
            .map(|i| {
                let args = json!({"text": "ping"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let tool = echo.clone().map_err(toolgate::tool::ToolError::Execution);
                prepare(
                    call(&format!("c{step}_{i}"), "echo", args),
                    tool,
                    &conversation,
                    CallerKind::Agent,
                )
            })
            .collect();
        let out = rig.engine.execute_batch(batch, &cancel).await;
        let out = match &rig.store {
            Some(store) => toolgate::run::commit_outcomes(store, out)
                .await
                .unwrap_or_else(|e| panic!("{e}")),
            None => out,
        };
        assert!(out.iter().all(|o| o.status == CallStatus::Succeeded));
    }
}

/// (a) One conversation: 2,000 steps of 10 calls, one after another.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn one_conversation_sequential(bencher: Bencher) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let engine = engine(&dir);
    let lib = Arc::new(ToolLibrary::builtin(&toolgate::tool::sources::standard()));
    bencher.counter(ItemsCount::new(CALLS)).bench_local(|| {
        rt.block_on(steps(
            engine.clone(),
            lib.clone(),
            "conv".into(),
            CALLS / STEP,
        ));
    });
}

/// 100 conversations at once, 20 steps of 10 calls each, on `engine`.
fn hundred_conversations(bencher: Bencher, engine: Rig) {
    let rt = runtime();
    let lib = Arc::new(ToolLibrary::builtin(&toolgate::tool::sources::standard()));
    bencher.counter(ItemsCount::new(CALLS)).bench_local(|| {
        rt.block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            for c in 0..100 {
                tasks.spawn(steps(
                    engine.clone(),
                    lib.clone(),
                    format!("conv{c}"),
                    CALLS / STEP / 100,
                ));
            }
            while let Some(r) = tasks.join_next().await {
                r.unwrap_or_else(|e| panic!("{e}"));
            }
        });
    });
}

/// (b) 100 conversations at once, 20 steps of 10 calls each.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn hundred_conversations_at_once(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    hundred_conversations(bencher, engine(&dir));
}

/// (b) without the record: the engine's own cost, for comparison.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn hundred_conversations_without_record(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    hundred_conversations(bencher, engine_with(&dir, None));
}

/// The floor: raw rusqlite on one connection (WAL, `synchronous = NORMAL`, as the store
/// opens it), writing the same 20,000 rows into the same schema with a prepared
/// statement, `per` rows per IMMEDIATE transaction; no engine, no threads.
fn floor(path: &std::path::Path, conversations: usize, per: usize) {
    const INSERT: &str = "INSERT INTO tool_calls (call_id, run_id, conversation_id, agent, caller, tool, arguments, result, result_size, status, error_kind, error_message, started_at, duration_ms) VALUES (?1, NULL, ?2, NULL, 'agent', 'echo', ?3, 'ping', 4, 'succeeded', NULL, NULL, ?4, ?5)";
    let mut conn = rusqlite::Connection::open(path).unwrap_or_else(|e| panic!("{e}"));
    conn.pragma_update(None, "journal_mode", "WAL")
        .unwrap_or_else(|e| panic!("{e}"));
    conn.pragma_update(None, "synchronous", "NORMAL")
        .unwrap_or_else(|e| panic!("{e}"));
    let args = json!({"text": "ping"}).to_string();
    let mut n = 0;
    while n < CALLS {
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap_or_else(|e| panic!("{e}"));
        {
            let mut stmt = tx.prepare_cached(INSERT).unwrap_or_else(|e| panic!("{e}"));
            for _ in 0..per.min(CALLS - n) {
                stmt.execute(rusqlite::params![
                    format!("c{}_{}", n / STEP, n % STEP),
                    format!("conv{}", (n / STEP) % conversations),
                    args,
                    1_700_000_000_000i64 + n as i64,
                    0.01f64,
                ])
                .unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        tx.commit().unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A fresh database with toolgate's schema, for a floor.
fn floor_db(dir: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    let store = Store::open(&path).unwrap_or_else(|e| panic!("{e}"));
    store.close();
    path
}

/// Floor of (a): a transaction per step of 10 rows.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn floor_per_step(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = floor_db(&dir, "floor.db");
    bencher
        .counter(ItemsCount::new(CALLS))
        .bench_local(|| floor(&path, 1, STEP));
}

/// Floor of (b): all 20,000 rows in one transaction.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn floor_one_transaction(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = floor_db(&dir, "floor.db");
    bencher
        .counter(ItemsCount::new(CALLS))
        .bench_local(|| floor(&path, 100, CALLS));
}

/// Each figure beside its floor, measured in the same run, interleaved, medians of
/// `ROUNDS`: calls per second and the ratio (1.0 = the floor).
#[divan::bench(sample_count = 1, sample_size = 1)]
fn ratios() {
    const ROUNDS: usize = 5;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let lib = Arc::new(ToolLibrary::builtin(&toolgate::tool::sources::standard()));
    let (one, hundred) = (engine(&dir), {
        let store = Store::open(dir.path().join("hundred.db")).unwrap_or_else(|e| panic!("{e}"));
        engine_with(&dir, Some(store))
    });
    let (floor_a, floor_b) = (floor_db(&dir, "floor_a.db"), floor_db(&dir, "floor_b.db"));
    let rate = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        f();
        CALLS as f64 / start.elapsed().as_secs_f64()
    };
    let mut rows: [Vec<f64>; 4] = Default::default();
    let commits_before = hundred.store.as_ref().map_or(0, Store::commits);
    for _ in 0..ROUNDS {
        rows[0].push(rate(&mut || floor(&floor_a, 1, STEP)));
        rows[1].push(rate(&mut || {
            rt.block_on(steps(one.clone(), lib.clone(), "conv".into(), CALLS / STEP))
        }));
        rows[2].push(rate(&mut || floor(&floor_b, 100, CALLS)));
        rows[3].push(rate(&mut || {
            rt.block_on(async {
                let mut tasks = tokio::task::JoinSet::new();
                for c in 0..100 {
                    tasks.spawn(steps(
                        hundred.clone(),
                        lib.clone(),
                        format!("conv{c}"),
                        CALLS / STEP / 100,
                    ));
                }
                while let Some(r) = tasks.join_next().await {
                    r.unwrap_or_else(|e| panic!("{e}"));
                }
            })
        }));
    }
    // How many records each of (b)'s group commits held, on average.
    let commits = hundred.store.as_ref().map_or(0, Store::commits) - commits_before;
    let per_commit = (ROUNDS * CALLS) as f64 / commits.max(1) as f64;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let m: Vec<f64> = rows.iter_mut().map(median).collect();
    println!(
        "(a) one conversation, a commit per step: toolgate {:.0} calls/s, floor (raw rusqlite, a transaction per step) {:.0}/s: {:.2}x (goal 0.9x)",
        m[1],
        m[0],
        m[1] / m[0]
    );
    println!(
        "(b) 100 conversations at once: toolgate {:.0} calls/s, floor (raw rusqlite, one transaction) {:.0}/s: {:.2}x (goal 0.6x); {per_commit:.0} records per group commit",
        m[3],
        m[2],
        m[3] / m[2]
    );
}

/// A database of 1,000,000 records: 1,000 conversations of 1,000 calls over 8 tools.
fn million(dir: &tempfile::TempDir) -> Store {
    let store = Store::open(dir.path().join("million.db")).unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let tools = [
        "echo",
        "calculator",
        "web_search",
        "read_file",
        "write_file",
        "shell",
        "http_request",
        "current_time",
    ];
    let statuses = [
        CallStatus::Succeeded,
        CallStatus::Succeeded,
        CallStatus::Succeeded,
        CallStatus::Failed,
        CallStatus::Denied,
    ];
    rt.block_on(async {
        for chunk in 0..100 {
            let records: Vec<CallRecord> = (0..10_000)
                .map(|i| {
                    let n = chunk * 10_000 + i;
                    CallRecord {
                        call_id: format!("call_{n}"),
                        run_id: None,
                        conversation_id: format!("conv{}", n % 1000),
                        agent: Some("bench".into()),
                        caller: CallerKind::Agent,
                        tool: tools[n % tools.len()].into(),
                        arguments: json!({"n": n}),
                        result: Some("ok".into()),
                        result_size: 2,
                        status: statuses[n % statuses.len()],
                        error_kind: None,
                        error_message: None,
                        started_at: 1_700_000_000_000 + n as i64,
                        duration_ms: (n % 997) as f64 * 0.37,
                        replaced: false,
                        attempts: Vec::new(),
                        cached: None,
                    }
                })
                .collect();
            store
                .record_calls(records)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
    });
    store
}

/// A tree of runs in `store`: a top run and 10 sub-agent runs, 100 records each.
fn tree(store: &Store) -> String {
    use toolgate::store::{NewRun, RunLink};
    let rt = runtime();
    rt.block_on(async {
        let top = "run_tree_top".to_string();
        for i in 0..=10 {
            let id = if i == 0 {
                top.clone()
            } else {
                format!("run_tree_{i}")
            };
            store
                .create_linked_run(NewRun {
                    id: id.clone(),
                    conversation_id: format!("tree_conv_{i}"),
                    agent: "bench".into(),
                    state: "{}".into(),
                    owner: "bench".into(),
                    lease_ms: 60_000,
                    messages: Vec::new(),
                    first_seq: 0,
                    link: (i > 0).then(|| RunLink {
                        parent_run_id: top.clone(),
                        parent_call_id: format!("call_{i}"),
                        depth: 1,
                    }),
                    tenant: "default".into(),
                    started_by: None,
                })
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let records = (0..100)
                .map(|n| CallRecord {
                    call_id: format!("tree_{i}_{n}"),
                    run_id: Some(id.clone()),
                    conversation_id: format!("tree_conv_{i}"),
                    agent: Some("bench".into()),
                    caller: CallerKind::Agent,
                    tool: "echo".into(),
                    arguments: json!({"n": n}),
                    result: Some("ok".into()),
                    result_size: 2,
                    status: CallStatus::Succeeded,
                    error_kind: None,
                    error_message: None,
                    started_at: 1_800_000_000_000 + n as i64,
                    duration_ms: 0.5,
                    replaced: false,
                    attempts: Vec::new(),
                    cached: None,
                })
                .collect();
            store
                .record_calls(records)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        top
    })
}

#[divan::bench(sample_count = 1, sample_size = 1)]
fn summaries_over_a_million_records(bencher: Bencher) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = million(&dir);
    // Print the three timings; divan measures the whole group below.
    let time = |name: &str, f: &dyn Fn()| {
        let runs = 50;
        let start = std::time::Instant::now();
        for _ in 0..runs {
            f();
        }
        println!(
            "{name}: {:.3} ms",
            start.elapsed().as_secs_f64() * 1000.0 / runs as f64
        );
    };
    time("conversation summary (1,000 records of 1,000,000)", &|| {
        let s = store
            .conversation_summary("conv42")
            .on(&rt)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.calls.total_calls, 1000);
    });
    time("tool stats (125,000 records)", &|| {
        divan::black_box(
            store
                .tool_stats(Scope::All, "shell")
                .on(&rt)
                .unwrap_or_else(|e| panic!("{e}")),
        );
    });
    let start = std::time::Instant::now();
    let g = store
        .global_stats(Scope::All)
        .on(&rt)
        .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "global stats (1,000,000 records, 8 tools), first call: {:.1} ms (goal 100 ms)",
        start.elapsed().as_secs_f64() * 1000.0
    );
    assert_eq!(g.calls.total_calls, 1_000_000);
    time("global stats (1,000,000 records, 8 tools)", &|| {
        divan::black_box(
            store
                .global_stats(Scope::All)
                .on(&rt)
                .unwrap_or_else(|e| panic!("{e}")),
        );
    });
    let top = tree(&store);
    time("run tree summary, its records not folded yet", &|| {
        divan::black_box(
            store
                .run_tree(&top)
                .on(&rt)
                .unwrap_or_else(|e| panic!("{e}")),
        );
    });
    // The upkeep thread folds idle records within a quarter second.
    std::thread::sleep(std::time::Duration::from_millis(600));
    time(
        "run tree summary (a top run and 10 sub-agent runs, 1,100 of 1,001,100 records)",
        &|| {
            let t = store
                .run_tree(&top)
                .on(&rt)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t.totals.calls, 1_100);
        },
    );
    bencher.bench_local(|| {
        divan::black_box(
            store
                .conversation_summary("conv7")
                .on(&rt)
                .unwrap_or_else(|e| panic!("{e}")),
        )
    });
}
