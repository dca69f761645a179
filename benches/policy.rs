//! What approval policy adds to a call: whole runs on the scripted model where each
//! model turn calls `echo` once, with the tool `auto` (plain), gated by CEL rules
//! (`deny_if`, `confirm_if`, `otherwise: auto`: all evaluated, none holds the call), or
//! behind a `before_call` command hook (a `sh` that answers allow). And the gate alone,
//! plain and with the rules.
//!
//! `ratios` prints the three per call, interleaved in the same run, as ratios to the
//! plain call.
//!
//! Run: `cargo bench --bench policy` (`-- ratios` for the ratios alone).

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

/// Calls per run.
const CALLS: usize = 10;

const RULES: &str = "permissions:\n  echo: {deny_if: \"args.text.startsWith('rm ')\", confirm_if: \"size(args.text) > 1000\", otherwise: auto}\n";
const HOOK: &str = "hooks:\n  before_call: {command: [sh, -c, \"cat >/dev/null; echo '{\\\"decision\\\": \\\"allow\\\"}'\"], timeout: 5s}\n";

struct Setup {
    _dir: tempfile::TempDir,
    runner: Runner,
    agent: Agent,
    workspace: std::path::PathBuf,
    runtime: tokio::runtime::Runtime,
}

/// A run of [`CALLS`] calls of `echo` under `policy` (agent file lines).
fn setup(policy: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut replies = String::from("replies:\n");
    for i in 0..CALLS {
        replies.push_str(&format!(
            "  - content: Step {i}.\n    tool_calls: [{{name: echo, arguments: {{text: \"step {i}\"}}}}]\n"
        ));
    }
    replies.push_str("  - content: Finished.\n");
    std::fs::write(dir.path().join("replies.yaml"), replies).unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("agent.yaml");
    std::fs::write(
        &file,
        format!(
            "name: bench\nmodel: scripted:replies.yaml\ntools: [echo]\nmax_iterations: {}\n{policy}",
            CALLS + 1
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let agent = Agent::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let store = Store::open(dir.path().join("bench.db")).unwrap_or_else(|e| panic!("{e}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    Setup {
        workspace: dir.path().to_path_buf(),
        _dir: dir,
        runner: Runner::new(store),
        agent,
        runtime,
    }
}

fn run_once(s: &Setup) {
    let start = StartRun {
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

/// A whole run, per call: plain, with rules, with a command hook.
#[divan::bench(args = ["plain", "rule", "hook"], sample_count = 10)]
fn call(bencher: Bencher, kind: &str) {
    let s = setup(policy(kind));
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
fn gate(bencher: Bencher, kind: &str) {
    let s = setup(policy(kind));
    let library = std::sync::Arc::new(toolgate::tool::ToolLibrary::builtin());
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
fn ratios() {
    const ROUNDS: usize = 9;
    let setups = [setup(""), setup(RULES), setup(HOOK)];
    let mut rows: [Vec<f64>; 3] = Default::default();
    for _ in 0..ROUNDS {
        for (row, s) in rows.iter_mut().zip(&setups) {
            let start = std::time::Instant::now();
            run_once(s);
            row.push(start.elapsed().as_secs_f64() * 1e6 / CALLS as f64);
        }
    }
    let m: Vec<f64> = rows
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
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
