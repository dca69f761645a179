//! The fault-injection soak: runs scripted agents through the release `toolgate`
//! binary, kills the process driving each run (`run`, `resume`, `approve`, `submit`,
//! or `serve` mid-request) with SIGKILL at random points, recovers every run from
//! fresh processes until it completes, and checks after each run that nothing was lost
//! or done twice. Not part of `cargo test`:
//!
//! ```text
//! cargo build --release
//! cargo run --release --example soak -- [--runs N] [--seed S] [--mode run|serve|both]
//! ```
//!
//! It exits 1 when any invariant broke (each one listed with its run), 2 when it could
//! not start. Everything stays in a temporary folder and on 127.0.0.1.
#![allow(clippy::too_many_lines, reason = "an example program reads best whole")]
// A harness, not library code: a broken pipe to a child it started is a failed soak.
#![allow(clippy::expect_used)]

mod check;
mod procs;
mod world;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use clap::{Parser, ValueEnum};
use serde_json::{Value, json};

use check::Tally;
use procs::{Http, Serve, Toolgate};
use world::World;

#[derive(Parser, Debug)]
#[command(
    about = "kill -9 toolgate run/serve at random points; check that nothing is lost or done twice"
)]
struct Args {
    /// Runs per mode.
    #[arg(long, default_value_t = 200)]
    runs: usize,
    /// The random seed (agents, decisions, kill points); the time when absent.
    #[arg(long)]
    seed: Option<u64>,
    /// Which processes to kill: `run` (the CLI), `serve` (the HTTP server), or both.
    #[arg(long, value_enum, default_value_t = ModeArg::Both)]
    mode: ModeArg,
    /// A kill comes 0 to this many milliseconds after the process starts (or the
    /// request is sent).
    #[arg(long, default_value_t = 300)]
    max_kill_ms: u64,
    /// Stop starting runs after this many seconds.
    #[arg(long)]
    max_secs: Option<u64>,
    /// Keep the temporary folder (it is kept anyway when an invariant broke).
    #[arg(long)]
    keep: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Run,
    Serve,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    Run,
    Serve,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Run => "run",
            Mode::Serve => "serve",
        }
    }
}

/// The chance that the process starting a run is killed, and that a recovering one is.
const KILL_FIRST: f64 = 0.85;
const KILL_RECOVERY: f64 = 0.3;
/// At most this many kills per run, then it is left to finish.
const MAX_KILLS: u32 = 5;
/// At most this many recovery steps per run before it counts as not completed.
const MAX_STEPS: u32 = 40;
/// In serve mode, the chance that a recovery step uses the CLI instead of HTTP.
const CLI_IN_SERVE: f64 = 0.2;

/// splitmix64: small, seeded, good enough for choosing.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

#[derive(Debug, Default)]
struct ModeStats {
    runs: u64,
    completed: u64,
    kills: u64,
    /// A kill was planned, but the process (or request) ended first.
    missed: u64,
    /// Processes or requests that continued a run after a kill or a pause.
    recoveries: u64,
    max_steps: u32,
    elapsed: Duration,
}

/// One run to drive: its conversation (named by the soak, so that a run killed before
/// it printed anything is still found) and workspace.
struct Job {
    mode: Mode,
    conversation: String,
    workspace: PathBuf,
    agent: &'static str,
    kills_left: u32,
}

/// What to do next with a run, read from its run object.
enum Next {
    Done,
    Start,
    Approve(Option<String>),
    Deny(String),
    Submit(String),
    Resume,
    GiveUp(String),
}

struct Soak {
    args: Args,
    world: World,
    run_tg: Toolgate,
    serve_tg: Toolgate,
    rng: Rng,
    http: reqwest::Client,
    stats: BTreeMap<Mode, ModeStats>,
    /// Kills by mode, process (or request) and where they landed.
    kills: BTreeMap<(Mode, String, String), u64>,
    anomalies: Vec<String>,
    anomaly_count: u64,
    tally: Tally,
    /// Every run checked, for the final sweep: run id and workspace.
    finished: Vec<(String, PathBuf)>,
    /// Milliseconds taken by processes (or requests) left alone, and how many, by kind.
    lifetimes: BTreeMap<(Mode, String), (u64, u64)>,
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

impl Soak {
    fn tg(&self, mode: Mode) -> &Toolgate {
        match mode {
            Mode::Run => &self.run_tg,
            Mode::Serve => &self.serve_tg,
        }
    }

