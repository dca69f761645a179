//! Load on `toolgate serve`: CLIENTS concurrent HTTP clients each drive RUNS runs of a
//! scripted agent that pauses twice over (a CONFIRM call and a client tool): start,
//! approve, submit, read the run and its call records. Prints runs/s, p50/p99 latency
//! per request kind and the server's peak RSS, then checks that every run completed
//! and every call was recorded exactly once (over HTTP, then in the SQLite file).
//! Exits 1 when a check fails.
//!
//! Run: `cargo build --release && cargo run --release --example serve_load -- [CLIENTS] [RUNS]`
//! (defaults 200 and 1), or `... -- [CLIENTS] --seconds N` for a timed load: each
//! client keeps starting runs until N seconds have passed. Every 10 s a `wal_bytes`
//! line gives the sizes of the database's WAL and main file (and the runs completed so
//! far); the largest WAL seen is printed at the end. Traffic stays on 127.0.0.1; the
//! server is the release binary next to this example (`target/release/toolgate`), or
//! the one named by `TOOLGATE_BIN`, started on a free port.
#![allow(clippy::too_many_lines, reason = "an example program reads best whole")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const AGENT: &str = "\
name: load
model: scripted:load.replies.yaml
mode: native
instructions: You help with numbers and files.
tools: [calculator, write_file, ask_user]
max_iterations: 8
";

/// One AUTO call, then a CONFIRM call and a client tool at once, then the answer.
const REPLIES: &str = r#"replies:
  - content: Let me work that out first.
    tool_calls:
      - {id: call_calc, name: calculator, arguments: {expression: "2+3*4"}}
  - content: That is 14. I will save it, and I need your favourite colour.
    tool_calls:
      - {id: call_write, name: write_file, arguments: {path: result.txt, content: "2+3*4 = 14\n"}}
      - {id: call_ask, name: ask_user, arguments: {question: What is your favourite colour?}}
  - content: Done. 2+3*4 is 14, saved in result.txt.
"#;

const ASK_USER: &str = "\
name: ask_user
description: Ask the person a question and wait for the answer.
permission: auto
parameters:
  - {name: question, type: string, required: true}
entry: {type: client}
";

/// Every call of one run, and how it must be recorded.
const EXPECTED_CALLS: [(&str, &str, &str); 3] = [
    ("call_calc", "calculator", "succeeded"),
    ("call_write", "write_file", "succeeded"),
    ("call_ask", "ask_user", "client"),
];

const KINDS: [&str; 5] = ["start", "approve", "submit", "get", "calls"];

/// Most failures printed in full.
const SHOW_FAILURES: usize = 10;

/// How often the WAL's size is looked at (for its largest size), and every how many
/// looks it is printed.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
const PRINT_EVERY: u64 = 10;

/// How much load each client brings.
#[derive(Clone, Copy)]
enum Plan {
    /// This many runs.
    Runs(usize),
    /// Runs started until this long after the start.
    For(Duration),
}

type Res<T> = Result<T, String>;

#[derive(Default)]
struct Tally {
    latencies: BTreeMap<&'static str, Vec<Duration>>,
    failures: Vec<String>,
    started: usize,
    completed: usize,
    run_ids: Vec<String>,
}

const USAGE: &str = "usage: serve_load [CLIENTS] [RUNS_PER_CLIENT | --seconds N]";

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let seconds = match args.iter().position(|a| a == "--seconds") {
        Some(i) if i + 1 < args.len() => {
            let n = arg(Some(args[i + 1].clone()), 0);
            args.drain(i..i + 2);
            Some(n)
        }
        Some(_) => {
            eprintln!("serve_load: --seconds needs a number; {USAGE}");
            std::process::exit(2);
        }
        None => None,
    };
    let mut args = args.into_iter();
    let clients = arg(args.next(), 200);
    let plan = match seconds {
        Some(n) => Plan::For(Duration::from_secs(n as u64)),
        None => Plan::Runs(arg(args.next(), 1)),
    };
    if let Some(extra) = args.next() {
        eprintln!("serve_load: unexpected '{extra}'; {USAGE}");
        std::process::exit(2);
    }
    match main_inner(clients, plan) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("serve_load: {e}");
            std::process::exit(2);
        }
    }
}

