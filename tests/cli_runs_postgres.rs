//! Runs across processes on one PostgreSQL database, through the binary (`--db
//! postgres://...`): a run paused in one process is seen and approved in others, a
//! process killed during the approved call leaves a run that resumes without running
//! it again, and of two processes resuming one run exactly one wins.
//!
//! Continuing a run expires its approval deadlines first (`expire_due`), and one cut
//! short reads its call records (`calls`), built on PostgreSQL by other parts of the
//! backend: until they are, the tests that continue a run are ignored.

use std::path::Path;
use std::process::{Child, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use crate::databases::TestDb;
use crate::launching::{LAUNCH, command, launches, stderr, wait_for};

const AGENT: &str = "name: launcher\nmodel: scripted:replies.yaml\ntools: [launch]\nworkspace: .\n";

const ONE_LAUNCH: &str = "replies:\n  - content: Launching.\n    tool_calls: [{id: call_l, name: launch, arguments: {target: moon}}]\n  - content: Launch handled.\n";

/// A folder with the agent, its `launch` tool and its scripted replies, and a new
/// PostgreSQL database.
fn world() -> (TempDir, TestDb) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(dir.path().join("tools/launch.yaml"), LAUNCH).unwrap();
    std::fs::write(dir.path().join("agent.yaml"), AGENT).unwrap();
    std::fs::write(dir.path().join("replies.yaml"), ONE_LAUNCH).unwrap();
    (dir, TestDb::postgres())
}

/// `toolgate --db DB ARGS` in `dir`, started (`launch` taking `sleep` seconds).
fn spawn(db: &TestDb, args: &[&str], dir: &Path, sleep: &str) -> Child {
    let mut all = vec!["--db", db.arg()];
    all.extend_from_slice(args);
    command(&all, dir, sleep)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `toolgate --db DB ARGS` in `dir`, to its end.
fn cli(db: &TestDb, args: &[&str], dir: &Path) -> Output {
    spawn(db, args, dir, "0").wait_with_output().unwrap()
}

/// The run object of `show ID --json`.
fn show(db: &TestDb, dir: &Path, id: &str) -> Value {
    let out = cli(db, &["show", id, "--json"], dir);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

/// Starts the run; the run object it paused with (exit code 3 checked).
fn paused_run(db: &TestDb, dir: &Path) -> Value {
    let out = cli(
        db,
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
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    serde_json::from_str(&last).unwrap()
}

#[test]
fn paused_in_one_process_approved_in_another_on_postgres() {
    let (w, db) = world();
    let dir = w.path();
    let run = paused_run(&db, dir);
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["status"], "requires_action");
    assert_eq!(run["required_action"]["items"][0]["call_id"], "call_l");
    assert!(launches(dir).is_empty());
    // Nothing of the database is a file here.
    assert!(!dir.join("toolgate.db").exists());

    // Another process sees the same pause; a third approves, and the run goes on there.
    assert_eq!(show(&db, dir, &id), run);
    let out = cli(&db, &["approve", &id, "--call", "call_l"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Launch handled."));
    assert_eq!(launches(dir), ["call_l"]);
    let done = show(&db, dir, &id);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"], "Launch handled.");
    assert!(done["required_action"].is_null());

    // A finished run takes no more decisions and does not resume.
    let again = cli(&db, &["resume", &id], dir);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("completed"), "{}", stderr(&again));
}

#[test]
fn killed_during_an_approved_call_resumes_without_running_it_again_on_postgres() {
    let (w, db) = world();
    let dir = w.path();
    let run = paused_run(&db, dir);
    let id = run["id"].as_str().unwrap();
    let mut approver = spawn(&db, &["approve", id, "--call", "call_l"], dir, "30");
    wait_for("the call to start", || launches(dir).len() == 1);
    approver.kill().unwrap();
    approver.wait().unwrap();
    assert_eq!(show(&db, dir, id)["status"], "in_progress");

    // The dead approver's lease is waited out, then the run goes on without the call.
    let out = cli(&db, &["resume", id], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(show(&db, dir, id)["status"], "completed");
    assert_eq!(launches(dir), ["call_l"], "the approved call ran once");
}

#[test]
fn of_two_concurrent_resumes_exactly_one_wins_on_postgres() {
    let (w, db) = world();
    let dir = w.path();
    let run = paused_run(&db, dir);
    let id = run["id"].as_str().unwrap();
    let out = cli(
        &db,
        &["approve", id, "--call", "call_l", "--no-resume"],
        dir,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(launches(dir).is_empty());
    let a = spawn(&db, &["resume", id], dir, "2");
    let b = spawn(&db, &["resume", id], dir, "2");
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
    assert_eq!(show(&db, dir, id)["status"], "completed");
}

#[test]
fn a_run_pauses_on_postgres_and_its_decision_is_recorded_from_another_process() {
    let (w, db) = world();
    let dir = w.path();
    let run = paused_run(&db, dir);
    let id = run["id"].as_str().unwrap();
    assert_eq!(show(&db, dir, id), run);
    let out = cli(
        &db,
        &["approve", id, "--call", "call_l", "--no-resume"],
        dir,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(launches(dir).is_empty());
    // Decided: the item waits no more; the run waits to be continued.
    let shown = show(&db, dir, id);
    assert_eq!(shown["status"], "requires_action");
    assert_eq!(shown["required_action"]["items"], serde_json::json!([]));
    // A second decision of the same item is refused.
    let again = cli(&db, &["deny", id, "--call", "call_l"], dir);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    // Cancelled from yet another process.
    let out = cli(&db, &["cancel", id], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(show(&db, dir, id)["status"], "cancelled");
}
