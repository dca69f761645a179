//! Every summary over 1,000,000 call records on each backend: a conversation's (1,000
//! records), a tool's (125,000), the whole database's (8 tools, 1,000 conversations), a
//! run tree's (a top run and 10 sub-agent runs, 1,100 records), and one tenant's tool
//! and global statistics (read from its records on both); the same records written
//! into a SQLite file and into a PostgreSQL database once, in batches of 10,000, then
//! left to settle (the running totals folded, PostgreSQL's autovacuum done). `ratios`
//! prints PostgreSQL's time over SQLite's for each summary (the goal: within 2x).
//!
//! Run: `cargo bench --bench store_summaries` (`-- ratios` for the table alone). The
//! PostgreSQL server is `TOOLGATE_TEST_POSTGRES_URL`'s, else one started with
//! `tests/postgres/server.sh` for the run (fsync off unless `TOOLGATE_PG_DURABLE=1`).
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use divan::Bencher;
use serde_json::json;
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{CallRecord, Scope, Store};

fn main() {
    divan::main();
}

const RECORDS: usize = 1_000_000;
const BATCH: usize = 10_000;
const TOOLS: [&str; 8] = [
    "echo",
    "shell",
    "read_file",
    "write_file",
    "web_search",
    "fetch",
    "grep",
    "list",
];
const STATUSES: [CallStatus; 5] = [
    CallStatus::Succeeded,
    CallStatus::Succeeded,
    CallStatus::Succeeded,
    CallStatus::Failed,
    CallStatus::Denied,
];
/// The tree's top run; its 10 sub-agent runs are `run_tree_1` to `run_tree_10`.
const TOP: &str = "run_tree_top";

/// The two stores, filled once.
struct Fixture {
    _dir: tempfile::TempDir,
    sqlite: Store,
    postgres: Store,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Record `n` of the million: 1,000 conversations, 8 tools, a run for the tree's.
fn record(n: usize) -> CallRecord {
    let tree = n % 100 == 99 && n < 110_000;
    let run = tree.then(|| match (n / 100) % 11 {
        0 => TOP.to_string(),
        i => format!("run_tree_{i}"),
    });
    CallRecord {
        call_id: format!("call_{n}"),
        run_id: run,
        conversation_id: format!("conv{}", n % 1000),
        agent: Some("bench".into()),
        caller: CallerKind::Agent,
        tool: TOOLS[n % TOOLS.len()].into(),
        arguments: json!({"n": n}),
        result: Some("ok".into()),
        result_size: 2,
        status: STATUSES[n % STATUSES.len()],
        error_kind: None,
        error_message: None,
        started_at: 1_700_000_000_000 + n as i64,
        duration_ms: (n % 997) as f64 * 0.37,
        replaced: false,
        attempts: Vec::new(),
        cached: None,
    }
}

/// The tree's runs, written directly (the same rows on both backends).
fn runs_sql() -> String {
    let mut sql = String::new();
    for i in 0..=10 {
        let (id, parent, call, depth) = if i == 0 {
            (TOP.to_string(), "NULL".to_string(), "NULL".to_string(), 0)
        } else {
            (
                format!("run_tree_{i}"),
                format!("'{TOP}'"),
                format!("'call_{i}'"),
                1,
            )
        };
        sql.push_str(&format!(
            "INSERT INTO runs (id, conversation_id, agent, status, state, iteration, created_at, updated_at, parent_run_id, parent_call_id, depth, tenant) \
             VALUES ('{id}', 'conv999', 'bench', 'completed', '{{}}', 1, {}, {}, {parent}, {call}, {depth}, 'acme');\n",
            1_700_000_000_000i64 + i,
            1_700_000_001_000i64 + i
        ));
    }
    sql
}

/// A PostgreSQL server's URL: the environment's, or one started for this run (it stops
/// when this process ends).
fn server() -> String {
    if let Ok(url) = std::env::var("TOOLGATE_TEST_POSTGRES_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_string();
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/postgres/server.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .arg(std::process::id().to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(out.status.success(), "{script} could not start PostgreSQL");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_else(|| panic!("{script} printed no URL"))
        .to_string()
}

/// Runs `sql` on the PostgreSQL database at `url`.
fn pg_execute(url: &str, sql: &str) {
    runtime().block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let conn = tokio::spawn(conn);
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        drop(client);
        let _ = conn.await;
    });
}

fn fill(store: &Store) {
    let rt = runtime();
    let started = Instant::now();
    rt.block_on(async {
        for from in (0..RECORDS).step_by(BATCH) {
            store
                .record_calls((from..from + BATCH).map(record).collect())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
    });
    println!(
        "{}: 1,000,000 records written in {:.1} s",
        if store.is_shared() {
            "postgres"
        } else {
            "sqlite"
        },
        started.elapsed().as_secs_f64()
    );
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("summaries.db");
        let sqlite = Store::open(&path).unwrap_or_else(|e| panic!("{e}"));
        rusqlite::Connection::open(&path)
            .and_then(|c| c.execute_batch(&runs_sql()))
            .unwrap_or_else(|e| panic!("{e}"));
        fill(&sqlite);

        let server = server();
        let name = format!("bench_summaries_{}", std::process::id());
        pg_execute(&server, &format!("CREATE DATABASE {name}"));
        let mut url = url::Url::parse(&server).unwrap_or_else(|e| panic!("{e}"));
        url.set_path(&name);
        let url = url.to_string();
        let postgres = Store::open(&url).unwrap_or_else(|e| panic!("{e}"));
        pg_execute(&url, &runs_sql());
        fill(&postgres);
        // Settled: the totals folded (a summary starts a fold of what is left), the
        // visibility map and statistics as autovacuum leaves them.
        let rt = runtime();
        for store in [&sqlite, &postgres] {
            let _ = rt.block_on(store.global_stats(Scope::All));
        }
        std::thread::sleep(Duration::from_secs(2));
        pg_execute(&url, "VACUUM ANALYZE");
        for store in [&sqlite, &postgres] {
            let g = rt
                .block_on(store.global_stats(Scope::All))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(g.calls.total_calls, RECORDS as u64);
        }
        Fixture {
            _dir: dir,
            sqlite,
            postgres,
        }
    })
}

