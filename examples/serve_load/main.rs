//! Load on `toolgate serve`: CLIENTS concurrent HTTP clients each drive runs of a
//! scripted agent that pauses twice over (a CONFIRM call and a client tool): start,
//! approve, submit, read the run and its call records. Prints one table per run of the
//! load (runs/s, the servers' CPU per run from `/proc`, p50/p99 per request kind, peak
//! RSS, the largest WAL), then checks that every run completed and every call was
//! recorded exactly once (over HTTP, then in the database). Exits 1 when a check fails.
//!
//! Run: `cargo build --release && cargo run --release --example serve_load -- [CLIENTS]
//! [RUNS | --seconds N] [--server-cores N] [--threads N] [--db postgres://URL]
//! [--workers N]`. CLIENTS defaults to 200, RUNS to 1; `--seconds N` keeps each client
//! starting runs until N seconds have passed. `--server-cores N` pins each server to N
//! cores of its own (`taskset`) and the load client to the cores left, if any;
//! `--threads N` gives the client N runtime threads (default 2). `--db` puts the
//! servers on a PostgreSQL database (one made for the load: its runs are checked by
//! id, and the CPU of this machine's `postgres` processes is counted); `--workers N`
//! starts N servers on the one database, and each client starts its runs on one and
//! approves, submits and reads them on the next. On SQLite, every second the WAL's
//! size is looked at (a `wal_bytes` line every 10 s) and the largest is printed.
//! Traffic stays on 127.0.0.1; the server is the release binary next to this example
//! (`target/release/toolgate`), or the one named by `TOOLGATE_BIN`.
#![allow(clippy::too_many_lines, reason = "an example program reads best whole")]

mod check;
mod load;
mod server;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use server::Server;

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
pub(crate) const EXPECTED_CALLS: [(&str, &str, &str); 3] = [
    ("call_calc", "calculator", "succeeded"),
    ("call_write", "write_file", "succeeded"),
    ("call_ask", "ask_user", "client"),
];

pub(crate) const KINDS: [&str; 5] = ["start", "approve", "submit", "get", "calls"];

/// Most failures printed in full.
const SHOW_FAILURES: usize = 10;

/// How often the WAL's size is looked at (for its largest size), and every how many
/// looks it is printed.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
const PRINT_EVERY: u64 = 10;

/// How much load each client brings.
#[derive(Clone, Copy)]
pub(crate) enum Plan {
    /// This many runs.
    Runs(usize),
    /// Runs started until this long after the start.
    For(Duration),
}

pub(crate) type Res<T> = Result<T, String>;

#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) latencies: BTreeMap<&'static str, Vec<Duration>>,
    pub(crate) failures: Vec<String>,
    pub(crate) started: usize,
    pub(crate) completed: usize,
    pub(crate) run_ids: Vec<String>,
}

const USAGE: &str = "usage: serve_load [CLIENTS] [RUNS_PER_CLIENT | --seconds N] [--server-cores N] [--threads N] [--db postgres://URL] [--workers N]";

/// What the command line asks for.
struct Options {
    clients: usize,
    plan: Plan,
    server_cores: Option<usize>,
    threads: usize,
    /// A `postgres://` URL; `None`: a fresh SQLite file.
    postgres: Option<String>,
    workers: usize,
}

fn main() {
    let options = match options(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("serve_load: {e}; {USAGE}");
            std::process::exit(2);
        }
    };
    match main_inner(&options) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("serve_load: {e}");
            std::process::exit(2);
        }
    }
}

fn options(args: Vec<String>) -> Res<Options> {
    let mut positional = Vec::new();
    let (mut seconds, mut server_cores, mut threads, mut postgres, mut workers) =
        (None, None, 2, None, 1);
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--seconds" => seconds = Some(count(&value("--seconds")?)?),
            "--server-cores" => server_cores = Some(count(&value("--server-cores")?)?),
            "--threads" => threads = count(&value("--threads")?)?,
            "--workers" => workers = count(&value("--workers")?)?,
            "--db" => {
                let url = value("--db")?;
                if !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
                    return Err(format!("--db takes a postgres:// URL, not '{url}'"));
                }
                postgres = Some(url);
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option '{flag}'")),
            _ => positional.push(a),
        }
    }
    let mut positional = positional.into_iter();
    let clients = positional.next().map_or(Ok(200), |c| count(&c))?;
    let plan = match seconds {
        Some(n) => Plan::For(Duration::from_secs(n as u64)),
        None => Plan::Runs(positional.next().map_or(Ok(1), |r| count(&r))?),
    };
    if let Some(extra) = positional.next() {
        return Err(format!("unexpected '{extra}'"));
    }
    Ok(Options {
        clients,
        plan,
        server_cores,
        threads,
        postgres,
        workers,
    })
}

