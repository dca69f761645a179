//! Workflow tools through the binary: a workflow whose second step is a CONFIRM call
//! pauses the run (the item under the workflow's child run), is approved from another
//! process and finishes with its output template filled from the saved results; a step
//! that fails or is denied stops the workflow with the step named; a workflow that
//! calls a tool nobody has, or reads a result before it is saved, is a load error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::launching;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use tempfile::TempDir;

use launching::{LAUNCH, launches, output, stderr};

/// A read-only lookup that knows one city (any other: exit 3 with a reason).
const LOOKUP: &str = r#"name: lookup
description: The weather in a city.
read_only: true
parameters:
  - {name: city, type: string, required: true}
entry:
  type: command
  command: sh
  args: ["-c", "read a; case \"$a\" in *Oslo*) echo '{\"city\": \"Oslo\", \"temp\": 4, \"days\": [\"rain\", \"snow\"]}';; *) echo \"no such city: $a\" >&2; exit 3;; esac"]
"#;

/// Looks up, then launches (CONFIRM) with the saved result in the arguments.
const WORKFLOW: &str = r#"name: weather_launch
description: Looks up the weather in a city, then launches a balloon there.
parameters:
  - {name: city, type: string, required: true}
entry:
  type: workflow
  steps:
    - tool: lookup
      arguments: {city: "{{ input.city }}"}
      save_as: weather
    - tool: launch
      arguments: {target: "balloon over {{ weather.city }} ({{ weather.days[1] }}, {{ weather.temp }} C)"}
      save_as: launched
  output: "{{ launched }}: {{ weather.city }} is {{ weather.temp }} C"
"#;

fn world(city: &str) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |p: &str, t: &str| std::fs::write(dir.path().join(p), t).unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    write("tools/launch.yaml", LAUNCH);
    write("tools/lookup.yaml", LOOKUP);
    write("tools/weather_launch.yaml", WORKFLOW);
    write(
        "top.yaml",
        "name: top\nmodel: scripted:top.replies.yaml\nworkspace: .\ntools: [weather_launch]\n",
    );
    write(
        "top.replies.yaml",
        &format!(
            "replies:\n  - content: On it.\n    tool_calls: [{{id: call_w, name: weather_launch, arguments: {{city: {city}}}}}]\n  - content: Done.\n"
        ),
    );
    dir
}

fn last_line(o: &Output) -> Value {
    let text = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// Where the commands run: the folder, and the database (`None`: its SQLite file).
struct At<'a> {
    dir: &'a Path,
    db: Option<&'a str>,
}

impl At<'_> {
    fn cli(&self, args: &[&str]) -> Output {
        let mut all: Vec<&str> = Vec::new();
        if let Some(db) = self.db {
            all.extend(["--db", db]);
        }
        all.extend_from_slice(args);
        output(&all, self.dir)
    }
}

fn start(at: &At) -> Output {
    at.cli(&[
        "run", "--agent", "top.yaml", "--tools", "tools", "--json", "go",
    ])
}

