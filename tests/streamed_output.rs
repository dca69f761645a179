//! Streamed tool output, end to end: a command tool's stdout lines arrive as
//! `tool.output` events while it runs (`run --json`, the human output, the server's
//! SSE), one line a part, never mixed between calls running side by side, secrets
//! masked, and the call's result the same whole stdout as without streaming. The tool
//! waits for a file the test writes only once it has seen the first line: a line that
//! did not stream would leave the tool waiting until its timeout and the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use serving::{Server, Site, bin};

/// A tool that says "waiting LABEL", waits (at most 20 s) for the file `go-LABEL` in
/// its workspace, then says "step 2 LABEL" and "done LABEL".
const WAITER: &str = r#"name: waiter
description: Waits for a go.
permission: auto
timeout: 30
parameters:
  type: object
  properties:
    label: {type: string}
  required: [label]
entry:
  type: command
  command: python3
  args:
    - -c
    - |
      import json, os, sys, time
      label = json.load(sys.stdin)["label"]
      print(f"waiting {label}", flush=True)
      for _ in range(400):
          if os.path.exists(f"go-{label}"):
              break
          time.sleep(0.05)
      else:
          sys.exit(f"no go for {label}: the first line did not stream")
      print(f"step 2 {label}", flush=True)
      print(f"done {label}")
"#;

const REPLIES: &str = "replies:\n  - content: Two at once.\n    tool_calls:\n      - {id: call_a, name: waiter, arguments: {label: a}}\n      - {id: call_b, name: waiter, arguments: {label: b}}\n  - content: Both done.\n";

/// `toolgate run` of the waiters agent of `site_in(root)`, with `extra` options.
fn waiters_run(root: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.current_dir(root)
        .arg("--db")
        .arg(root.join("t.db"))
        .args([
            "run",
            "--agent",
            "waiters.yaml",
            "--tools",
            "tools",
            "--workspace",
            "ws",
        ]);
    cmd.args(extra).arg("go");
    cmd
}

fn site_in(dir: &Path) {
    for d in ["tools", "ws"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("tools/waiter.yaml"), WAITER).unwrap();
    std::fs::write(
        dir.join("waiters.yaml"),
        "name: waiters\nmodel: scripted:waiters.replies.yaml\ntools: [waiter]\n",
    )
    .unwrap();
    std::fs::write(dir.join("waiters.replies.yaml"), REPLIES).unwrap();
}

/// Writes the go file of a call once its "waiting" line is in `event`.
fn release(ws: &Path, event: &Value) {
    if event["type"] == "tool.output"
        && let Some(label) = event["part"]["text"]
            .as_str()
            .and_then(|t| t.strip_prefix("waiting "))
    {
        std::fs::write(ws.join(format!("go-{label}")), "").unwrap();
    }
}

/// Checks the streamed events of the two calls: each call's parts are its lines, whole
/// and in order, between its tool.started and its tool.finished.
fn check_parts(events: &[Value]) {
    for (call, label) in [("call_a", "a"), ("call_b", "b")] {
        let mine: Vec<&Value> = events.iter().filter(|e| e["call_id"] == call).collect();
        let kinds: Vec<&str> = mine.iter().map(|e| e["type"].as_str().unwrap()).collect();
        let parts: Vec<&str> = mine
            .iter()
            .filter(|e| e["type"] == "tool.output")
            .map(|e| e["part"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(
            parts,
            [
                format!("waiting {label}"),
                format!("step 2 {label}"),
                format!("done {label}")
            ],
            "{events:?}"
        );
        let first_part = kinds.iter().position(|k| *k == "tool.output").unwrap();
        let started = kinds.iter().position(|k| *k == "tool.started").unwrap();
        let finished = kinds.iter().position(|k| *k == "tool.finished").unwrap();
        assert!(started < first_part && kinds[finished..].iter().all(|k| *k == "tool.finished"));
        assert_eq!(mine[finished]["status"], "succeeded", "{mine:?}");
    }
}

#[test]
fn run_json_streams_each_line_while_the_tool_runs_and_keeps_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    site_in(root);
    let mut child = waiters_run(root, &["--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut events = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        release(&root.join("ws"), &event);
        events.push(event);
    }
    let status = child.wait().unwrap();
    let run = events.pop().unwrap();
    assert!(status.success(), "{run}");
    assert_eq!(run["output"], "Both done.");
    check_parts(&events);
    // The records hold the whole stdout, as they would without streaming.
    let out = Command::new(bin())
        .arg("--db")
        .arg(root.join("t.db"))
        .args(["calls", "--json"])
        .output()
        .unwrap();
    let calls: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results: Vec<&str> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["result"].as_str().unwrap())
        .collect();
    assert!(
        results.contains(&"waiting a\nstep 2 a\ndone a"),
        "{results:?}"
    );
    assert!(
        results.contains(&"waiting b\nstep 2 b\ndone b"),
        "{results:?}"
    );
}

#[test]
fn the_human_output_shows_each_line_under_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    site_in(root);
    let ws = root.join("ws");
    // Both go files up front: this test is about what is shown, not when.
    std::fs::write(ws.join("go-a"), "").unwrap();
    std::fs::write(ws.join("go-b"), "").unwrap();
    let out = waiters_run(root, &[]).output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    for label in ["a", "b"] {
        // Two calls of one tool side by side: each line names its call.
        let line = format!("  waiter (call_{label}) │ done {label}");
        assert!(stderr.lines().any(|l| l == line), "{stderr}");
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("Both done."));
}