/// The summaries measured, by name.
const SUMMARIES: [&str; 6] = [
    "conversation",
    "tool",
    "global",
    "run_tree",
    "tenant_tool",
    "tenant_global",
];

/// Reads summary `name` once.
fn summary(store: &Store, rt: &tokio::runtime::Runtime, name: &str) {
    fn ok<T>(name: &str, r: Result<T, toolgate::store::StoreError>) -> T {
        r.unwrap_or_else(|e| panic!("{name}: {e}"))
    }
    match name {
        "conversation" => {
            let s = ok(name, rt.block_on(store.conversation_summary("conv42")));
            assert_eq!(s.calls.total_calls, 1000);
        }
        "tool" => {
            let s = ok(name, rt.block_on(store.tool_stats(Scope::All, "shell")));
            assert_eq!(s.calls.total_calls, 125_000);
        }
        "global" => {
            divan::black_box(ok(name, rt.block_on(store.global_stats(Scope::All))));
        }
        "run_tree" => {
            let t = ok(name, rt.block_on(store.run_tree(TOP)));
            assert_eq!(t.totals.calls, 1_100);
        }
        "tenant_tool" => {
            divan::black_box(ok(
                name,
                rt.block_on(store.tool_stats(Scope::Tenant("acme"), "list")),
            ));
        }
        _ => {
            divan::black_box(ok(
                name,
                rt.block_on(store.global_stats(Scope::Tenant("acme"))),
            ));
        }
    }
}

fn store_of(backend: &str) -> &'static Store {
    let f = fixture();
    if backend == "postgres" {
        &f.postgres
    } else {
        &f.sqlite
    }
}

#[divan::bench(args = ["sqlite", "postgres"], sample_count = 20)]
fn conversation(bencher: Bencher, backend: &str) {
    let (store, rt) = (store_of(backend), runtime());
    bencher.bench_local(|| summary(store, &rt, "conversation"));
}

#[divan::bench(args = ["sqlite", "postgres"], sample_count = 20)]
fn tool(bencher: Bencher, backend: &str) {
    let (store, rt) = (store_of(backend), runtime());
    bencher.bench_local(|| summary(store, &rt, "tool"));
}

#[divan::bench(args = ["sqlite", "postgres"], sample_count = 20)]
fn global(bencher: Bencher, backend: &str) {
    let (store, rt) = (store_of(backend), runtime());
    bencher.bench_local(|| summary(store, &rt, "global"));
}

#[divan::bench(args = ["sqlite", "postgres"], sample_count = 20)]
fn run_tree(bencher: Bencher, backend: &str) {
    let (store, rt) = (store_of(backend), runtime());
    bencher.bench_local(|| summary(store, &rt, "run_tree"));
}

#[divan::bench(args = ["sqlite", "postgres"], sample_count = 3, sample_size = 1)]
fn tenant_global(bencher: Bencher, backend: &str) {
    let (store, rt) = (store_of(backend), runtime());
    bencher.bench_local(|| summary(store, &rt, "tenant_global"));
}

/// PostgreSQL's time over SQLite's, per summary (medians of timed reads, after a warm-up).
#[divan::bench(sample_count = 1, sample_size = 1)]
fn ratios() {
    let f = fixture();
    let rt = runtime();
    let median = |store: &Store, name: &str| {
        let runs = if name.starts_with("tenant") { 5 } else { 200 };
        for _ in 0..runs.min(20) {
            summary(store, &rt, name);
        }
        let mut times: Vec<f64> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                summary(store, &rt, name);
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    println!("summary         sqlite ms   postgres ms   postgres/sqlite");
    for name in SUMMARIES {
        let (s, p) = (median(&f.sqlite, name), median(&f.postgres, name));
        println!("{name:<15} {s:>9.3}   {p:>11.3}   {:>8.2}x", p / s);
    }
}
