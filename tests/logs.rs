//! Logs: `-v` and `--log-format json` put log lines on stderr and nothing extra on
//! stdout, `RUST_LOG` wins over `-v`, and the store's writer thread logs its commits
//! (debug) and a failed commit (warn).
#![allow(clippy::too_many_lines, reason = "scenario tests read best whole")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use toolgate_test_support::toolgate;

use serde_json::{Value, json};
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{CallRecord, Store, StoreOptions};

fn cli(args: &[&str], dir: &Path, rust_log: Option<&str>) -> Output {
    let mut cmd = toolgate(dir);
    cmd.args(args);
    if let Some(filter) = rust_log {
        cmd.env("RUST_LOG", filter);
    }
    cmd.output().unwrap()
}

const CALL: [&str; 6] = [
    "tools",
    "call",
    "calculator",
    "--args",
    r#"{"expression":"1+1"}"#,
    "--conversation",
];

fn call(dir: &Path, flags: &[&str], rust_log: Option<&str>) -> (String, String) {
    let args = [&CALL[..], &["logs"], flags].concat();
    let out = cli(&args, dir, rust_log);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn json_logs_go_to_stderr_and_stdout_stays_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (plain, quiet) = call(d, &[], None);
    assert_eq!(plain, "2\n");
    assert_eq!(quiet, "", "no logs without -v: {quiet}");

    let (stdout, stderr) = call(d, &["--log-format", "json", "-vv"], None);
    assert_eq!(stdout, plain, "logs leaked to stdout");
    let logs: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let commit = logs
        .iter()
        .find(|l| l["fields"]["message"] == "call records committed")
        .unwrap_or_else(|| panic!("no commit logged: {stderr}"));
    assert_eq!(commit["level"], "DEBUG");
    assert_eq!(commit["target"], "toolgate::store::writer");
    assert_eq!(commit["fields"]["records"], json!(1));
    assert!(
        commit["span"]["db"]
            .as_str()
            .unwrap()
            .ends_with("toolgate.db"),
        "{commit}"
    );
    assert!(
        logs.iter()
            .any(|l| l["fields"]["message"] == "store writer started"),
        "{stderr}"
    );
}

#[test]
fn verbosity_and_rust_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // -v is info: the writer's commits (debug) are not shown.
    let (_, info) = call(d, &["-v"], None);
    assert!(!info.contains("call records committed"), "{info}");
    let (stdout, debug) = call(d, &["-vv"], None);
    assert_eq!(stdout, "2\n");
    assert!(
        debug.contains("DEBUG") && debug.contains("call records committed batches=1 records=1"),
        "{debug}"
    );
    // RUST_LOG, when set, wins over -v.
    let (_, env) = call(d, &["-vv"], Some("warn"));
    assert!(!env.contains("call records committed"), "{env}");
    let (_, env) = call(d, &[], Some("toolgate::store=debug"));
    assert!(env.contains("call records committed"), "{env}");
    // A filter that does not parse is said once; -v applies.
    let (_, bad) = call(d, &["-vv"], Some("=["));
    assert!(
        bad.contains("RUST_LOG='=[' is not a log filter") && bad.contains("call records committed"),
        "{bad}"
    );
}

/// Log lines written by any thread, collected.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn record(i: i64) -> CallRecord {
    let mut r = CallRecord {
        call_id: format!("call_{i}"),
        run_id: None,
        conversation_id: "c".into(),
        agent: None,
        caller: CallerKind::User,
        tool: "echo".into(),
        arguments: json!({}),
        result: None,
        result_size: 0,
        status: CallStatus::Succeeded,
        error_kind: None,
        error_message: None,
        started_at: i,
        duration_ms: 1.0,
        replaced: false,
        attempts: Vec::new(),
        cached: None,
    };
    r.set_result(&"z".repeat(2000));
    r
}

#[test]
fn a_failed_commit_is_a_warning() {
    let captured = Captured::default();
    let writer = captured.clone();
    // The writer is another thread: the subscriber is this test binary's global one.
    tracing_subscriber::fmt()
        .with_env_filter("toolgate=debug")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(
        dir.path().join("full.db"),
        StoreOptions {
            max_bytes: Some(512 * 1024),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut batch = 0;
    let err = loop {
        let records = (0..10).map(|i| record(batch * 10 + i)).collect();
        match rt.block_on(store.record_calls(records)) {
            Ok(()) => batch += 1,
            Err(e) => break e,
        }
        assert!(batch < 1000, "the size cap never hit");
    };
    store.close();
    drop(store);
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let warning = logs
        .lines()
        .find(|l| l.contains("WARN"))
        .unwrap_or_else(|| panic!("no warning: {logs}"));
    assert!(
        warning.contains("call records not committed")
            && warning.contains("records=10")
            && warning.contains("full.db")
            && warning.contains("is full"),
        "{warning} (the error: {err})"
    );
    assert!(
        logs.contains("call records committed batches=1 records=10"),
        "{logs}"
    );
}

/// A run's logs nest as the design says: `run{run_id}` > `turn{n}` > `call{call_id, tool}`.
#[test]
fn run_logs_carry_the_run_turn_and_call_spans() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("agent.yaml"),
        "name: counter\nmodel: scripted:replies.yaml\ntools: [calculator]\n",
    )
    .unwrap();
    std::fs::write(
        d.join("replies.yaml"),
        "replies:\n  - content: Counting.\n    tool_calls: [{id: call_c, name: calculator, arguments: {expression: \"1+2\"}}]\n  - content: Three.\n",
    )
    .unwrap();
    let out = cli(
        &[
            "-vv",
            "--log-format",
            "json",
            "run",
            "--agent",
            "agent.yaml",
            "--json",
            "count",
        ],
        d,
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let logs: Vec<Value> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = logs
        .iter()
        .find(|l| l["fields"]["message"] == "call finished")
        .expect("a call log");
    let spans = call["spans"].as_array().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["run", "turn", "call"]);
    assert!(spans[0]["run_id"].as_str().unwrap().starts_with("run_"));
    assert_eq!(spans[1]["n"], 1);
    assert_eq!(spans[2]["call_id"], "call_c");
    assert_eq!(spans[2]["tool"], "calculator");
    assert!(
        logs.iter()
            .any(|l| l["fields"]["message"] == "run stopped"
                && l["fields"]["outcome"] == "completed")
    );
}