/// Every call recorded, the children's included, oldest first.
fn calls(at: &At) -> Vec<Value> {
    let out = at.cli(&["calls", "--json", "--limit", "100"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut calls = v["calls"].as_array().unwrap().clone();
    calls.sort_by_key(|c| c["started_at"].as_i64());
    calls
}

/// Starts the run; it pauses on the launch step. Returns the top run and the item.
fn paused(at: &At) -> (Value, Value) {
    let out = start(at);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run = last_line(&out);
    let item = run["required_action"]["items"][0].clone();
    assert_eq!(item["tool"], "launch", "{run}");
    assert_eq!(
        item["arguments"]["target"], "balloon over Oslo (snow, 4 C)",
        "{item}"
    );
    assert_eq!(
        item["path"].as_array().unwrap().len(),
        2,
        "top and the workflow's run: {item}"
    );
    assert!(launches(at.dir).is_empty());
    (run, item)
}

#[test]
fn a_confirm_step_pauses_and_the_approved_workflow_answers_from_its_saved_results() {
    let w = world("Oslo");
    approved(&At {
        dir: w.path(),
        db: None,
    });
}

/// The same on PostgreSQL: the step paused by one process, approved by another.
#[test]
fn a_workflow_paused_on_postgres_continues_in_another_process() {
    let w = world("Oslo");
    let db = crate::databases::TestDb::postgres();
    approved(&At {
        dir: w.path(),
        db: Some(db.arg()),
    });
}

fn approved(at: &At) {
    let dir = at.dir;
    let (run, item) = paused(at);
    let id = run["id"].as_str().unwrap();
    let call = item["call_id"].as_str().unwrap();
    // Approved from another process.
    let out = at.cli(&["approve", id, "--call", call, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let done = last_line(&out);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output"], "Done.");
    assert_eq!(launches(dir).len(), 1, "the approved step ran once");

    let all = calls(at);
    let top = all.iter().find(|c| c["tool"] == "weather_launch").unwrap();
    assert_eq!(top["status"], "succeeded", "{top}");
    assert_eq!(top["result"], "launched: Oslo is 4 C", "{top}");
    let lookup = all.iter().find(|c| c["tool"] == "lookup").unwrap();
    assert_eq!(lookup["arguments"], serde_json::json!({"city": "Oslo"}));
    let launch = all.iter().find(|c| c["tool"] == "launch").unwrap();
    assert_eq!(launch["status"], "succeeded");
    // The steps are recorded in the workflow's own run, under the top's call.
    assert_ne!(lookup["run_id"], top["run_id"]);
    assert_eq!(lookup["run_id"], launch["run_id"]);
    let runs: Value = serde_json::from_slice(&at.cli(&["runs", "--json"]).stdout).unwrap();
    let child = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == lookup["run_id"])
        .unwrap();
    assert_eq!(child["model"], "workflow:weather_launch", "{child}");
    // The agent filter (the console's), on either backend: the workflow's run has
    // the caller's agent.
    let of = |agent: &str| -> usize {
        let out = at.cli(&["runs", "--agent", agent, "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_array().unwrap().len()
    };
    assert_eq!((of("top"), of("nobody")), (2, 0));
    assert_eq!(child["status"], "completed");
    assert_eq!(child["output"], "launched: Oslo is 4 C");
    let show = at.cli(&["show", id]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("└─ top"),
        "the tree shows the workflow's run: {text}"
    );
}

#[test]
fn a_denied_step_stops_the_workflow_with_the_step_named() {
    let w = world("Oslo");
    let dir = w.path();
    let at = At { dir, db: None };
    let (run, item) = paused(&at);
    let id = run["id"].as_str().unwrap();
    let call = item["call_id"].as_str().unwrap();
    let out = output(&["deny", id, "--call", call, "--json"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_line(&out)["status"], "completed");
    assert!(launches(dir).is_empty());
    let all = calls(&at);
    let top = all.iter().find(|c| c["tool"] == "weather_launch").unwrap();
    assert_eq!(top["status"], "failed", "{top}");
    assert_eq!(top["error_kind"], "workflow_failed");
    let message = top["error_message"].as_str().unwrap();
    assert!(
        message.contains("The workflow 'weather_launch'")
            && message.contains("step 2 of 2 (launch) was denied"),
        "{message}"
    );
}

#[test]
fn a_failed_step_stops_the_workflow_before_the_next_one() {
    let w = world("Atlantis");
    let dir = w.path();
    let at = At { dir, db: None };
    let out = start(&at);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_line(&out)["output"], "Done.");
    let all = calls(&at);
    assert!(all.iter().all(|c| c["tool"] != "launch"), "{all:?}");
    let top = all.iter().find(|c| c["tool"] == "weather_launch").unwrap();
    assert_eq!(top["error_kind"], "workflow_failed", "{top}");
    let message = top["error_message"].as_str().unwrap();
    assert!(
        message.contains("step 1 of 2 (lookup) failed") && message.contains("no such city"),
        "{message}"
    );
}

#[test]
fn a_workflow_that_cannot_be_played_is_a_load_error_naming_the_step() {
    let w = world("Oslo");
    let dir = w.path();
    let write = |p: &str, t: &str| std::fs::write(dir.join(p), t).unwrap();
    write(
        "tools/nowhere.yaml",
        "name: nowhere\ndescription: x\nentry:\n  type: workflow\n  steps:\n    - tool: lookup\n    - tool: teleport\n",
    );
    write(
        "tools/early.yaml",
        "name: early\ndescription: x\nentry:\n  type: workflow\n  steps:\n    - tool: lookup\n      arguments: {city: \"{{ later }}\"}\n    - tool: lookup\n      save_as: later\n",
    );
    let out = output(&["tools", "check"], dir);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("workflow 'nowhere': step 2 calls 'teleport', which is not a tool"),
        "{text}"
    );
    assert!(
        text.contains("step 1 (lookup): '{{ later }}' names 'later'"),
        "{text}"
    );
    assert!(
        text.contains("weather_launch"),
        "the good one still loads: {text}"
    );
    // A workflow called outside a run says where it runs.
    let out = output(
        &[
            "tools",
            "call",
            "weather_launch",
            "--args",
            r#"{"city": "Oslo"}"#,
        ],
        dir,
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("is a workflow"), "{}", stderr(&out));
}

#[test]
fn the_mcp_python_sdk_calls_a_workflow_and_approves_its_step_by_elicitation() {
    let python = crate::serving::python("the workflow through the MCP gateway");
    let w = world("Oslo");
    let dir = w.path();
    let db = dir.join("gateway.db");
    let out = std::process::Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/mcp_workflow.py"))
        .arg(toolgate_test_support::bin())
        .args([db.as_os_str(), dir.join("top.yaml").as_os_str()])
        .args([dir.join("tools").as_os_str(), dir.as_os_str()])
        .env_remove("TOOLGATE_DB")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tests/py/mcp_workflow.py failed: {stdout}\n{}",
        stderr(&out)
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["answer"], "launched: Oslo is 4 C");
    assert_eq!(launches(dir).len(), 1, "the accepted step ran once");
}

#[test]
fn a_client_tool_step_is_handed_to_the_client_and_its_output_saved() {
    let w = world("Oslo");
    let dir = w.path();
    let at = At { dir, db: None };
    let write = |p: &str, t: &str| std::fs::write(dir.join(p), t).unwrap();
    write(
        "tools/ask.yaml",
        "name: ask\ndescription: Ask the user.\nparameters:\n  - {name: question, type: string, required: true}\nentry: {type: client}\n",
    );
    write(
        "tools/greet.yaml",
        "name: greet\ndescription: Greets the user by name.\nentry:\n  type: workflow\n  steps:\n    - {tool: ask, arguments: {question: Your name?}, save_as: name}\n  output: \"Hello {{ name }}\"\n",
    );
    write(
        "greeter.yaml",
        "name: greeter\nmodel: scripted:greeter.replies.yaml\ntools: [greet]\n",
    );
    write(
        "greeter.replies.yaml",
        "replies:\n  - content: Greeting.\n    tool_calls: [{id: call_g, name: greet, arguments: {}}]\n  - content: Greeted.\n",
    );
    let out = output(
        &[
            "run",
            "--agent",
            "greeter.yaml",
            "--tools",
            "tools",
            "--json",
            "hi",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run = last_line(&out);
    let item = &run["required_action"]["items"][0];
    assert_eq!(item["tool"], "ask", "{run}");
    let (id, call) = (
        run["id"].as_str().unwrap(),
        item["call_id"].as_str().unwrap(),
    );
    let out = output(
        &["submit", id, "--call", call, "--output", "Ada", "--json"],
        dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = calls(&at);
    let greet = all.iter().find(|c| c["tool"] == "greet").unwrap();
    assert_eq!(greet["result"], "Hello Ada", "{greet}");
}
