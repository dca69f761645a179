//! Every command safe to pipe: with stdout (or stderr) a pipe whose reader has gone, as
//! in `toolgate show RUN | head -1`, a command ends quietly with its usual exit code (no
//! panic, no "Broken pipe" line), and a run printed with `--json` is still saved whole.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use toolgate_test_support::toolgate;

use serde_json::Value;
use tempfile::TempDir;

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(path)
        .display()
        .to_string()
}

fn command(args: &[&str], dir: &Path) -> Command {
    let mut cmd = toolgate(dir);
    cmd.args(args).env("RUST_BACKTRACE", "0");
    cmd
}

fn cli(args: &[&str], dir: &Path) -> Output {
    command(args, dir).output().unwrap()
}

/// The write end of a pipe whose reader is already closed: every write to it fails
/// with EPIPE.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

/// Runs with stdout a pipe nobody reads; returns the exit code and stderr.
fn into_closed_stdout(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let out = command(args, dir)
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs like `| head -1`: reads one line of stdout, then closes it.
fn head_1(args: &[&str], dir: &Path) -> (String, Option<i32>, String) {
    let mut child = command(args, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: whatever the command writes next meets a closed pipe.
    let out = child.wait_with_output().unwrap();
    (
        first,
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_quiet(what: &str, code: Option<i32>, stderr: &str, expected: i32) {
    assert_ne!(code, Some(101), "{what} panicked: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.to_lowercase().contains("broken pipe"),
        "{what}: {stderr}"
    );
    assert_eq!(code, Some(expected), "{what}: {stderr}");
}

fn run_args(json: bool) -> Vec<String> {
    let mut args = vec![
        "run".to_string(),
        "--agent".into(),
        repo("examples/agents/assistant.yaml"),
        "--model".into(),
        format!(
            "scripted:{}",
            repo("examples/agents/assistant.replies.yaml")
        ),
        "--tools".into(),
        repo("tools"),
    ];
    if json {
        args.push("--json".into());
    }
    args.push("Work out 2+3*4".into());
    args
}

fn show(dir: &Path, id: &str) -> Value {
    serde_json::from_slice(&cli(&["show", id, "--json"], dir).stdout).unwrap()
}

fn runs(dir: &Path) -> Vec<Value> {
    let out = cli(&["runs", "--json"], dir);
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// A database with one run paused on the assistant's two items; its id.
fn paused() -> (TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let args = run_args(true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&args, dir.path());
    assert_eq!(out.status.code(), Some(3));
    let id = runs(dir.path())[0]["id"].as_str().unwrap().to_string();
    (dir, id)
}

/// The run object of a run that paused while nobody read its events: saved whole.
fn assert_saved_paused(dir: &Path, id: &str) {
    let run = show(dir, id);
    assert_eq!(run["status"], "requires_action");
    let items: Vec<&str> = run["required_action"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(items, ["call_write", "call_ask"]);
    let calls: Value =
        serde_json::from_slice(&cli(&["calls", "--run", id, "--json"], dir).stdout).unwrap();
    assert_eq!(calls["total"], 1);
    assert_eq!(calls["calls"][0]["status"], "succeeded");
}

#[test]
fn reading_commands_end_quietly_on_a_closed_stdout() {
    let (dir, id) = paused();
    let d = dir.path();
    let parse_input = repo("examples/outputs/stream.sse");
    let cases: [(&str, &[&str], i32); 9] = [
        ("show", &["show", &id], 3),
        ("show --json", &["show", &id, "--json"], 3),
        ("runs", &["runs"], 0),
        ("runs --json", &["runs", "--json"], 0),
        ("calls --json", &["calls", "--json"], 0),
        ("stats --json", &["stats", "--json"], 0),
        ("stats", &["stats"], 0),
        ("parse", &["parse", &parse_input], 0),
        ("tools list", &["tools", "list"], 0),
    ];
    for (what, args, expected) in cases {
        let (code, stderr) = into_closed_stdout(args, d);
        assert_quiet(what, code, &stderr, expected);
    }
}

#[test]
fn parse_jsonl_stops_quietly_on_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..5000)
        .map(|i| format!("{{\"text\": \"line {i} <tool_call><name>echo</name></tool_call>\"}}\n"))
        .collect();
    std::fs::write(dir.path().join("batch.jsonl"), lines).unwrap();
    let (code, stderr) = into_closed_stdout(&["parse", "--jsonl", "batch.jsonl"], dir.path());
    assert_quiet("parse --jsonl", code, &stderr, 0);
}

#[test]
fn a_run_nobody_reads_is_still_saved() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = run_args(true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stderr) = into_closed_stdout(&args, d);
    assert_quiet("run --json", code, &stderr, 3);
    let id = runs(d)[0]["id"].as_str().unwrap().to_string();
    assert_saved_paused(d, &id);
}

#[test]
fn a_run_read_by_head_1_is_still_saved() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = run_args(true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (first, code, stderr) = head_1(&args, d);
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["type"], "run.started");
    assert_quiet("run --json | head -1", code, &stderr, 3);
    assert_saved_paused(d, first["run_id"].as_str().unwrap());
}

#[test]
fn a_run_with_stdout_and_stderr_closed_is_still_saved() {
    // `toolgate run ... 2>&1 | head -1`, with the reader gone before the first line.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = run_args(false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let pipe = closed_pipe();
    let status = command(&args, d)
        .stderr(pipe.try_clone().unwrap())
        .stdout(pipe)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3));
    let id = runs(d)[0]["id"].as_str().unwrap().to_string();
    assert_saved_paused(d, &id);
}
