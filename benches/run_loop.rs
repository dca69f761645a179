//! The agent loop's own cost per iteration: whole runs on the scripted model where each
//! model turn calls `echo` once (a no-op tool), so what is measured is the loop itself:
//! parsing the reply, gating, saving the run state, executing and recording the call,
//! feeding the result back. Runs of 10 and 50 iterations show how the growing
//! conversation (saved with every step) weighs.
//!
//! `ratios` prints the iteration beside the one-commit floor, both measured in the same
//! run, interleaved. `policy_*` measure what approval policy adds to a call: the tool
//! `auto` (plain), gated by CEL rules (`deny_if`, `confirm_if`, `otherwise: auto`: all
//! evaluated, none holds the call), or behind a `before_call` command hook (a `sh` that
//! answers allow); `policy_ratios` prints both as ratios to the plain call, same run.
//!
//! Run: `cargo bench --bench run_loop` (`BENCH_DIR=/dev/shm` puts the database on
//! tmpfs; `BENCH_RUNTIME=current` uses a one-thread runtime; `-- ratios` for the
//! ratios alone, `-- policy` for the policy figures).
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use divan::Bencher;
use divan::counter::ItemsCount;
use toolgate::agent::Agent;
use toolgate::permission::{Gate, Who};
use toolgate::protocol::RunStatus;
use toolgate::run::{Runner, StartRun};
use toolgate::store::Store;

fn main() {
    divan::main();
}

struct Setup {
    _dir: tempfile::TempDir,
    runner: Runner,
    agent: Agent,
    workspace: std::path::PathBuf,
    runtime: tokio::runtime::Runtime,
}

fn setup(iterations: usize) -> Setup {
    setup_with(iterations, "")
}

