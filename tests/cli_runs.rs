//! Runs across processes, through the binary: a run pauses in one process and is
//! approved, denied or answered in others; a process killed with SIGKILL during an
//! approved call leaves a run that resumes without running the call again; two
//! processes resuming the same run at once, of which exactly one wins.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::launching;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use launching::{LAUNCH, command, launches, output, stderr, wait_for};

const CLIENT: &str = "name: ask_user\ndescription: Ask the person.\nparameters:\n  - {name: question, type: string, required: true}\nentry: {type: client}\n";

const AGENT: &str =
    "name: launcher\nmodel: scripted:replies.yaml\ntools: [launch, ask_user]\nworkspace: .\n";

fn world(replies: &str) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(dir.path().join("tools/launch.yaml"), LAUNCH).unwrap();
    std::fs::write(dir.path().join("tools/ask_user.yaml"), CLIENT).unwrap();
    std::fs::write(dir.path().join("agent.yaml"), AGENT).unwrap();
    std::fs::write(dir.path().join("replies.yaml"), replies).unwrap();
    dir
}

const ONE_LAUNCH: &str = "replies:\n  - content: Launching.\n    tool_calls: [{id: call_l, name: launch, arguments: {target: moon}}]\n  - content: Launch handled.\n";

fn spawn(args: &[&str], dir: &Path, sleep: &str) -> Child {
    command(args, dir, sleep)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The JSON lines of stdout.
fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Starts the run with `--json`: its output (exit code 3 checked).
fn start_paused(dir: &Path) -> Output {
    let out = output(
        &[
            "run",
            "--agent",
            "agent.yaml",
            "--json",
            "Launch to the moon",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    out
}

/// Starts the run and returns the run object it paused with.
fn paused_run(dir: &Path) -> Value {
    lines(&start_paused(dir)).pop().unwrap()
}

fn show(dir: &Path, id: &str) -> Value {
    let out = output(&["show", id, "--json"], dir);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

fn records(dir: &Path, id: &str) -> Vec<Value> {
    let out = output(&["calls", "--run", id, "--json"], dir);
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    page["calls"].as_array().unwrap().clone()
}

#[test]
fn paused_in_one_process_approved_in_another() {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    let out = start_paused(dir);
    let events = lines(&out);
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types,
        [
            "run.started",
            "text.delta",
            "tool_call.parsed",
            "approval.requested",
            "run.requires_action"
        ]
    );
    let run = events.last().unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["object"], "run");
    assert_eq!(run["status"], "requires_action");
    assert_eq!(run["agent"], "launcher");
    assert!(run["last_error"].is_null());
    assert!(run["usage"].is_object());
    let items = run["required_action"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["call_id"], "call_l");
    assert_eq!(items[0]["kind"], "approval");
    assert_eq!(items[0]["tool"], "launch");
    assert_eq!(items[0]["arguments"], serde_json::json!({"target": "moon"}));
    assert!(launches(dir).is_empty());

    // Another process sees the same pause.
    assert_eq!(&show(dir, &id), run);
    let listed = output(&["runs", "--status", "requires_action", "--json"], dir);
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&id));

    // A third approves; the run continues in that command.
    let out = output(&["approve", &id, "--call", "call_l"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Launch handled."));
    assert_eq!(launches(dir), ["call_l"]);
    let done = show(dir, &id);
    assert_eq!(done["status"], "completed");
    assert!(done["required_action"].is_null());
    assert_eq!(done["output"], "Launch handled.");
    let recs = records(dir, &id);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["status"], "succeeded");

    let stats = output(
        &[
            "stats",
            "--conversation",
            run["conversation_id"].as_str().unwrap(),
            "--json",
        ],
        dir,
    );
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["total_calls"], 1);
    assert_eq!(stats["tool_usage"]["launch"], 1);
    assert_eq!(stats["runs"], 1);
    assert_eq!(stats["model_usage"]["model_calls"], 2);

    // A finished run takes no more decisions and does not resume.
    let again = output(&["resume", &id], dir);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("completed"), "{}", stderr(&again));
}

