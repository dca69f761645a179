//! The worker soak: N `toolgate serve` workers, each in a folder of its own, on one
//! PostgreSQL database; many clients each take runs through start -> pause (a CONFIRM
//! call that changes the world) -> approve (on another worker) -> complete, while one
//! worker is killed with SIGKILL and another stopped with SIGTERM, each started again.
//! Then it checks that every run completed, that every approved call's side effect
//! happened exactly once (the lines the tool wrote, not only the records), that no
//! record was lost, and that no 5xx came from a worker that was not being stopped.
//!
//! With `--measure` it instead times the same load without faults for 1 SQLite worker
//! and 1, 2 and 3 PostgreSQL workers in one run (runs/s, p50/p99 per step), and counts
//! the statements and commits PostgreSQL saw per step (the cost model).
//!
//! ```text
//! cargo build --release --bin toolgate --example workers_soak
//! target/release/examples/workers_soak [--clients 200] [--runs 2] [--workers 3]
//! target/release/examples/workers_soak --measure [--clients 50] [--runs 4]
//! ```
//!
//! PostgreSQL: `TOOLGATE_TEST_POSTGRES_URL` when set, else a throwaway server started by
//! tests/postgres/server.sh (fsync on). Exits 1 when an invariant broke, 2 when it could
//! not run. Everything stays in a temporary folder and on 127.0.0.1.
#![allow(clippy::too_many_lines, reason = "an example program reads best whole")]

mod check;
mod client;
mod workers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use clap::Parser;

use client::{Pool, STEPS, Seen};
use workers::Worker;

pub type Res<T> = Result<T, String>;

#[derive(Parser, Debug)]
#[command(
    about = "many toolgate serve workers on one PostgreSQL, with kills: nothing lost, nothing done twice"
)]
struct Args {
    /// Concurrent clients.
    #[arg(long, default_value_t = 200)]
    clients: usize,
    /// Runs each client takes through, one after the other.
    #[arg(long, default_value_t = 2)]
    runs: usize,
    /// Workers (the soak kills the first and stops the second).
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Time 1 SQLite worker and 1, 2, 3 PostgreSQL workers without faults instead.
    #[arg(long)]
    measure: bool,
    /// Keep the temporary folder.
    #[arg(long)]
    keep: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("workers_soak: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = if args.measure {
        rt.block_on(measure(&args))
    } else {
        rt.block_on(soak(&args))
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("workers_soak: {e}");
            ExitCode::from(2)
        }
    }
}

