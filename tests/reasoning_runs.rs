//! A model's reasoning in a run, through the binary: `run --json` streams it as
//! `reasoning.delta` events, a call written inside it never runs, the run's output is
//! the answer without it, and the terminal shows it on stderr under a `thinking` label,
//! never on stdout with the answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use toolgate_test_support::toolgate;

const SAY: &str = "name: say\ndescription: Says a word.\nparameters:\n  - {name: text, type: string, required: true}\nentry:\n  type: command\n  command: sh\n  args: [-c, \"cat\"]\n";

const REPLIES: &str = r#"replies:
  - content: "<think>I could <tool_call><name>say</name><params><text>secret plan</text></params></tool_call> but no.</think>Saying.\n<tool_call><name>say</name><params><text>hi</text></params></tool_call>"
  - content: "<think>It was said.</think>All said."
"#;

fn setup(dir: &Path) {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/say.yaml"), SAY).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        "name: sayer\nmodel: scripted:replies.yaml\nmode: xml\ntools: [say]\n",
    )
    .unwrap();
    std::fs::write(dir.join("replies.yaml"), REPLIES).unwrap();
}

fn run(dir: &Path, json: bool) -> Output {
    let mut cmd = toolgate(dir);
    cmd.arg("--db").arg(dir.join("t.db")).args([
        "run",
        "--agent",
        "agent.yaml",
        "--tools",
        "tools",
    ]);
    if json {
        cmd.arg("--json");
    }
    cmd.arg("say hi").output().unwrap()
}

#[test]
fn reasoning_streams_as_its_own_events_and_its_calls_never_run() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(dir.path(), true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let thought: String = events
        .iter()
        .filter(|e| e["type"] == "reasoning.delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        thought,
        "I could <tool_call><name>say</name><params><text>secret plan</text></params></tool_call> but no.It was said."
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text.delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(!text.contains("think"), "{text}");
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call.parsed")
        .map(|e| &e["arguments"])
        .collect();
    assert_eq!(started, [&serde_json::json!({"text": "hi"})]);
    let run = events.last().unwrap();
    assert_eq!(run["output"], "All said.");
}

#[test]
fn the_terminal_labels_reasoning_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(dir.path(), false);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("It was said."), "{stdout}");
    assert!(stdout.contains("All said."), "{stdout}");
    assert!(stderr.contains("· thinking:\nIt was said."), "{stderr}");
}