fn arg(a: Option<String>, default: usize) -> usize {
    match a {
        None => default,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n > 0 && n <= 10_000 => n,
            _ => {
                eprintln!("serve_load: '{s}' is not a count from 1 to 10000; {USAGE}");
                std::process::exit(2);
            }
        },
    }
}

/// `TOOLGATE_BIN` when set, else the `toolgate` binary of the same profile:
/// `target/release/examples/serve_load` -> `target/release/toolgate`.
fn server_binary() -> Res<PathBuf> {
    if let Some(bin) = std::env::var_os("TOOLGATE_BIN") {
        let bin = PathBuf::from(bin);
        if !bin.is_file() {
            return Err(format!("TOOLGATE_BIN: {} is not a file", bin.display()));
        }
        return Ok(bin);
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the target folder")?;
    let bin = dir.join(format!("toolgate{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        return Err(format!(
            "{} is missing: build it first with `cargo build --release`",
            bin.display()
        ));
    }
    Ok(bin)
}

/// A fresh folder with the agent, its replies, the client tool and a workspace.
fn setup() -> Res<PathBuf> {
    let dir = std::env::temp_dir().join(format!("toolgate-serve-load-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let _ = std::fs::remove_dir_all(&dir);
    write("agents/load.yaml", AGENT)?;
    write("agents/load.replies.yaml", REPLIES)?;
    write("tools/ask_user.yaml", ASK_USER)?;
    std::fs::create_dir_all(dir.join("workspace")).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// The server, stopped (SIGTERM, then kill) when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(bin: &Path, dir: &Path) -> Res<Server> {
        let log = std::fs::File::create(dir.join("server.log")).map_err(|e| e.to_string())?;
        let mut child = Command::new(bin)
            .arg("--db")
            .arg(dir.join("load.db"))
            .arg("serve")
            .args(["--addr", "127.0.0.1:0"])
            .arg("--agents")
            .arg(dir.join("agents"))
            .arg("--tools")
            .arg(dir.join("tools"))
            .arg("--workspace")
            .arg(dir.join("workspace"))
            .env_remove("TOOLGATE_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        // The server prints `toolgate serve: listening on http://ADDR` once bound.
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.split("listening on ").nth(1) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let mut server = Server {
            child,
            base: String::new(),
        };
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => server.base = url,
            Err(_) => {
                return Err(format!(
                    "the server did not start in 30 s; see {}",
                    dir.join("server.log").display()
                ));
            }
        }
        Ok(server)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM and wait: the server stops accepting and exits 0.
    fn stop(&mut self) -> Res<()> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("the server exited with {status}")),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    return Err("the server did not stop within 30 s of SIGTERM".into());
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A field of /proc/PID/status, in kB.
fn proc_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// A file's length in bytes; 0 when it is not there (a WAL not yet made, or removed).
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Until `stop` is dropped, a `wal_bytes` line with the sizes of the WAL and the
/// database every [`PRINT_EVERY`] looks; when it ends, the largest WAL seen and how
/// many times the WAL was seen shorter than at the look before (reset).
fn sample_wal(
    db: PathBuf,
    completed: Arc<AtomicUsize>,
    stop: std::sync::mpsc::Receiver<()>,
) -> std::thread::JoinHandle<(u64, usize)> {
    std::thread::spawn(move || {
        let mut wal_name = db.clone().into_os_string();
        wal_name.push("-wal");
        let wal = PathBuf::from(wal_name);
        let start = Instant::now();
        let (mut max, mut looks, mut last, mut shrank) = (0, 0, 0, 0);
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(SAMPLE_EVERY)
        {
            let (w, d) = (file_len(&wal), file_len(&db));
            max = max.max(w);
            shrank += usize::from(w < last);
            last = w;
            looks += 1;
            if looks % PRINT_EVERY != 0 {
                continue;
            }
            println!(
                "wal_bytes t={}s wal={w} db={d} runs={} (WAL {:.1} MiB, database {:.1} MiB)",
                start.elapsed().as_secs(),
                completed.load(Ordering::Relaxed),
                mib(w),
                mib(d),
            );
        }
        (max.max(file_len(&wal)), shrank)
    })
}

fn main_inner(clients: usize, plan: Plan) -> Res<bool> {
    let bin = server_binary()?;
    let dir = setup()?;
    let db = dir.join("load.db");
    let mut server = Server::start(&bin, &dir)?;
    let pid = server.pid();
    let idle_kb = proc_kb(pid, "VmRSS");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let base = server.base.clone();
    let completed = Arc::new(AtomicUsize::new(0));
    let (stop_sampler, stop) = std::sync::mpsc::channel();
    let sampler = sample_wal(db.clone(), Arc::clone(&completed), stop);
    let loaded = rt.block_on(load(base.clone(), clients, plan, completed));
    drop(stop_sampler);
    let (wal_max, wal_shrank) = sampler.join().unwrap_or_default();
    let (tally, elapsed) = loaded?;
    let peak_kb = proc_kb(pid, "VmHWM");
    let mut failures = tally.failures;
    let stats = rt.block_on(global_stats(&base));
    match stats {
        Ok(total) if total == (tally.completed * EXPECTED_CALLS.len()) as u64 => {}
        Ok(total) => failures.push(format!(
            "GET /v1/stats counts {total} calls; {} completed runs make {}",
            tally.completed,
            tally.completed * EXPECTED_CALLS.len()
        )),
        Err(e) => failures.push(e),
    }
    drop(rt);
    let stopping = Instant::now();
    if let Err(e) = server.stop() {
        failures.push(e);
    }
    let stopped = stopping.elapsed();
    let (wal_stopped, db_stopped) = (file_len(&dir.join("load.db-wal")), file_len(&db));
    let checking = Instant::now();
    let total = match plan {
        Plan::Runs(runs) => clients * runs,
        Plan::For(_) => tally.started,
    };
    failures.extend(check_db(&db, total));
    failures.extend(check_log(&dir.join("server.log")));
    let checked = checking.elapsed();

    let load = match plan {
        Plan::Runs(runs) => format!("{clients} clients x {runs} runs"),
        Plan::For(d) => format!("{clients} clients for {} s", d.as_secs()),
    };
    println!(
        "toolgate serve under load: {load} = {total} runs, each start -> approve -> submit -> get -> calls"
    );
    println!(
        "completed {}/{total} runs in {:.2} s: {:.1} runs/s ({:.1} requests/s)",
        tally.completed,
        elapsed.as_secs_f64(),
        tally.completed as f64 / elapsed.as_secs_f64(),
        (tally.completed * KINDS.len()) as f64 / elapsed.as_secs_f64(),
    );
    println!();
    println!(
        "{:<9} {:>6} {:>9} {:>9} {:>9} {:>9}",
        "request", "count", "p50 ms", "p99 ms", "max ms", "mean ms"
    );
    for kind in KINDS {
        let mut l = tally.latencies.get(kind).cloned().unwrap_or_default();
        l.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mean = if l.is_empty() {
            0.0
        } else {
            l.iter().map(|d| ms(*d)).sum::<f64>() / l.len() as f64
        };
        println!(
            "{kind:<9} {:>6} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            l.len(),
            ms(rank(&l, 0.50)),
            ms(rank(&l, 0.99)),
            ms(l.last().copied().unwrap_or_default()),
            mean,
        );
    }
    println!();
    let mib =
        |kb: Option<u64>| kb.map_or("?".to_string(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
    println!(
        "server RSS: {} idle, {} peak (VmHWM); stopped by SIGTERM in {:.2} s; database checked in {:.2} s",
        mib(idle_kb),
        mib(peak_kb),
        stopped.as_secs_f64(),
        checked.as_secs_f64(),
    );
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0));
    println!(
        "wal_bytes max={wal_max} ({}) under load, seen shrinking {wal_shrank} times; after SIGTERM: WAL {}, database {}",
        mib(wal_max),
        mib(wal_stopped),
        mib(db_stopped),
    );
    if failures.is_empty() {
        println!(
            "checks: ok ({total} runs completed; {} calls, each recorded exactly once; no 5xx, no server errors logged)",
            total * EXPECTED_CALLS.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
        Ok(true)
    } else {
        println!("checks: {} FAILED", failures.len());
        for f in failures.iter().take(SHOW_FAILURES) {
            println!("  - {f}");
        }
        if failures.len() > SHOW_FAILURES {
            println!("  ... and {} more", failures.len() - SHOW_FAILURES);
        }
        println!("(the server's folder is kept: {})", dir.display());
        Ok(false)
    }
}

/// Nearest-rank percentile of sorted durations.
fn rank(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

async fn load(
    base: String,
    clients: usize,
    plan: Plan,
    completed: Arc<AtomicUsize>,
) -> Res<(Tally, Duration)> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(clients)
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    // Everyone starts together.
    let gate = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut set = tokio::task::JoinSet::new();
    for c in 0..clients {
        let (http, base, tally, gate, completed) = (
            http.clone(),
            base.clone(),
            Arc::clone(&tally),
            Arc::clone(&gate),
            Arc::clone(&completed),
        );
        set.spawn(async move {
            gate.wait().await;
            let start = Instant::now();
            let more = |r: usize| match plan {
                Plan::Runs(runs) => r < runs,
                Plan::For(d) => start.elapsed() < d,
            };
            let mut r = 0;
            while more(r) {
                let outcome = one_run(&http, &base, c, r).await;
                let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
                let (timings, result) = outcome;
                for (kind, d) in timings {
                    t.latencies.entry(kind).or_default().push(d);
                }
                t.started += 1;
                match result {
                    Ok(id) => {
                        t.completed += 1;
                        completed.fetch_add(1, Ordering::Relaxed);
                        t.run_ids.push(id);
                    }
                    Err(e) => t.failures.push(format!("client {c} run {r}: {e}")),
                }
                r += 1;
            }
        });
    }
    gate.wait().await;
    let start = Instant::now();
    while let Some(joined) = set.join_next().await {
        if let Err(e) = joined {
            tally
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .failures
                .push(format!("a client task stopped: {e}"));
        }
    }
    let elapsed = start.elapsed();
    let tally = std::mem::take(&mut *tally.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((tally, elapsed))
}

/// One timed request: status 200 and a JSON body, or why not.
async fn request(
    timings: &mut Vec<(&'static str, Duration)>,
    kind: &'static str,
    req: reqwest::RequestBuilder,
) -> Res<Value> {
    let t = Instant::now();
    let response = req.send().await.map_err(|e| format!("{kind}: {e}"))?;
    let status = response.status();
    let body = response.text().await.map_err(|e| format!("{kind}: {e}"))?;
    timings.push((kind, t.elapsed()));
    if status != reqwest::StatusCode::OK {
        return Err(format!("{kind}: HTTP {status}: {body}"));
    }
    serde_json::from_str(&body).map_err(|e| format!("{kind}: not JSON ({e}): {body}"))
}

fn expect_status(kind: &str, run: &Value, want: &str) -> Res<()> {
    match run["status"].as_str() {
        Some(s) if s == want => Ok(()),
        _ => Err(format!(
            "{kind}: expected a {want} run, got {}",
            truncate(&run.to_string())
        )),
    }
}

fn items(run: &Value) -> Vec<(String, String)> {
    run["required_action"]["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    (
                        i["call_id"].as_str().unwrap_or("").to_string(),
                        i["kind"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn truncate(s: &str) -> String {
    if s.len() > 400 {
        let mut end = 400;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s.to_string()
    }
}

/// One run from start to its records; the run id when every step went as expected.
async fn one_run(
    http: &reqwest::Client,
    base: &str,
    client: usize,
    n: usize,
) -> (Vec<(&'static str, Duration)>, Res<String>) {
    let mut timings = Vec::with_capacity(KINDS.len());
    let result = async {
        let run = request(
            &mut timings,
            "start",
            http.post(format!("{base}/v1/runs")).json(&json!({
                "agent": "load",
                "input": format!("client {client}, run {n}: what is 2+3*4? save it."),
            })),
        )
        .await?;
        expect_status("start", &run, "requires_action")?;
        let id = run["id"].as_str().ok_or("start: no run id")?.to_string();
        let waiting = items(&run);
        let want = [
            ("call_write".to_string(), "approval".to_string()),
            ("call_ask".to_string(), "submit_tool_output".to_string()),
        ];
        if waiting != want {
            return Err(format!("start: run {id} waits for {waiting:?}"));
        }
        let run = request(
            &mut timings,
            "approve",
            http.post(format!("{base}/v1/runs/{id}/approve"))
                .json(&json!({"call_id": "call_write"})),
        )
        .await?;
        expect_status("approve", &run, "requires_action")?;
        let run = request(
            &mut timings,
            "submit",
            http.post(format!("{base}/v1/runs/{id}/submit"))
                .json(&json!({"call_id": "call_ask", "output": "blue"})),
        )
        .await?;
        expect_status("submit", &run, "completed")?;
        let run = request(
            &mut timings,
            "get",
            http.get(format!("{base}/v1/runs/{id}")),
        )
        .await?;
        expect_status("get", &run, "completed")?;
        if run["output"]
            .as_str()
            .is_none_or(|o| !o.starts_with("Done."))
        {
            return Err(format!("get: run {id} has output {}", run["output"]));
        }
        let page = request(
            &mut timings,
            "calls",
            http.get(format!("{base}/v1/calls?run_id={id}")),
        )
        .await?;
        let mut got: Vec<(String, String, String)> = page["calls"]
            .as_array()
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| {
                        let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
                        (s("call_id"), s("tool"), s("status"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        got.sort();
        let mut want: Vec<(String, String, String)> = EXPECTED_CALLS
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect();
        want.sort();
        if got != want || page["total"].as_u64() != Some(EXPECTED_CALLS.len() as u64) {
            return Err(format!("calls: run {id} has records {got:?}"));
        }
        Ok(id)
    }
    .await;
    (timings, result)
}

async fn global_stats(base: &str) -> Res<u64> {
    let body: Value = reqwest::Client::new()
        .get(format!("{base}/v1/stats"))
        .send()
        .await
        .map_err(|e| format!("GET /v1/stats: {e}"))?
        .json()
        .await
        .map_err(|e| format!("GET /v1/stats: {e}"))?;
    body["total_calls"]
        .as_u64()
        .ok_or_else(|| format!("GET /v1/stats: no total_calls in {body}"))
}

/// The file after the server stopped: every run completed, nothing waits, every call
/// of every run recorded exactly once, with the expected tool and outcome.
fn check_db(path: &Path, runs: usize) -> Vec<String> {
    match read_db(path) {
        Ok((statuses, waiting, calls)) => judge_db(runs, &statuses, waiting, &calls),
        Err(e) => vec![format!("{}: {e}", path.display())],
    }
}

/// A run's calls as recorded: (call id, tool, status) -> how many rows.
type Recorded = BTreeMap<String, BTreeMap<(String, String, String), usize>>;

fn read_db(path: &Path) -> rusqlite::Result<(BTreeMap<String, String>, i64, Recorded)> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statuses = BTreeMap::new();
    let mut stmt = conn.prepare("SELECT id, status FROM runs")?;
    for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))? {
        let (id, status) = row?;
        statuses.insert(id, status);
    }
    let waiting: i64 = conn.query_row(
        "SELECT COUNT(*) FROM pending WHERE state != 'done'",
        [],
        |r| r.get(0),
    )?;
    let mut calls: Recorded = BTreeMap::new();
    let mut stmt = conn.prepare("SELECT run_id, call_id, tool, status FROM tool_calls")?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?.unwrap_or_default(),
            (r.get(1)?, r.get(2)?, r.get(3)?),
        ))
    })? {
        let (run, call) = row?;
        *calls.entry(run).or_default().entry(call).or_default() += 1;
    }
    Ok((statuses, waiting, calls))
}

fn judge_db(
    runs: usize,
    statuses: &BTreeMap<String, String>,
    waiting: i64,
    calls: &Recorded,
) -> Vec<String> {
    let mut failures = Vec::new();
    if statuses.len() != runs {
        failures.push(format!(
            "database: {} runs, expected {runs}",
            statuses.len()
        ));
    }
    let want: BTreeMap<(String, String, String), usize> = EXPECTED_CALLS
        .iter()
        .map(|(a, b, c)| ((a.to_string(), b.to_string(), c.to_string()), 1))
        .collect();
    for (id, status) in statuses {
        if status != "completed" {
            failures.push(format!("database: run {id} is {status}"));
        }
        let got = calls.get(id).cloned().unwrap_or_default();
        if got != want {
            failures.push(format!("database: run {id} has the records {got:?}"));
        }
    }
    for run in calls.keys().filter(|r| !statuses.contains_key(*r)) {
        failures.push(format!("database: records of an unknown run '{run}'"));
    }
    if waiting != 0 {
        failures.push(format!("database: {waiting} pending items not done"));
    }
    failures
}

/// The server's log: no error lines (a 5xx, a lock error, a lost lease...).
fn check_log(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            l.contains("ERROR") || lower.contains("locked") || lower.contains("panicked")
        })
        .map(|l| format!("server log: {}", truncate(l)))
        .collect()
}
