//! Sub-agents across processes, through the binary: a grandchild's CONFIRM call paused
//! in one process is approved through the top run from another, which finishes the
//! whole tree; a process killed with SIGKILL while a grandchild's approved call runs
//! leaves a tree that `resume TOP` finishes without running the call again; and the
//! example script of the README runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::launching;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use launching::{LAUNCH, command, launches, output, stderr, wait_for};

/// top -> mid -> leaf; the leaf's launch waits for a person.
fn world() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    write("tools/launch.yaml", LAUNCH);
    write(
        "top.yaml",
        "name: top\nmodel: scripted:top.replies.yaml\nworkspace: .\nsubagents:\n  mid: mid.yaml\n",
    );
    write(
        "top.replies.yaml",
        "replies:\n  - content: Delegating.\n    tool_calls: [{id: call_t, name: mid, arguments: {task: launch it}}]\n  - content: Top is done.\n",
    );
    write(
        "mid.yaml",
        "name: mid\ndescription: Passes work on.\nmodel: scripted:mid.replies.yaml\nsubagents:\n  leaf: leaf.yaml\n",
    );
    write(
        "mid.replies.yaml",
        "replies:\n  - content: Passing on.\n    tool_calls: [{id: call_m, name: leaf, arguments: {task: launch it}}]\n  - content: Mid is done.\n",
    );
    write(
        "leaf.yaml",
        "name: leaf\ndescription: Launches.\nmodel: scripted:leaf.replies.yaml\ntools: [launch]\n",
    );
    write(
        "leaf.replies.yaml",
        "replies:\n  - content: Launching.\n    tool_calls: [{id: call_l, name: launch, arguments: {target: moon}}]\n  - content: Launch handled.\n",
    );
    dir
}

fn last_line(o: &Output) -> Value {
    let text = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

fn runs(dir: &Path) -> Vec<Value> {
    let out = output(&["runs", "--json"], dir);
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Starts the tree; returns the top run object it paused with.
fn paused(dir: &Path) -> Value {
    let out = output(
        &[
            "run", "--agent", "top.yaml", "--tools", "tools", "--json", "go",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run = last_line(&out);
    assert_eq!(run["agent"], "top");
    let item = &run["required_action"]["items"][0];
    assert_eq!(item["call_id"], "call_l");
    assert_eq!(item["path"].as_array().unwrap().len(), 3, "{item}");
    // Every event names its run: the children's runs speak in the top's stream.
    let text = String::from_utf8_lossy(&out.stdout);
    let tagged: std::collections::HashSet<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| e["run_id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(tagged.len(), 3, "events from the top, mid and leaf runs");
    run
}

#[test]
fn a_grandchilds_confirm_approved_from_another_process_finishes_the_tree() {
    let w = world();
    let dir = w.path();
    let run = paused(dir);
    let id = run["id"].as_str().unwrap();
    let out = output(&["approve", id, "--call", "call_l", "--json"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let done = last_line(&out);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output"], "Top is done.");
    assert_eq!(launches(dir), ["call_l"]);
    let all = runs(dir);
    assert_eq!(all.len(), 3);
    assert!(all.iter().all(|r| r["status"] == "completed"), "{all:?}");
    // show prints the tree; stats too, with totals that include the children.
    let show = output(&["show", id], dir);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("└─ mid") && text.contains("└─ leaf"),
        "{text}"
    );
    let conv = done["conversation_id"].as_str().unwrap();
    let stats = output(&["stats", "--conversation", conv, "--json"], dir);
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["total_calls"], 1, "the top's own call");
    assert_eq!(stats["totals_with_subagents"]["calls"], 3, "{stats}");
    let tree = &stats["run_trees"][0];
    assert_eq!(tree["children"][0]["agent"], "mid");
    assert_eq!(
        tree["children"][0]["children"][0]["tools"]["launch"]["succeeded"],
        1
    );
}

#[test]
fn killed_while_a_grandchild_runs_resumes_without_running_it_again() {
    let w = world();
    let dir = w.path();
    let run = paused(dir);
    let id = run["id"].as_str().unwrap();
    let mut approver: Child = command(&["approve", id, "--call", "call_l"], dir, "30")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the launch to start", || launches(dir).len() == 1);
    approver.kill().unwrap(); // SIGKILL
    approver.wait().unwrap();

    let out = output(&["resume", id, "--json"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_line(&out)["status"], "completed");
    assert_eq!(launches(dir), ["call_l"], "the approved call ran once");
    let leaf = runs(dir)
        .into_iter()
        .find(|r| r["agent"] == "leaf")
        .unwrap();
    let recs = output(
        &["calls", "--run", leaf["id"].as_str().unwrap(), "--json"],
        dir,
    );
    let recs: Value = serde_json::from_slice(&recs.stdout).unwrap();
    let calls = recs["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["error_kind"], "interrupted", "{calls:?}");
}

#[test]
fn cancel_of_the_top_cancels_every_run_below() {
    let w = world();
    let dir = w.path();
    let run = paused(dir);
    let id = run["id"].as_str().unwrap();
    let out = output(&["cancel", id], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = runs(dir);
    assert!(all.iter().all(|r| r["status"] == "cancelled"), "{all:?}");
    assert!(launches(dir).is_empty());
}

#[test]
fn the_example_script_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("examples/subagents.sh"))
        .env("TOOLGATE_BIN", toolgate_test_support::bin())
        .env_remove("TOOLGATE_DB")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    assert!(text.contains("waiting in"), "{text}");
    assert!(text.contains("└─ writer"), "{text}");
    assert!(text.contains("with sub-agents: 5 calls"), "{text}");
    assert!(text.contains("answer.py: print(6*7)"), "{text}");
}