    fn stats(&mut self, mode: Mode) -> &mut ModeStats {
        self.stats.entry(mode).or_default()
    }

    /// When to kill the next process (or request) `what`, if at all: 0 to
    /// `--max-kill-ms` after it starts, and within about how long such a process lives
    /// when left alone, so that kills land all along its life rather than after it.
    fn plan(&mut self, job: &mut Job, what: &str, first: bool) -> Option<Duration> {
        let p = if first { KILL_FIRST } else { KILL_RECOVERY };
        if job.kills_left == 0 || !self.rng.chance(p) {
            return None;
        }
        let mut max = self.args.max_kill_ms;
        if let Some(&(total, n)) = self.lifetimes.get(&(job.mode, what.to_string()))
            && n >= 3
        {
            max = max.min(total * 5 / (4 * n)).max(5);
        }
        Some(Duration::from_millis(self.rng.below(max + 1)))
    }

    /// Notes how long a process (or request) left alone took.
    fn lived(&mut self, mode: Mode, what: &str, took: Duration) {
        let e = self.lifetimes.entry((mode, what.to_string())).or_default();
        e.0 += took.as_millis() as u64;
        e.1 += 1;
    }

    fn anomaly(&mut self, job: &Job, what: String) {
        self.anomaly_count += 1;
        if self.anomalies.len() < 20 {
            self.anomalies.push(format!(
                "[{}] {}: {what}",
                job.mode.name(),
                job.conversation
            ));
        }
    }

    /// Counts a kill (or a missed one) and where it landed.
    fn killed(&mut self, job: &mut Job, process: &str, planned: bool, killed: bool) {
        if killed {
            job.kills_left = job.kills_left.saturating_sub(1);
            self.stats(job.mode).kills += 1;
            let point = check::kill_point(&self.tg(job.mode).db, &job.conversation);
            *self
                .kills
                .entry((job.mode, process.to_string(), point))
                .or_default() += 1;
        } else if planned {
            self.stats(job.mode).missed += 1;
        }
    }

    /// The run object of the job's conversation, read with `toolgate runs --json`.
    async fn read_cli(&mut self, job: &Job) -> Option<Value> {
        let tg = self.tg(job.mode).clone();
        if !tg.db.exists() {
            return None;
        }
        let args = os(&[
            "runs",
            "--json",
            "--limit",
            "1",
            "--conversation",
            &job.conversation,
        ]);
        match tg.cli(&args, None).await {
            Ok(e) if e.code == Some(0) => serde_json::from_str::<Value>(&e.stdout)
                .ok()
                .and_then(|v| v.as_array().and_then(|a| a.first().cloned())),
            Ok(e) => {
                self.anomaly(
                    job,
                    format!("runs --json exited {:?}: {}", e.code, e.stderr.trim()),
                );
                None
            }
            Err(e) => {
                self.anomaly(job, format!("runs --json: {e}"));
                None
            }
        }
    }