fn count(s: &str) -> Res<usize> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 && n <= 10_000 => Ok(n),
        _ => Err(format!("'{s}' is not a count from 1 to 10000")),
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

/// Where each server runs and where the client runs: `None` leaves a process unpinned.
struct Placement {
    servers: Vec<Option<Vec<usize>>>,
    client: Option<Vec<usize>>,
}

fn place(o: &Options) -> Res<Placement> {
    let Some(n) = o.server_cores else {
        return Ok(Placement {
            servers: vec![None; o.workers],
            client: None,
        });
    };
    let cpus = server::allowed_cpus();
    if n * o.workers > cpus.len() {
        return Err(format!(
            "{} server(s) of {n} cores need {} cores; this process may use {}",
            o.workers,
            n * o.workers,
            cpus.len()
        ));
    }
    let servers = (0..o.workers)
        .map(|i| Some(cpus[i * n..(i + 1) * n].to_vec()))
        .collect();
    let rest = cpus[n * o.workers..].to_vec();
    Ok(Placement {
        servers,
        client: (!rest.is_empty()).then_some(rest),
    })
}

fn cores(c: Option<&Vec<usize>>) -> String {
    c.map_or("any core".into(), |c| {
        let list: Vec<String> = c.iter().map(usize::to_string).collect();
        format!("cores {}", list.join(","))
    })
}