/// The repository's root (for tests/postgres/server.sh).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh temporary folder for this run.
fn scratch(what: &str) -> Res<PathBuf> {
    let dir = std::env::temp_dir().join(format!("toolgate-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// Starts `n` workers on `db`, each in `dir/wK`.
fn start_workers(bin: &Path, db: &str, dir: &Path, n: usize) -> Res<(Vec<Worker>, Vec<PathBuf>)> {
    let mut started = Vec::new();
    let mut folders = Vec::new();
    for k in 1..=n {
        let folder = dir.join(format!("w{k}"));
        workers::folder(&folder)?;
        started.push(Worker::start(bin, db, &folder, format!("w{k}#1"))?);
        folders.push(folder);
    }
    Ok((started, folders))
}

/// The clients' load: `clients` tasks, each `runs` runs; the ids of the completed runs,
/// what was seen, the failures and how long it took.
async fn load(
    pool: &Arc<Pool>,
    clients: usize,
    runs: usize,
    completed: &Arc<AtomicUsize>,
) -> Res<(Vec<String>, Seen, Vec<String>, Duration)> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(clients)
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let out = Arc::new(Mutex::new((Vec::new(), Seen::default(), Vec::new())));
    let began = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for c in 0..clients {
        let (http, pool, out, completed) = (
            http.clone(),
            Arc::clone(pool),
            Arc::clone(&out),
            Arc::clone(completed),
        );
        set.spawn(async move {
            for r in 0..runs {
                let mut seen = Seen::default();
                let result = client::one_run(&http, &pool, c * runs + r, &mut seen).await;
                let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
                o.1.timings.extend(seen.timings);
                o.1.server_errors.extend(seen.server_errors);
                o.1.dropped += seen.dropped;
                match result {
                    Ok(id) => {
                        o.0.push(id);
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => o.2.push(format!("client {c}: {e}")),
                }
            }
        });
    }
    while set.join_next().await.is_some() {}
    let elapsed = began.elapsed();
    let (ids, seen, failures) = std::mem::take(&mut *out.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((ids, seen, failures, elapsed))
}

/// Nearest-rank percentile, in milliseconds.
fn pct(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

/// p50 and p99 of each step, as one line.
fn step_line(seen: &Seen) -> String {
    STEPS
        .iter()
        .map(|step| {
            let mut l: Vec<Duration> = seen
                .timings
                .iter()
                .filter(|(s, _)| s == step)
                .map(|(_, d)| *d)
                .collect();
            l.sort();
            format!("{step} {:.1}/{:.1}", pct(&l, 0.5), pct(&l, 0.99))
        })
        .collect::<Vec<_>>()
        .join("  ")
}

async fn soak(args: &Args) -> Res<bool> {
    if args.workers < 3 {
        return Err("--workers must be at least 3 (one is killed, one stopped)".into());
    }
    let bin = workers::toolgate_binary()?;
    let dir = scratch("workers-soak")?;
    let server = workers::postgres(&root(), false)?;
    let db = check::create_database(&server, "soak").await?;
    let (started, folders) = start_workers(&bin, &db, &dir, args.workers)?;
    let pool = Arc::new(Pool {
        slots: started
            .iter()
            .map(|w| RwLock::new(Some((w.name.clone(), w.base.clone()))))
            .collect(),
        signalled: Mutex::new(Vec::new()),
    });
    let workers: Arc<Mutex<Vec<Worker>>> = Arc::new(Mutex::new(started));
    let total = args.clients * args.runs;
    let completed = Arc::new(AtomicUsize::new(0));
    println!(
        "workers soak: {} workers on PostgreSQL, {} clients x {} runs = {total} runs (start -> pause -> approve -> complete)",
        args.workers, args.clients, args.runs
    );

    // The faults: SIGKILL worker 1 once a fifth of the runs completed, SIGTERM worker 2
    // at half; each started again at once, in its own folder, on a new port.
    let faults = {
        let (pool, workers, completed, bin, db, folders) = (
            Arc::clone(&pool),
            Arc::clone(&workers),
            Arc::clone(&completed),
            bin.clone(),
            db.clone(),
            folders.clone(),
        );
        std::thread::spawn(move || -> Res<Vec<String>> {
            let mut log = Vec::new();
            for (slot, at, hard) in [(0usize, total / 5, true), (1usize, total / 2, false)] {
                while completed.load(Ordering::Relaxed) < at {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let name = workers.lock().unwrap_or_else(|p| p.into_inner())[slot]
                    .name
                    .clone();
                pool.signalled
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(name.clone());
                *pool.slots[slot].write().unwrap_or_else(|p| p.into_inner()) = None;
                let t = Instant::now();
                let how = {
                    let mut ws = workers.lock().unwrap_or_else(|p| p.into_inner());
                    if hard {
                        ws[slot].kill();
                        "SIGKILL".to_string()
                    } else {
                        let status = ws[slot].terminate()?;
                        format!(
                            "SIGTERM (exited {status} after {:.2} s)",
                            t.elapsed().as_secs_f64()
                        )
                    }
                };
                let again = format!("w{}#2", slot + 1);
                let worker = Worker::start(&bin, &db, &folders[slot], again.clone())?;
                *pool.slots[slot].write().unwrap_or_else(|p| p.into_inner()) =
                    Some((again.clone(), worker.base.clone()));
                workers.lock().unwrap_or_else(|p| p.into_inner())[slot] = worker;
                log.push(format!(
                    "{name}: {how} at {} completed runs; {again} up {:.2} s later",
                    at,
                    t.elapsed().as_secs_f64()
                ));
            }
            Ok(log)
        })
    };

    let (ids, seen, mut failures, elapsed) =
        load(&pool, args.clients, args.runs, &completed).await?;
    let faults = faults
        .join()
        .map_err(|_| "the fault thread stopped".to_string())??;
    for w in workers.lock().unwrap_or_else(|p| p.into_inner()).iter_mut() {
        match w.terminate() {
            Ok(s) if s.success() => {}
            Ok(s) => failures.push(format!(
                "worker {} exited {s} on SIGTERM at the end",
                w.name
            )),
            Err(e) => failures.push(e),
        }
    }
    let recorded = check::read(&db).await?;
    let effects = check::effects(&folders);
    let mut interrupted = Vec::new();
    failures.extend(check::judge(&ids, &recorded, &effects, &mut interrupted));
    let signalled = pool
        .signalled
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let (expected_5xx, stray_5xx): (Vec<_>, Vec<_>) = seen
        .server_errors
        .iter()
        .partition(|(w, _, _)| signalled.contains(w));
    for (w, status, body) in &stray_5xx {
        failures.push(format!(
            "HTTP {status} from {w}, which was not being stopped: {body}"
        ));
    }

    for f in &faults {
        println!("fault: {f}");
    }
    println!(
        "completed {}/{total} runs in {:.1} s ({:.1} runs/s); p50/p99 ms: {}",
        ids.len(),
        elapsed.as_secs_f64(),
        ids.len() as f64 / elapsed.as_secs_f64(),
        step_line(&seen)
    );
    println!(
        "side effects: {} lines for {} runs; calls cut by a kill (recorded, not succeeded, at most one effect): {}{}",
        effects.values().sum::<usize>(),
        recorded.statuses.len(),
        interrupted.len(),
        if interrupted.is_empty() {
            String::new()
        } else {
            format!(" ({})", interrupted.join(", "))
        }
    );
    println!(
        "requests whose connection failed: {}; 5xx from the stopped workers: {}; 5xx from others: {}",
        seen.dropped,
        expected_5xx.len(),
        stray_5xx.len()
    );
    finish(&dir, failures, args.keep)
}

/// Prints the verdict; removes the folder when everything held (unless kept).
fn finish(dir: &Path, failures: Vec<String>, keep: bool) -> Res<bool> {
    if failures.is_empty() {
        println!("checks: ok");
        if !keep {
            let _ = std::fs::remove_dir_all(dir);
        }
        return Ok(true);
    }
    println!("checks: {} FAILED", failures.len());
    for f in failures.iter().take(20) {
        println!("  - {f}");
    }
    println!("(kept: {})", dir.display());
    Ok(false)
}

async fn measure(args: &Args) -> Res<bool> {
    let bin = workers::toolgate_binary()?;
    let dir = scratch("workers-measure")?;
    let server = workers::postgres(&root(), true)?;
    let mut failures = Vec::new();
    println!(
        "{:<16} {:>7} {:>9}  p50/p99 ms per step",
        "store", "runs", "runs/s"
    );
    let configs: [(&str, usize); 4] = [
        ("sqlite", 1),
        ("postgres", 1),
        ("postgres", 2),
        ("postgres", 3),
    ];
    for (i, (kind, n)) in configs.into_iter().enumerate() {
        let db = match kind {
            "sqlite" => dir.join(format!("m{i}.db")).display().to_string(),
            _ => check::create_database(&server, &format!("measure_{i}")).await?,
        };
        let (started, _) = start_workers(&bin, &db, &dir.join(format!("m{i}")), n)?;
        let pool = Arc::new(Pool {
            slots: started
                .iter()
                .map(|w| RwLock::new(Some((w.name.clone(), w.base.clone()))))
                .collect(),
            signalled: Mutex::new(Vec::new()),
        });
        let completed = Arc::new(AtomicUsize::new(0));
        let (ids, seen, f, elapsed) = load(&pool, args.clients, args.runs, &completed).await?;
        failures.extend(f);
        println!(
            "{:<16} {:>7} {:>9.1}  {}",
            format!("{kind} x{n}"),
            ids.len(),
            ids.len() as f64 / elapsed.as_secs_f64(),
            step_line(&seen)
        );
        drop(started);
    }

    // The cost model: one client, one worker, step by step.
    let name = "measure_cost";
    let db = check::create_database(&server, name).await?;
    let (started, _) = start_workers(&bin, &db, &dir.join("cost"), 1)?;
    let base = started[0].base.clone();
    let http = reqwest::Client::new();
    let runs = 20;
    let mut per: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for n in 0..runs {
        let mut step = |label: &'static str, before: (i64, i64), after: (i64, i64)| {
            let e = per.entry(label).or_default();
            e.0 += after.0 - before.0;
            e.1 += after.1 - before.1;
        };
        let c0 = check::counters(&server, name).await?;
        let run: serde_json::Value = http
            .post(format!("{base}/v1/runs"))
            .json(&serde_json::json!({"agent": "soak", "input": format!("deploy {n}")}))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let c1 = check::counters(&server, name).await?;
        step("start (to the pause)", c0, c1);
        let id = run["id"].as_str().ok_or("no run id")?.to_string();
        let done: serde_json::Value = http
            .post(format!("{base}/v1/runs/{id}/approve"))
            .json(&serde_json::json!({"call_id": "call_deploy"}))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        if done["status"] != "completed" {
            failures.push(format!("cost model: run {id} is {}", done["status"]));
        }
        let c2 = check::counters(&server, name).await?;
        step("approve (to the end)", c1, c2);
        let _ = http.get(format!("{base}/v1/runs/{id}")).send().await;
        let c3 = check::counters(&server, name).await?;
        step("get the run", c2, c3);
    }
    drop(started);
    println!();
    println!(
        "cost model on PostgreSQL (1 worker, {runs} runs one after the other; per run step, the statements the worker's database executed):"
    );
    for (label, (statements, commits)) in per {
        println!(
            "  {label:<22} {:>6.1} statements {:>6.1} explicit transactions (COMMIT)",
            statements as f64 / runs as f64,
            commits as f64 / runs as f64
        );
    }
    finish(&dir, failures, args.keep)
}