#[test]
fn a_credential_the_tool_prints_is_masked_in_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("tools")).unwrap();
    std::fs::write(
        root.join("tools/leaky.yaml"),
        "name: leaky\ndescription: Prints its token.\ncredentials: {token: {env: LEAKY_TOKEN}}\nentry:\n  type: command\n  command: python3\n  args: [-c, \"import json,sys; print('token is', json.load(sys.stdin)['token'], flush=True)\"]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("a.yaml"),
        "name: a\nmodel: scripted:r.yaml\ntools: [leaky]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("r.yaml"),
        "replies:\n  - tool_calls: [{name: leaky, arguments: {}}]\n  - content: ok\n",
    )
    .unwrap();
    let out = Command::new(bin())
        .current_dir(root)
        .arg("--db")
        .arg(root.join("t.db"))
        .args([
            "run", "--agent", "a.yaml", "--tools", "tools", "--json", "go",
        ])
        .env("LEAKY_TOKEN", "hunter2-very-secret")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(!stdout.contains("hunter2-very-secret"), "{stdout}");
    let parts: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool.output")
        .collect();
    assert_eq!(parts.len(), 1, "{stdout}");
    assert_eq!(parts[0]["part"]["text"], "token is [secret]");
}

#[tokio::test]
async fn the_servers_sse_carries_the_lines_as_they_come() {
    let site = Site::new();
    site_in(site.path());
    std::fs::rename(
        site.path().join("waiters.yaml"),
        site.path().join("agents/waiters.yaml"),
    )
    .unwrap();
    std::fs::rename(
        site.path().join("waiters.replies.yaml"),
        site.path().join("agents/waiters.replies.yaml"),
    )
    .unwrap();
    let server = Server::start(&site, None, &[]);
    let mut response = server
        .client
        .post(server.url("/v1/runs"))
        .json(&json!({"agent": "waiters", "input": "go", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    // Read chunk by chunk: the go files are written as the lines arrive.
    let ws = site.path().join("ws");
    let (mut text, mut events, mut seen) = (String::new(), Vec::new(), 0);
    while let Some(chunk) = response.chunk().await.unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
        let complete = text.rfind("\n\n").map_or(0, |i| i + 2);
        let parsed = serving::parse_sse(&text[..complete]);
        for (_, data) in &parsed[seen..] {
            release(&ws, data);
        }
        seen = parsed.len();
        events = parsed;
    }
    let (last, run) = events.pop().unwrap();
    assert_eq!(last, "run", "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    let events: Vec<Value> = events.into_iter().map(|(_, d)| d).collect();
    check_parts(&events);
}

#[test]
fn tools_call_shows_the_lines_on_stderr_and_the_result_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("tools")).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tools/progress.yaml");
    std::fs::copy(example, root.join("tools/progress.yaml")).unwrap();
    let out = Command::new(bin())
        .current_dir(root)
        .arg("--db")
        .arg(root.join("t.db"))
        .args([
            "tools",
            "call",
            "progress",
            "--tools",
            "tools",
            "--args",
            r#"{"steps": 2}"#,
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    for line in ["step 1 of 2", "step 2 of 2", "done: 2 steps"] {
        assert!(stderr.contains(&format!("  progress │ {line}")), "{stderr}");
    }
    assert!(
        stdout.contains("step 1 of 2\nstep 2 of 2\ndone: 2 steps"),
        "{stdout}"
    );
}
