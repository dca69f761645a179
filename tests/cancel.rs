//! `toolgate cancel` from another process while an AUTO call runs: the run stops within
//! about a second, and the call that started ends with a record (cancelled), never
//! with none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};
use toolgate_test_support::toolgate;

use serde_json::Value;

const NAP: &str = "name: nap\ndescription: Sleeps.\npermission: auto\ntimeout: 120\nentry:\n  type: command\n  command: sh\n  args: [\"-c\", \"sleep 60; echo rested\"]\n";

#[test]
fn a_cancel_from_another_process_stops_a_running_call_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir(p.join("tools")).unwrap();
    std::fs::write(p.join("tools/nap.yaml"), NAP).unwrap();
    std::fs::write(
        p.join("agent.yaml"),
        "name: napper\nmodel: scripted:replies.yaml\ntools: [nap]\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(
        p.join("replies.yaml"),
        "replies:\n  - content: Napping.\n    tool_calls: [{id: call_nap, name: nap, arguments: {}}]\n  - content: Rested.\n",
    )
    .unwrap();
    let mut run = toolgate(p)
        .args(["run", "--agent", "agent.yaml", "--json", "nap"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the call runs.
    let start = Instant::now();
    let id = loop {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "the run never started"
        );
        let out = toolgate(p).args(["runs", "--json"]).output().unwrap();
        let runs: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let started = runs
            .as_array()
            .and_then(|a| a.first())
            .map(|r| r["id"].as_str().unwrap().to_string());
        if let Some(id) = started {
            std::thread::sleep(Duration::from_millis(300));
            break id;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let cancelled_at = Instant::now();
    let out = toolgate(p).args(["cancel", &id]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = run.wait().unwrap();
    let waited = cancelled_at.elapsed();
    assert!(
        waited < Duration::from_secs(45),
        "the run went on for {waited:?} after the cancel: the nap ran to its end"
    );
    assert!(!status.success());
    let out = toolgate(p).args(["calls", "--json"]).output().unwrap();
    let calls: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = calls["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["call_id"], "call_nap");
    assert_eq!(calls[0]["status"], "cancelled");
    let out = toolgate(p).args(["show", &id, "--json"]).output().unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["status"], "cancelled");
}