/// [`setup`], with `policy` (agent file lines) for its `echo`.
fn setup_with(iterations: usize, policy: &str) -> Setup {
    let dir = tempfile::tempdir_in(
        std::env::var("BENCH_DIR").unwrap_or_else(|_| std::env::temp_dir().display().to_string()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut replies = String::from("replies:\n");
    for i in 1..iterations {
        replies.push_str(&format!(
            "  - content: Step {i}.\n    tool_calls: [{{name: echo, arguments: {{text: \"step {i}\"}}}}]\n"
        ));
    }
    replies.push_str("  - content: Finished.\n");
    std::fs::write(dir.path().join("replies.yaml"), replies).unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("agent.yaml");
    std::fs::write(
        &file,
        format!("name: bench\nmodel: scripted:replies.yaml\ntools: [echo]\nmax_iterations: {iterations}\n{policy}"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let agent = Agent::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let store = Store::open(dir.path().join("bench.db")).unwrap_or_else(|e| panic!("{e}"));
    let runtime = match std::env::var("BENCH_RUNTIME").as_deref() {
        Ok("current") => tokio::runtime::Builder::new_current_thread(),
        _ => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(2);
            b
        }
    }
    .enable_all()
    .build()
    .unwrap_or_else(|e| panic!("{e}"));
    Setup {
        workspace: dir.path().to_path_buf(),
        _dir: dir,
        runner: Runner::new(store, toolgate::tool::sources::standard()),
        agent,
        runtime,
    }
}

/// One whole run of `s`'s agent.
fn run_once(s: &Setup) {
    let start = StartRun {
        priority: None,
        owner: None,
        agent: s.agent.clone(),
        model: None,
        conversation: None,
        message: "go".into(),
        tools_dir: None,
        workspace: Some(s.workspace.clone()),
    };
    let run = s
        .runtime
        .block_on(s.runner.start(start))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.status, RunStatus::Completed);
}

#[divan::bench(args = [10, 50], sample_count = 20)]
fn iteration(bencher: Bencher, iterations: usize) {
    let s = setup(iterations);
    bencher
        .counter(ItemsCount::new(iterations))
        .bench_local(|| run_once(&s));
}

/// The iteration beside the one-commit floor, interleaved, medians of 15 rounds:
/// microseconds per iteration and per floor save, and their ratio; and a whole run of
/// one turn, for what a run costs besides its iterations.
#[divan::bench(sample_count = 1, sample_size = 1)]
fn ratios() {
    const ROUNDS: usize = 15;
    let (s1, s10, s50, floor) = (setup(1), setup(10), setup(50), setup(2));
    let state = format!("{{\"pad\":\"{}\"}}", "x".repeat(4096));
    let time = |n: usize, f: &dyn Fn()| {
        let start = std::time::Instant::now();
        f();
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    };
    let mut rows: [Vec<f64>; 4] = Default::default();
    for _ in 0..ROUNDS {
        rows[0].push(time(FLOOR_SAVES, &|| floor_once(&floor, &state, 1)));
        rows[1].push(time(10, &|| run_once(&s10)));
        rows[2].push(time(50, &|| run_once(&s50)));
        rows[3].push(time(1, &|| run_once(&s1)));
    }
    let m = medians(&mut rows);
    for (i, n) in [(1, 10), (2, 50)] {
        println!(
            "loop iteration ({n}-iteration runs): {:.0} us, one-commit floor {:.0} us: {:.2}x (goal 1.2x)",
            m[i],
            m[0],
            m[i] / m[0]
        );
    }
    // What a run costs on top of its iterations: a run that only answers (its creation,
    // one model turn, its end; two commits by design).
    println!(
        "a whole run of one turn and no call: {:.0} us = {:.1}x the one-commit floor",
        m[3],
        m[3] / m[0]
    );
}

/// For comparison: the commits an iteration needs by design, and nothing else: a
/// 4 KB state saved with one call record (`1`: a call that changes nothing), or first
/// saved with the call marked executing and then with its record (`2`: a call that
/// changes something, fenced so that a crash never runs it twice).
#[divan::bench(args = [1, 2], sample_count = 20)]
fn durable_floor(bencher: Bencher, commits: usize) {
    let s = setup(2);
    let state = format!("{{\"pad\":\"{}\"}}", "x".repeat(4096));
    bencher
        .counter(ItemsCount::new(FLOOR_SAVES))
        .bench_local(|| floor_once(&s, &state, commits));
}

/// Saves per floor run.
const FLOOR_SAVES: usize = 50;

/// A run created, then [`FLOOR_SAVES`] saves of `state`, each with one call record,
/// `commits` transactions each.
fn floor_once(s: &Setup, state: &str, commits: usize) {
    use toolgate::protocol::{CallStatus, CallerKind};
    use toolgate::store::{CallRecord, RunSave};
    let store = s.runner.store.clone();
    let owner = "bench-owner";
    let save = |i: usize, records: Vec<CallRecord>| RunSave {
        status: RunStatus::InProgress,
        state: state.to_string(),
        iteration: i as u32,
        last_error: None,
        add_pending: Vec::new(),
        set_pending: Vec::new(),
        release: false,
        usage: Default::default(),
        records,
        requests: Vec::new(),
        messages: Vec::new(),
        first_seq: 0,
    };
    s.runtime.block_on(async {
        let id = format!("run_{}", uuid::Uuid::new_v4().simple());
        store
            .create_run(
                &id,
                &format!("conv_{id}"),
                "bench",
                state.to_string(),
                owner,
                60_000,
                Vec::new(),
                0,
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for i in 0..FLOOR_SAVES {
            if commits == 2 {
                store
                    .save_run(&id, owner, save(i, Vec::new()))
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            let record = CallRecord {
                call_id: format!("c{i}"),
                run_id: Some(id.clone()),
                conversation_id: format!("conv_{id}"),
                agent: None,
                caller: CallerKind::Agent,
                tool: "echo".into(),
                arguments: serde_json::json!({"text": "x"}),
                result: Some("x".into()),
                result_size: 1,
                status: CallStatus::Succeeded,
                error_kind: None,
                error_message: None,
                started_at: 0,
                duration_ms: 0.0,
                replaced: false,
                attempts: Vec::new(),
                cached: None,
            };
            store
                .save_run(&id, owner, save(i, vec![record]))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
    });
}

/// Calls per run in the policy benches.
const CALLS: usize = 10;

const RULES: &str = "permissions:\n  echo: {deny_if: \"args.text.startsWith('rm ')\", confirm_if: \"size(args.text) > 1000\", otherwise: auto}\n";
const HOOK: &str = "hooks:\n  before_call: {command: [sh, -c, \"cat >/dev/null; echo '{\\\"decision\\\": \\\"allow\\\"}'\"], timeout: 5s}\n";

/// A whole run, per call: plain, with rules, with a command hook.
#[divan::bench(args = ["plain", "rule", "hook"], sample_count = 10)]
fn policy_call(bencher: Bencher, kind: &str) {
    let s = setup_with(CALLS + 1, policy(kind));
    bencher
        .counter(ItemsCount::new(CALLS))
        .bench_local(|| run_once(&s));
}

fn policy(kind: &str) -> &'static str {
    match kind {
        "rule" => RULES,
        "hook" => HOOK,
        _ => "",
    }
}

/// The gate alone for one call: the permission word, or the three rules.
#[divan::bench(args = ["plain", "rule"])]
fn policy_gate(bencher: Bencher, kind: &str) {
    let s = setup_with(CALLS + 1, policy(kind));
    let library = std::sync::Arc::new(toolgate::tool::ToolLibrary::builtin(
        &toolgate::tool::sources::standard(),
    ));
    let kit = s.agent.toolkit(&library).unwrap_or_else(|e| panic!("{e}"));
    let args = serde_json::json!({"text": "step 1"});
    let call = toolgate::engine::call("c1", "echo", args.as_object().cloned().unwrap_or_default());
    let who = Who {
        agent: "bench",
        ..Who::default()
    };
    bencher.bench_local(|| Gate::judge(&kit, &call, &[], &who));
}

/// Per call, interleaved, medians of 9 rounds: plain, rule and hook, and the ratios of
/// the two to the plain call.
#[divan::bench(sample_count = 1, sample_size = 1)]
fn policy_ratios() {
    const ROUNDS: usize = 9;
    let setups = [
        setup_with(CALLS + 1, ""),
        setup_with(CALLS + 1, RULES),
        setup_with(CALLS + 1, HOOK),
    ];
    let mut rows: [Vec<f64>; 3] = Default::default();
    for _ in 0..ROUNDS {
        for (row, s) in rows.iter_mut().zip(&setups) {
            let start = std::time::Instant::now();
            run_once(s);
            row.push(start.elapsed().as_secs_f64() * 1e6 / CALLS as f64);
        }
    }
    let m = medians(&mut rows);
    println!("per call: plain auto {:.0} us", m[0]);
    println!(
        "per call with three CEL rules: {:.0} us = {:.2}x the plain call (+{:.0} us)",
        m[1],
        m[1] / m[0],
        m[1] - m[0]
    );
    println!(
        "per call with a before_call command hook: {:.0} us = {:.2}x the plain call (+{:.0} us)",
        m[2],
        m[2] / m[0],
        m[2] - m[0]
    );
}

/// The median of each row.
fn medians(rows: &mut [Vec<f64>]) -> Vec<f64> {
    rows.iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect()
}