    fn next(&mut self, run: Option<&Value>) -> Next {
        let Some(run) = run else {
            return Next::Start;
        };
        match run["status"].as_str().unwrap_or("") {
            "completed" => Next::Done,
            "requires_action" => {
                let items = run["required_action"]["items"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let Some(item) = items.first() else {
                    // Every item decided, the run not continued yet.
                    return Next::Resume;
                };
                let call = item["call_id"].as_str().unwrap_or_default().to_string();
                if item["kind"] == "submit_tool_output" {
                    Next::Submit(call)
                } else if self.rng.chance(0.2) {
                    Next::Deny(call)
                } else if self.rng.chance(0.3) {
                    Next::Approve(None)
                } else {
                    Next::Approve(Some(call))
                }
            }
            "in_progress" | "failed" => Next::Resume,
            other => Next::GiveUp(format!("the run is {other}: {}", run["last_error"])),
        }
    }

    fn start_args(&self, job: &Job) -> Vec<OsString> {
        let mut args = os(&[
            "run",
            "--json",
            "--conversation",
            &job.conversation,
            "--agent",
        ]);
        args.push(self.world.agent_file(job.agent).into());
        args.push("--tools".into());
        args.push(self.world.tools.clone().into());
        args.push("--workspace".into());
        args.push(job.workspace.clone().into());
        args.push(format!("soak {}", job.conversation).into());
        args
    }

    /// One step from the command line: the command, and its arguments.
    fn cli_step(
        &self,
        job: &Job,
        run: Option<&Value>,
        next: &Next,
    ) -> (&'static str, Vec<OsString>) {
        let id = run.and_then(|r| r["id"].as_str()).unwrap_or_default();
        match next {
            Next::Start => ("run", self.start_args(job)),
            Next::Approve(Some(call)) => {
                ("approve", os(&["approve", id, "--call", call, "--json"]))
            }
            Next::Approve(None) => ("approve", os(&["approve", id, "--json"])),
            Next::Deny(call) => (
                "deny",
                os(&["deny", id, "--call", call, "--reason", "not now", "--json"]),
            ),
            Next::Submit(call) => (
                "submit",
                os(&["submit", id, "--call", call, "--output", "blue", "--json"]),
            ),
            Next::Resume => ("resume", os(&["resume", id, "--json"])),
            Next::Done | Next::GiveUp(_) => ("none", Vec::new()),
        }
    }

    /// Runs one CLI process for the job, maybe killing it.
    async fn cli(&mut self, job: &mut Job, process: &str, args: Vec<OsString>, first: bool) {
        let label = match job.mode {
            Mode::Run => process.to_string(),
            Mode::Serve => format!("{process} (cli)"),
        };
        let kill = self.plan(job, &label, first);
        let tg = self.tg(job.mode).clone();
        let began = Instant::now();
        match tg.cli(&args, kill).await {
            Ok(ended) => {
                if !ended.killed {
                    self.lived(job.mode, &label, began.elapsed());
                }
                self.killed(job, &label, kill.is_some(), ended.killed);
                // 0 completed, 3 paused; anything else from a process left alone is odd.
                if !ended.killed && !matches!(ended.code, Some(0 | 3)) {
                    let line = ended.stderr.lines().last().unwrap_or("").to_string();
                    self.anomaly(job, format!("{process} exited {:?}: {line}", ended.code));
                }
            }
            Err(e) => self.anomaly(job, format!("{process}: {e}")),
        }
    }

    /// Drives a run in `run` mode: every step a fresh `toolgate` process.
    async fn drive_cli(&mut self, job: &mut Job) -> u32 {
        let args = self.start_args(job);
        self.cli(job, "run", args, true).await;
        let mut steps = 0;
        while steps < MAX_STEPS {
            let run = self.read_cli(job).await;
            let next = self.next(run.as_ref());
            match next {
                Next::Done => break,
                Next::GiveUp(why) => {
                    self.anomaly(job, why);
                    break;
                }
                _ => {}
            }
            steps += 1;
            self.stats(job.mode).recoveries += 1;
            let (process, args) = self.cli_step(job, run.as_ref(), &next);
            self.cli(job, process, args, false).await;
        }
        steps
    }

    async fn start_serve(&mut self, job: &Job) -> Option<Serve> {
        let tg = self.serve_tg.clone();
        match tg
            .serve(&self.world.agents, &self.world.tools, &job.workspace)
            .await
        {
            Ok(s) => Some(s),
            Err(e) => {
                self.anomaly(job, format!("{e}"));
                None
            }
        }
    }

    /// One HTTP request for the job, maybe killing the server mid-request (then it is
    /// gone from `serve`).
    async fn http(
        &mut self,
        job: &mut Job,
        serve: &mut Option<Serve>,
        what: &str,
        path: String,
        body: Value,
        first: bool,
    ) {
        let Some(s) = serve.as_mut() else { return };
        let label = format!("serve: {what}");
        let kill = self.plan(job, &label, first);
        let began = Instant::now();
        let answer = s.request(&self.http, Some(body), &path, kill).await;
        let killed = matches!(answer, Http::Killed);
        if !killed {
            self.lived(job.mode, &label, began.elapsed());
        }
        self.killed(job, &label, kill.is_some(), killed);
        match answer {
            Http::Answer(200, _) => {}
            Http::Answer(status, body) => {
                self.anomaly(job, format!("{what}: HTTP {status}: {body}"));
            }
            Http::Killed => {
                if let Some(s) = serve.take() {
                    s.kill().await;
                }
            }
            Http::Failed(e) => {
                let stderr = match serve.take() {
                    Some(s) => s.kill().await,
                    None => String::new(),
                };
                let last = stderr.lines().last().unwrap_or("").to_string();
                self.anomaly(job, format!("{what}: no answer: {e}; server: {last}"));
            }
        }
    }

    /// The run object over HTTP.
    async fn read_http(
        &mut self,
        job: &Job,
        serve: &mut Option<Serve>,
    ) -> Result<Option<Value>, ()> {
        let Some(s) = serve.as_mut() else {
            return Err(());
        };
        let path = format!("/v1/runs?limit=1&conversation_id={}", job.conversation);
        match s.request(&self.http, None, &path, None).await {
            Http::Answer(200, Value::Array(runs)) => Ok(runs.into_iter().next()),
            other => {
                self.anomaly(job, format!("GET /v1/runs: {other:?}"));
                Err(())
            }
        }
    }

    /// Drives a run in `serve` mode: requests to a server that is killed and replaced.
    async fn drive_http(&mut self, job: &mut Job) -> u32 {
        let mut serve = self.start_serve(job).await;
        let body = json!({"agent": job.agent, "input": format!("soak {}", job.conversation),
                          "conversation_id": job.conversation});
        self.http(
            job,
            &mut serve,
            "POST /v1/runs",
            "/v1/runs".into(),
            body,
            true,
        )
        .await;
        let mut steps = 0;
        while steps < MAX_STEPS {
            if serve.is_none() {
                serve = self.start_serve(job).await;
                if serve.is_none() {
                    steps += 1;
                    continue;
                }
            }
            let by_cli = self.rng.chance(CLI_IN_SERVE);
            let run = if by_cli {
                self.read_cli(job).await
            } else {
                match self.read_http(job, &mut serve).await {
                    Ok(run) => run,
                    Err(()) => {
                        if let Some(s) = serve.take() {
                            s.kill().await;
                        }
                        steps += 1;
                        continue;
                    }
                }
            };
            let next = self.next(run.as_ref());
            match next {
                Next::Done => break,
                Next::GiveUp(why) => {
                    self.anomaly(job, why);
                    break;
                }
                _ => {}
            }
            steps += 1;
            self.stats(job.mode).recoveries += 1;
            if by_cli {
                let (process, args) = self.cli_step(job, run.as_ref(), &next);
                self.cli(job, process, args, false).await;
                continue;
            }
            let id = run
                .as_ref()
                .and_then(|r| r["id"].as_str())
                .unwrap_or_default()
                .to_string();
            let (what, path, body) = match &next {
                Next::Start => (
                    "POST /v1/runs",
                    "/v1/runs".to_string(),
                    json!({"agent": job.agent, "input": format!("soak {}", job.conversation),
                           "conversation_id": job.conversation}),
                ),
                Next::Approve(call) => (
                    "approve",
                    format!("/v1/runs/{id}/approve"),
                    match call {
                        Some(c) => json!({"call_id": c}),
                        None => json!({}),
                    },
                ),
                Next::Deny(c) => (
                    "deny",
                    format!("/v1/runs/{id}/deny"),
                    json!({"call_id": c, "reason": "not now"}),
                ),
                Next::Submit(c) => (
                    "submit",
                    format!("/v1/runs/{id}/submit"),
                    json!({"call_id": c, "output": "blue"}),
                ),
                Next::Resume => ("resume", format!("/v1/runs/{id}/resume"), json!({})),
                Next::Done | Next::GiveUp(_) => unreachable!(),
            };
            self.http(job, &mut serve, what, path, body, false).await;
        }
        if let Some(s) = serve.take() {
            s.kill().await;
        }
        steps
    }

    async fn one(&mut self, mode: Mode, n: usize, root: &Path) {
        let conversation = format!("conv_soak_{}_{n:04}", mode.name());
        let workspace = root.join("ws").join(&conversation);
        if let Err(e) = std::fs::create_dir_all(&workspace) {
            eprintln!("soak: cannot make {}: {e}", workspace.display());
            return;
        }
        let agent = self.world.names[self.rng.below(self.world.names.len() as u64) as usize];
        let mut job = Job {
            mode,
            conversation,
            workspace,
            agent,
            kills_left: MAX_KILLS,
        };
        let began = Instant::now();
        let steps = match mode {
            Mode::Run => self.drive_cli(&mut job).await,
            Mode::Serve => self.drive_http(&mut job).await,
        };
        // Every process of this run is gone (killed and reaped, or exited): check.
        let db = self.tg(mode).db.clone();
        let native = self.world.native(agent);
        let result = check::open(&db).and_then(|conn| {
            let run = check::run_of(&conn, &job.conversation)?;
            check::check_run(
                &mut self.tally,
                &conn,
                &job.conversation,
                &job.workspace,
                native,
            )?;
            Ok(run)
        });
        let stats = self.stats(mode);
        stats.runs += 1;
        stats.max_steps = stats.max_steps.max(steps);
        stats.elapsed += began.elapsed();
        match result {
            Ok(Some(run)) => {
                if run.status == "completed" {
                    self.stats(mode).completed += 1;
                }
                self.finished.push((run.id, job.workspace));
            }
            Ok(None) => {}
            Err(e) => self.anomaly(&job, format!("cannot read the database: {e}")),
        }
    }

    fn summary(&self, seed: u64, elapsed: Duration) {
        println!();
        println!(
            "toolgate soak · seed {seed} · kills at 0-{} ms · {:.1} s",
            self.args.max_kill_ms,
            elapsed.as_secs_f64()
        );
        println!();
        println!(
            "{:<6} {:>6} {:>10} {:>6} {:>7} {:>11} {:>10} {:>9}",
            "mode", "runs", "completed", "kills", "missed", "recoveries", "max steps", "elapsed"
        );
        for (mode, s) in &self.stats {
            println!(
                "{:<6} {:>6} {:>10} {:>6} {:>7} {:>11} {:>10} {:>8.1}s",
                mode.name(),
                s.runs,
                s.completed,
                s.kills,
                s.missed,
                s.recoveries,
                s.max_steps,
                s.elapsed.as_secs_f64()
            );
        }
        println!();
        println!(
            "{:<6} {:<26} {:<40} {:>6}",
            "mode", "killed", "where it landed", "kills"
        );
        for ((mode, process, point), n) in &self.kills {
            println!("{:<6} {:<26} {:<40} {:>6}", mode.name(), process, point, n);
        }
        println!();
        println!("{:<50} {:>8} {:>11}", "invariant", "checks", "violations");
        for (name, n) in &self.tally.checks {
            let broke = self
                .tally
                .violations
                .iter()
                .filter(|(v, _)| v == name)
                .count();
            println!("{name:<50} {n:>8} {broke:>11}");
        }
        println!(
            "{:<50} {:>8} {:>11}",
            "total",
            self.tally.total_checks(),
            self.tally.violations.len()
        );
        println!();
        println!(
            "launching calls recorded interrupted (outcome unknown, allowed): {} ({} of them had launched)",
            self.tally.interrupted, self.tally.interrupted_launched
        );
        println!(
            "read-only calls run again after a kill (allowed): {}",
            self.tally.read_reruns
        );
        println!(
            "anomalies (a process left alone that exited oddly, an HTTP error): {}",
            self.anomaly_count
        );
        for a in &self.anomalies {
            println!("  {a}");
        }
        println!();
        println!("violations: {}", self.tally.violations.len());
        for (name, v) in &self.tally.violations {
            println!("  {} · {name}: {}", v.run_id, v.what);
        }
    }
}

/// The release binary beside this example (target/release/examples/soak ->
/// target/release/toolgate), or `TOOLGATE_BIN`.
fn find_binary() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("TOOLGATE_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the target folder")?;
    let bin = dir.join("toolgate");
    if !bin.is_file() {
        return Err(format!(
            "{} is missing: run `cargo build --release` first (or set TOOLGATE_BIN)",
            bin.display()
        ));
    }
    Ok(bin)
}

/// The newest modification time under `dir`.
fn newest(dir: &Path) -> Option<SystemTime> {
    let mut best = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let t = if path.is_dir() {
            newest(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).ok()
        };
        best = best.max(t);
    }
    best
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    let bin = match find_binary() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok();
    if let (Some(built), Some(changed)) = (built, newest(&source))
        && changed > built
    {
        eprintln!(
            "soak: warning: {} is older than the sources; `cargo build --release` to soak the current code",
            bin.display()
        );
    }
    let seed = args.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let dir = match tempfile::Builder::new().prefix("toolgate-soak-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("soak: cannot make a temporary folder: {e}");
            return ExitCode::from(2);
        }
    };
    let root = dir.path().to_path_buf();
    let world = match world::write(&root) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("soak: cannot write the tools and agents: {e}");
            return ExitCode::from(2);
        }
    };
    let http = match reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("soak: cannot make an HTTP client: {e}");
            return ExitCode::from(2);
        }
    };
    let modes: Vec<Mode> = match args.mode {
        ModeArg::Run => vec![Mode::Run],
        ModeArg::Serve => vec![Mode::Serve],
        ModeArg::Both => vec![Mode::Run, Mode::Serve],
    };
    eprintln!(
        "soak: {} runs per mode ({}), seed {seed}, binary {}, in {}",
        args.runs,
        modes
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(" + "),
        bin.display(),
        root.display()
    );
    let mut soak = Soak {
        run_tg: Toolgate {
            bin: bin.clone(),
            db: root.join("run.db"),
        },
        serve_tg: Toolgate {
            bin,
            db: root.join("serve.db"),
        },
        world,
        rng: Rng(seed),
        http,
        stats: BTreeMap::new(),
        kills: BTreeMap::new(),
        anomalies: Vec::new(),
        anomaly_count: 0,
        tally: Tally::default(),
        finished: Vec::new(),
        lifetimes: BTreeMap::new(),
        args,
    };
    let began = Instant::now();
    'runs: for n in 0..soak.args.runs {
        for &mode in &modes {
            if soak
                .args
                .max_secs
                .is_some_and(|s| began.elapsed().as_secs() >= s)
            {
                eprintln!("soak: --max-secs reached after {n} runs per mode");
                break 'runs;
            }
            soak.one(mode, n, &root).await;
        }
        if (n + 1) % 10 == 0 {
            let kills: u64 = soak.stats.values().map(|s| s.kills).sum();
            eprintln!(
                "soak: {} runs per mode, {kills} kills, {} checks, {} violations, {:.0} s",
                n + 1,
                soak.tally.total_checks(),
                soak.tally.violations.len(),
                began.elapsed().as_secs_f64()
            );
        }
    }
    // A killed process's program may have written its launch late: read the logs again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (run_id, workspace) in std::mem::take(&mut soak.finished) {
        check::recheck_launches(&mut soak.tally, &run_id, &workspace);
    }
    for &mode in &modes {
        let db = soak.tg(mode).db.clone();
        if db.exists() {
            check::check_integrity(&mut soak.tally, &db);
        }
    }
    soak.summary(seed, began.elapsed());
    let broke = !soak.tally.violations.is_empty();
    if broke || soak.args.keep {
        let kept = dir.keep();
        println!("kept: {}", kept.display());
    }
    if broke {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
