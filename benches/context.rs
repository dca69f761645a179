//! What counting tokens costs a turn: the counting work the loop does each turn (the
//! two messages the turn added, counted once with the model's tokenizer, then the
//! request's view and its total), beside a whole loop iteration measured in the same
//! run: 50-iteration runs whose agent names `openai:gpt-4o-mini` (so the o200k
//! tokenizer counts, inside the loop) answered by scripted replies, each turn calling
//! `echo` with a result of 64 bytes or 4 KB.
//!
//! `ratios` prints the counting per turn as a fraction of the turn, medians of rounds
//! interleaved in one process.
//!
//! Run: `cargo bench --bench context` (`-- ratios` for the ratios alone).
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use std::sync::Arc;

use divan::Bencher;
use toolgate::agent::Agent;
use toolgate::context::{Counter, message_tokens, view};
use toolgate::model::{Message, ScriptedModel};
use toolgate::parse::ToolCall;
use toolgate::protocol::RunStatus;
use toolgate::run::{Runner, StartRun};
use toolgate::store::Store;

fn main() {
    divan::main();
}

const ITERATIONS: usize = 50;

struct Setup {
    dir: tempfile::TempDir,
    runner: Runner,
    agent: Agent,
    runtime: tokio::runtime::Runtime,
}

/// A run of `ITERATIONS` turns, each echoing `result_bytes` bytes.
fn setup(result_bytes: usize) -> Setup {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let text =
        "lorem ipsum dolor sit amet ".repeat(result_bytes / 27 + 1)[..result_bytes].to_string();
    let mut replies = String::from("replies:\n");
    for i in 1..ITERATIONS {
        replies.push_str(&format!(
            "  - content: Step {i}.\n    tool_calls: [{{name: echo, arguments: {{text: \"{text}\"}}}}]\n"
        ));
    }
    replies.push_str("  - content: Finished.\n");
    let replies_file = dir.path().join("replies.yaml");
    std::fs::write(&replies_file, replies).unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("agent.yaml");
    std::fs::write(
        &file,
        format!(
            "name: bench\nmodel: openai:gpt-4o-mini\ntools: [echo]\nmax_iterations: {ITERATIONS}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let agent = Agent::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let mut runner = Runner::new(
        Store::open(dir.path().join("bench.db")).unwrap_or_else(|e| panic!("{e}")),
        toolgate::tool::sources::standard(),
    );
    runner.model = Some(Arc::new(
        ScriptedModel::load(&replies_file).unwrap_or_else(|e| panic!("{e}")),
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    Setup {
        dir,
        runner,
        agent,
        runtime,
    }
}

fn run_once(s: &Setup) {
    let run = s
        .runtime
        .block_on(s.runner.start(StartRun {
            priority: None,
            owner: None,
            agent: s.agent.clone(),
            model: None,
            conversation: None,
            message: "go".into(),
            tools_dir: None,
            workspace: Some(s.dir.path().to_path_buf()),
        }))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.status, RunStatus::Completed);
}

/// The history of a whole run of the same shape.
fn history(result_bytes: usize) -> Vec<Message> {
    let text =
        "lorem ipsum dolor sit amet ".repeat(result_bytes / 27 + 1)[..result_bytes].to_string();
    let mut m = vec![Message::user("go")];
    for i in 1..ITERATIONS {
        let mut arguments = serde_json::Map::new();
        arguments.insert("text".into(), text.clone().into());
        let call = ToolCall {
            id: format!("call_{i}"),
            name: "echo".into(),
            arguments,
        };
        m.push(Message::assistant(format!("Step {i}."), vec![call]));
        m.push(Message::tool(format!("call_{i}"), text.clone()));
    }
    m
}

/// The counting of every turn of a run, as the loop does it: each turn counts the two
/// messages it added, then sums the request's view.
fn count_run(counter: &Counter, history: &[Message]) -> u64 {
    let mut counts: Vec<u64> = Vec::with_capacity(history.len());
    let mut total = 0;
    for upto in (1..=history.len()).step_by(2) {
        for m in &history[counts.len()..upto] {
            counts.push(message_tokens(counter, m));
        }
        let v = view(&history[..upto]);
        total = v.iter().map(|&i| counts[i]).sum::<u64>();
    }
    total
}

#[divan::bench(args = [64, 4096], sample_count = 20)]
fn turn(bencher: Bencher, result_bytes: usize) {
    let s = setup(result_bytes);
    bencher.bench_local(|| run_once(&s));
}

#[divan::bench(args = [64, 4096], sample_count = 20)]
fn counting_per_run(bencher: Bencher, result_bytes: usize) {
    let counter = Counter::for_model("openai:gpt-4o-mini");
    let h = history(result_bytes);
    count_run(&counter, &h);
    bencher.bench_local(|| count_run(&counter, divan::black_box(&h)));
}

/// Counting per turn over a whole turn, both per turn of a 50-turn run, medians of 9
/// interleaved rounds.
#[divan::bench(sample_count = 1, sample_size = 1)]
fn ratios() {
    const ROUNDS: usize = 9;
    let counter = Counter::for_model("openai:gpt-4o-mini");
    for bytes in [64, 4096] {
        let s = setup(bytes);
        let h = history(bytes);
        count_run(&counter, &h);
        let (mut turns, mut counts) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let t = std::time::Instant::now();
            run_once(&s);
            turns.push(t.elapsed().as_secs_f64() * 1e6 / ITERATIONS as f64);
            let t = std::time::Instant::now();
            divan::black_box(count_run(&counter, divan::black_box(&h)));
            counts.push(t.elapsed().as_secs_f64() * 1e6 / ITERATIONS as f64);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (turn, count) = (median(&mut turns), median(&mut counts));
        println!(
            "{bytes}-byte results: a turn {turn:.0} us (counting included), counting {count:.1} us per turn = {:.1}% of the turn (turn without it ~{:.0} us; ratio {:.3})",
            100.0 * count / turn,
            turn - count,
            turn / (turn - count)
        );
    }
}