fn main_inner(o: &Options) -> Res<bool> {
    let bin = server_binary()?;
    let dir = setup()?;
    let sqlite = dir.join("load.db");
    let db = match &o.postgres {
        Some(url) => url.clone(),
        None => sqlite.display().to_string(),
    };
    let placement = place(o)?;
    if let Some(cpus) = &placement.client {
        server::pin_self(cpus)?;
    }
    let mut servers = Vec::new();
    for (n, cpus) in placement.servers.iter().enumerate() {
        servers.push(Server::start(&bin, &dir, &db, n, cpus.as_deref())?);
    }
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let idle_kb: u64 = servers
        .iter()
        .filter_map(|s| server::proc_kb(s.pid(), "VmRSS"))
        .sum();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.threads)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let calls_before = rt.block_on(check::global_stats(&bases[0]))?;
    let completed = Arc::new(AtomicUsize::new(0));
    let (stop_sampler, stop) = std::sync::mpsc::channel();
    let sampler = o
        .postgres
        .is_none()
        .then(|| sample_wal(sqlite.clone(), Arc::clone(&completed), stop));
    let cpu_before: Duration = servers.iter().map(|s| server::cpu_time(s.pid())).sum();
    let pg_before = o.postgres.as_ref().map(|_| server::postgres_cpu_time());
    let loaded = rt.block_on(load::load(bases.clone(), o.clients, o.plan, completed));
    let cpu = servers
        .iter()
        .map(|s| server::cpu_time(s.pid()))
        .sum::<Duration>()
        - cpu_before;
    let pg_cpu = pg_before.map(|b| server::postgres_cpu_time().saturating_sub(b));
    drop(stop_sampler);
    let (wal_max, wal_shrank) = sampler
        .map(|s| s.join().unwrap_or_default())
        .unwrap_or_default();
    let (tally, elapsed) = loaded?;
    let peak_kb = servers
        .iter()
        .filter_map(|s| server::proc_kb(s.pid(), "VmHWM"))
        .max();
    let mut failures = tally.failures.clone();
    match rt.block_on(check::global_stats(&bases[0])) {
        Ok(total) if total - calls_before == (tally.completed * EXPECTED_CALLS.len()) as u64 => {}
        Ok(total) => failures.push(format!(
            "GET /v1/stats counts {} calls more; {} completed runs make {}",
            total - calls_before,
            tally.completed,
            tally.completed * EXPECTED_CALLS.len()
        )),
        Err(e) => failures.push(e),
    }
    let stopping = Instant::now();
    for s in &mut servers {
        if let Err(e) = s.stop() {
            failures.push(e);
        }
    }
    let stopped = stopping.elapsed();
    let total = match o.plan {
        Plan::Runs(runs) => o.clients * runs,
        Plan::For(_) => tally.started,
    };
    match &o.postgres {
        Some(url) => {
            if tally.completed != total {
                failures.push(format!("{} of {total} runs completed", tally.completed));
            }
            failures.extend(rt.block_on(check::postgres(url, &tally.run_ids)));
        }
        None => failures.extend(check::sqlite(&sqlite, total)),
    }
    for s in &servers {
        failures.extend(check::log(&s.log));
    }
    drop(rt);

    let load = match o.plan {
        Plan::Runs(runs) => format!("{} clients x {runs} runs", o.clients),
        Plan::For(d) => format!("{} clients for {} s", o.clients, d.as_secs()),
    };
    let store = if o.postgres.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    println!(
        "toolgate serve under load: {load} = {total} runs, each start -> approve -> submit -> get -> calls"
    );
    for (n, cpus) in placement.servers.iter().enumerate() {
        println!("server {n}: {} ({store})", cores(cpus.as_ref()));
    }
    println!(
        "client: {} with {} runtime threads",
        cores(placement.client.as_ref()),
        o.threads
    );
    let runs = tally.completed.max(1) as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let kinds = percentiles(&tally.latencies);
    println!();
    println!(
        "| server cores | workers | clients | runs/s | server CPU per run | database CPU per run | p50 start | p99 start | peak RSS | largest WAL |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let start = kinds.get("start").copied().unwrap_or_default();
    println!(
        "| {} | {} | {} | {:.1} | {:.2} ms | {} | {:.1} ms | {:.1} ms | {:.1} MiB | {} |",
        o.server_cores.map_or("any".into(), |n| n.to_string()),
        o.workers,
        o.clients,
        tally.completed as f64 / elapsed.as_secs_f64(),
        ms(cpu) / runs,
        pg_cpu.map_or("-".into(), |c| format!("{:.2} ms", ms(c) / runs)),
        ms(start.0),
        ms(start.1),
        peak_kb.unwrap_or(0) as f64 / 1024.0,
        if o.postgres.is_some() {
            "-".into()
        } else {
            format!("{:.1} MiB", mib(wal_max))
        },
    );
    println!();
    println!(
        "completed {}/{total} runs in {:.2} s ({:.1} requests/s); servers used {:.2} s of CPU",
        tally.completed,
        elapsed.as_secs_f64(),
        (tally.completed * KINDS.len()) as f64 / elapsed.as_secs_f64(),
        cpu.as_secs_f64(),
    );
    println!();
    println!(
        "{:<9} {:>6} {:>9} {:>9} {:>9}",
        "request", "count", "p50 ms", "p99 ms", "max ms"
    );
    for kind in KINDS {
        let (p50, p99, max, n) = kinds.get(kind).copied().unwrap_or_default();
        println!(
            "{kind:<9} {n:>6} {:>9.1} {:>9.1} {:>9.1}",
            ms(p50),
            ms(p99),
            ms(max)
        );
    }
    println!();
    println!(
        "server RSS: {:.1} MiB idle, {:.1} MiB peak (VmHWM, the largest server); stopped by SIGTERM in {:.2} s",
        idle_kb as f64 / 1024.0,
        peak_kb.unwrap_or(0) as f64 / 1024.0,
        stopped.as_secs_f64(),
    );
    if o.postgres.is_none() {
        println!(
            "wal_bytes max={wal_max} ({:.1} MiB) under load, seen shrinking {wal_shrank} times; after SIGTERM: WAL {:.1} MiB, database {:.1} MiB",
            mib(wal_max),
            mib(file_len(&dir.join("load.db-wal"))),
            mib(file_len(&sqlite)),
        );
    }
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
        println!("(the servers' folder is kept: {})", dir.display());
        Ok(false)
    }
}

/// Per request kind: p50, p99, max and how many.
fn percentiles(
    latencies: &BTreeMap<&'static str, Vec<Duration>>,
) -> BTreeMap<&'static str, (Duration, Duration, Duration, usize)> {
    latencies
        .iter()
        .map(|(kind, l)| {
            let mut l = l.clone();
            l.sort();
            let max = l.last().copied().unwrap_or_default();
            (*kind, (rank(&l, 0.50), rank(&l, 0.99), max, l.len()))
        })
        .collect()
}

/// Nearest-rank percentile of sorted durations.
fn rank(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

pub(crate) fn truncate(s: &str) -> String {
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