/// `runs --json` as a list of run objects.
fn listed(dir: &Path, filter: &[&str]) -> Vec<Value> {
    let out = output(&[&["runs", "--json"], filter].concat(), dir);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn runs_lists_the_run_object_show_gives() {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    let paused = paused_run(dir);
    let id = paused["id"].as_str().unwrap();
    let all = listed(dir, &[]);
    assert_eq!(all.len(), 1);
    // One run object, the same everywhere: waiting items included.
    assert_eq!(all[0], show(dir, id));
    assert_eq!(all[0], paused);
    assert_eq!(all[0]["required_action"]["items"][0]["call_id"], "call_l");
    assert_eq!(listed(dir, &["--status", "requires_action"]), all);
    assert!(listed(dir, &["--status", "completed"]).is_empty());

    // Decided but not continued: still paused, nothing left waiting, as `show` says.
    let out = output(&["approve", id, "--call", "call_l", "--no-resume"], dir);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(listed(dir, &[])[0], show(dir, id));

    // Finished: no required_action, in the list as in `show`.
    let out = output(&["resume", id], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let done = listed(dir, &[]);
    assert_eq!(done[0], show(dir, id));
    assert!(done[0]["required_action"].is_null());
}

#[test]
fn deny_and_submit_from_other_processes() {
    let w = world(
        "replies:\n  - content: Two things.\n    tool_calls:\n      - {id: call_l, name: launch, arguments: {target: mars}}\n      - {id: call_q, name: ask_user, arguments: {question: Which day?}}\n  - content: Noted.\n",
    );
    let dir = w.path();
    let run = paused_run(dir);
    let id = run["id"].as_str().unwrap();
    let kinds: Vec<&str> = run["required_action"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["approval", "submit_tool_output"]);

    // Bad input changes nothing.
    let bad = output(&["approve", id, "--call", "call_l", "--args", "{}"], dir);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("target"), "{}", stderr(&bad));
    let wrong = output(&["submit", id, "--call", "call_l", "--output", "x"], dir);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        stderr(&wrong).contains("toolgate approve or deny"),
        "{}",
        stderr(&wrong)
    );
    let missing = output(&["approve", "run_doesnotexist"], dir);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        show(dir, id)["required_action"]["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // A denial with one item left keeps the run paused (exit 3).
    let out = output(
        &[
            "deny",
            id,
            "--call",
            "call_l",
            "--reason",
            "not on a Sunday",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let left = show(dir, id)["required_action"]["items"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["call_id"], "call_q");

    // The client's output resolves the last item and the run finishes.
    let out = output(
        &[
            "submit", id, "--call", "call_q", "--output", "Tuesday", "--json",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let last = lines(&out).pop().unwrap();
    assert_eq!(last["status"], "completed");
    assert!(launches(dir).is_empty(), "a denied call never runs");
    let recs = records(dir, id);
    let statuses: Vec<(&str, &str)> = recs
        .iter()
        .map(|r| (r["tool"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert!(statuses.contains(&("launch", "denied")), "{statuses:?}");
    assert!(statuses.contains(&("ask_user", "client")), "{statuses:?}");
    let denied = recs.iter().find(|r| r["tool"] == "launch").unwrap();
    assert!(
        denied["error_message"]
            .as_str()
            .unwrap()
            .contains("not on a Sunday")
    );
    let conversation = last["conversation_id"].as_str().unwrap();
    let stats = output(&["stats", "--conversation", conversation, "--json"], dir);
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["total_calls"], 2);
    assert_eq!(stats["denied_calls"], 1);
    assert_eq!(stats["client_calls"], 1);
    // The client's call is left out of the rate: of the one call toolgate decided, none succeeded.
    assert_eq!(stats["success_rate"], 0.0);
}

#[test]
fn killed_during_an_approved_call_resumes_without_running_it_again() {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    let run = paused_run(dir);
    let id = run["id"].as_str().unwrap();
    let mut approver = spawn(&["approve", id, "--call", "call_l"], dir, "30");
    wait_for("the call to start", || launches(dir).len() == 1);
    approver.kill().unwrap();
    approver.wait().unwrap();
    assert_eq!(show(dir, id)["status"], "in_progress");

    let out = output(&["resume", id, "--json"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lines(&out).pop().unwrap()["status"], "completed");
    assert_eq!(launches(dir), ["call_l"], "the approved call ran once");
    let recs = records(dir, id);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["status"], "failed");
    assert_eq!(recs[0]["error_kind"], "interrupted");
    assert!(
        recs[0]["error_message"]
            .as_str()
            .unwrap()
            .contains("outcome is unknown")
    );
}

#[test]
fn of_two_concurrent_resumes_exactly_one_wins() {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    let run = paused_run(dir);
    let id = run["id"].as_str().unwrap();
    let out = output(&["approve", id, "--call", "call_l", "--no-resume"], dir);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(launches(dir).is_empty());
    let a = spawn(&["resume", id], dir, "2");
    let b = spawn(&["resume", id], dir, "2");
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let mut codes = [a.status.code(), b.status.code()];
    codes.sort();
    assert_eq!(codes, [Some(0), Some(1)], "{} / {}", stderr(&a), stderr(&b));
    let loser = if a.status.code() == Some(1) { &a } else { &b };
    let message = stderr(loser);
    assert!(
        message.contains("being continued by another process") || message.contains("is completed"),
        "{message}"
    );
    assert_eq!(launches(dir), ["call_l"]);
    assert_eq!(show(dir, id)["status"], "completed");
}

#[test]
fn a_paused_run_can_be_cancelled() {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    let run = paused_run(dir);
    let id = run["id"].as_str().unwrap();
    let out = output(&["cancel", id], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(show(dir, id)["status"], "cancelled");
    let out = output(&["approve", id], dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not waiting"), "{}", stderr(&out));
    let listed = output(&["runs", "--status", "cancelled"], dir);
    assert!(String::from_utf8_lossy(&listed.stdout).contains(id));
    let bad = output(&["runs", "--status", "paused"], dir);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn broken_inputs_give_one_clear_line() {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    std::fs::write(dir.join("bad.yaml"), "name: x\nmode: fast\n").unwrap();
    let out = output(&["run", "--agent", "bad.yaml", "hi"], dir);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.yaml:2") && err.contains("mode"), "{err}");
    let out = output(
        &[
            "run",
            "--agent",
            "agent.yaml",
            "--model",
            "openai:gpt-4o-mini",
            "hi",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("OPENAI_API_KEY"), "{}", stderr(&out));
    let out = output(
        &[
            "run",
            "--agent",
            "agent.yaml",
            "--model",
            "scripted:nope.yaml",
            "hi",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope.yaml"), "{}", stderr(&out));
}

/// The demo on its own SQLite file, and on a PostgreSQL database `TOOLGATE_DB` names.
#[test]
fn the_readme_demo_runs_end_to_end() {
    for db in [None, Some(crate::databases::fresh_postgres_database())] {
        readme_demo(db.as_deref());
    }
}

fn readme_demo(db: Option<&str>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut demo = Command::new("bash");
    demo.arg("examples/demo.sh")
        .current_dir(root)
        .env("TOOLGATE_BIN", toolgate_test_support::bin())
        .env_remove("OPENAI_API_KEY")
        .env_remove("TOOLGATE_DB")
        .stdin(Stdio::null());
    if let Some(url) = db {
        demo.env("TOOLGATE_DB", url);
    }
    let out = demo.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "on {db:?}: {stdout}\n{}",
        stderr(&out)
    );
    for needle in [
        "paused: 2 item(s) wait",
        "$ toolgate approve",
        "$ toolgate submit",
        "completed after 3 model turn(s)",
        "calls:    3 (2 succeeded",
        "runs:     1 (3 model call(s), 855 tokens: 752 prompt + 103 completion)",
        "result.txt: 2+3*4 = 14",
    ] {
        assert!(stdout.contains(needle), "{needle} missing from:\n{stdout}");
    }
    let err = stderr(&out);
    assert!(
        err.contains("running calculator") && err.contains("running write_file"),
        "{err}"
    );
}

#[test]
fn on_a_terminal_the_call_is_asked_right_there() {
    // `script` (util-linux, on every Debian) gives the process a terminal.
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    let line = format!(
        "{} run --agent agent.yaml 'Launch'",
        toolgate_test_support::bin()
    );
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(dir)
        .env_remove("TOOLGATE_DB")
        .env("LAUNCH_SLEEP", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"e\n{\"target\": \"mars\"}\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("wants to run launch"), "{text}");
    assert!(
        text.contains("\"target\": \"moon\""),
        "the call is shown readably: {text}"
    );
    assert!(text.contains("Launch handled."), "{text}");
    assert_eq!(launches(dir), ["call_l"]);
    let runs = output(&["runs", "--json"], dir);
    let id = String::from_utf8_lossy(&runs.stdout)
        .split("\"id\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let recs = records(dir, &id);
    assert_eq!(
        recs[0]["arguments"]["target"], "mars",
        "the edited arguments ran"
    );
}

#[test]
fn prompt_shows_an_agents_system_prompt() {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    std::fs::write(
        dir.join("agent.yaml"),
        format!("{AGENT}instructions: You launch things.\n"),
    )
    .unwrap();
    let out = output(&["prompt", "--agent", "agent.yaml"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("You launch things.\n\n"), "{text}");
    assert!(text.contains("<tool_call>") && text.contains("launch") && text.contains("ask_user"));
    let out = output(&["prompt", "--agent", "agent.yaml", "--openai"], dir);
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["launch", "ask_user"]);
}

/// A run whose `launch` is AUTO, started with `--json` and caught inside the call
/// (which takes `sleep` seconds).
fn running_auto_launch(sleep: &str) -> (TempDir, Child) {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    std::fs::write(
        dir.join("agent.yaml"),
        format!("{AGENT}permissions: {{launch: auto}}\n"),
    )
    .unwrap();
    let running = spawn(
        &["run", "--agent", "agent.yaml", "--json", "go"],
        dir,
        sleep,
    );
    wait_for("the call to start", || launches(dir).len() == 1);
    (w, running)
}

#[test]
fn a_run_cancelled_while_it_runs_stops_before_the_next_model_turn() {
    let (w, running) = running_auto_launch("2");
    let dir = w.path();
    let runs = output(&["runs", "--status", "in_progress", "--json"], dir);
    let listed: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_string();
    let out = output(&["cancel", &id], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = running.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let events = lines(&out);
    assert_eq!(events.last().unwrap()["status"], "cancelled");
    assert!(events.iter().any(|e| e["type"] == "run.cancelled"));
    assert!(!events.iter().any(|e| e["type"] == "run.completed"));
    let run = show(dir, &id);
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["iteration"], 1, "the model was not asked again");
}

#[test]
fn a_read_only_call_cut_short_by_a_crash_simply_runs_again() {
    let w = world(ONE_LAUNCH);
    let dir = w.path();
    let tool = LAUNCH
        .replace("permission: confirm", "permission: auto")
        .replace("timeout: 120", "timeout: 120\nread_only: true");
    std::fs::write(dir.join("tools/launch.yaml"), tool).unwrap();
    let mut running = spawn(&["run", "--agent", "agent.yaml", "go"], dir, "30");
    wait_for("the call to start", || launches(dir).len() == 1);
    running.kill().unwrap();
    running.wait().unwrap();
    let runs = output(&["runs", "--json"], dir);
    let listed: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_string();
    let out = output(&["resume", &id], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Nothing fenced it: it ran again, and this time it was recorded.
    assert_eq!(launches(dir).len(), 2);
    let recs = records(dir, &id);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["status"], "succeeded");
}

#[test]
fn ctrl_c_stops_the_run_cleanly_and_resume_finishes_it() {
    let (w, running) = running_auto_launch("30");
    let dir = w.path();
    let signal = Command::new("kill")
        .args(["-INT", &running.id().to_string()])
        .status()
        .unwrap();
    assert!(signal.success());
    let out = running.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    let run = lines(&out).pop().unwrap();
    assert_eq!(run["status"], "failed");
    assert!(
        run["last_error"]
            .as_str()
            .unwrap()
            .contains("toolgate resume")
    );
    let id = run["id"].as_str().unwrap();
    let recs = records(dir, id);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["status"], "cancelled");
    let out = output(&["resume", id], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(show(dir, id)["status"], "completed");
    assert_eq!(launches(dir).len(), 1, "a cancelled call is not run again");
}

/// An approver racing resumers never exits 1 once its decision is recorded: it either
/// continues the run itself or says that another process did.
#[test]
fn an_approver_racing_resumers_says_what_happened() {
    for _ in 0..4 {
        let dir = world(ONE_LAUNCH);
        let d = dir.path();
        let id = paused_run(d)["id"].as_str().unwrap().to_string();
        let mut resumers: Vec<Child> = (0..6).map(|_| spawn(&["resume", &id], d, "1")).collect();
        let approver = spawn(&["approve", &id], d, "1").wait_with_output().unwrap();
        for r in resumers.iter_mut() {
            r.wait().unwrap();
        }
        assert!(
            matches!(approver.status.code(), Some(0) | Some(3)),
            "the approver's decision was recorded, yet it exited {:?}: {}",
            approver.status.code(),
            stderr(&approver)
        );
        // Whoever continued it, the run ends and the call ran once.
        let mut run = show(d, &id);
        for _ in 0..100 {
            if run["status"] == "completed" {
                break;
            }
            // A resumer may have been refused while the approver's decision was not in
            // yet, and the approver then lost the race to none: continue it now.
            if run["status"] == "requires_action" || run["status"] == "failed" {
                output(&["resume", &id], d);
            }
            std::thread::sleep(Duration::from_millis(50));
            run = show(d, &id);
        }
        assert_eq!(run["status"], "completed", "{run}");
        assert_eq!(launches(d).len(), 1);
    }
}
