//! A tool's program dies with its call, and so does everything it started: a
//! `command` entry and the `shell` built-in, each with a grandchild that would touch a
//! marker file one second later, are cancelled, timed out, dropped, or interrupted
//! with Ctrl-C (once, and twice), `kill -9` of toolgate itself, or `toolgate cancel` (a
//! lost lease) through the
//! binary; once the grandchild's time has passed, the marker must not exist (issue
//! 11, item 7).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolgate_test_support::alive_with;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolgate::engine::{Cancel, Engine, EngineConfig, call, prepare};
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::tool::{ToolContext, ToolLibrary, workspace};

/// A shell line whose background grandchild touches `marker` after one second, while
/// the program itself waits on.
fn late_touch(marker: &Path) -> String {
    format!("(sleep 1; touch '{}') & sleep 30", marker.display())
}

/// Waits long enough for a surviving grandchild to have done its work, then checks.
fn assert_never_touched(marker: &Path) {
    std::thread::sleep(Duration::from_secs(2));
    check_untouched(marker);
}

/// The same, without blocking the runtime (a dropped call's task still gets to end).
async fn never_touched(marker: &Path) {
    tokio::time::sleep(Duration::from_secs(2)).await;
    check_untouched(marker);
}

fn check_untouched(marker: &Path) {
    assert!(
        !marker.exists(),
        "the program's grandchild outlived the call and touched {}",
        marker.display()
    );
}

/// A library with one `command` tool (`sh -c LINE`), and `timeout` if given.
fn command_tool(dir: &Path, line: &str, timeout: Option<f64>) -> ToolLibrary {
    let timeout = timeout
        .map(|t| format!("timeout: {t}\n"))
        .unwrap_or_default();
    let yaml = format!(
        "name: slow\ndescription: x\n{timeout}entry:\n  type: command\n  command: sh\n  args: [\"-c\", {}]\n",
        serde_json::to_string(line).unwrap()
    );
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("slow.yaml"), yaml).unwrap();
    let lib = ToolLibrary::load(&tools, &toolgate::tool::sources::standard()).unwrap();
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    lib
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(workspace::canonical_root(dir).unwrap())
}

/// Runs `tool` through the engine and cancels the batch after 300 ms.
async fn cancelled_in_engine(lib: &ToolLibrary, tool: &str, a: Value, dir: &Path) {
    let engine = Engine::new(
        EngineConfig {
            workspace: dir.to_path_buf(),
            ..EngineConfig::default()
        },
        None,
    );
    let cancel = Cancel::new();
    let stopper = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        })
    };
    let loaded = lib.get(tool).cloned().ok_or("no tool");
    let batch = vec![prepare(
        call("c1", tool, args(a)),
        loaded.map_err(|e| toolgate::tool::ToolError::Execution(e.into())),
        "conv",
        CallerKind::Agent,
    )];
    let started = Instant::now();
    let out = engine.execute_batch(batch, &cancel).await;
    stopper.await.unwrap();
    assert_eq!(out[0].status, CallStatus::Cancelled, "{:?}", out[0].result);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_cancelled_command_call_takes_its_grandchild_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("MARKER");
    let lib = command_tool(dir.path(), &late_touch(&marker), None);
    cancelled_in_engine(&lib, "slow", json!({}), dir.path()).await;
    never_touched(&marker).await;
}

#[tokio::test]
async fn a_timed_out_command_call_takes_its_grandchild_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("MARKER");
    let lib = command_tool(dir.path(), &late_touch(&marker), Some(0.3));
    let err = lib
        .get("slow")
        .unwrap()
        .invoke(&ctx(dir.path()), args(json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "timeout");
    never_touched(&marker).await;
}

#[tokio::test]
async fn a_dropped_command_call_takes_its_grandchild_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("MARKER");
    let lib = command_tool(dir.path(), &late_touch(&marker), None);
    let tool = lib.get("slow").unwrap().clone();
    let c = ctx(dir.path());
    // The caller gives up on the future: it is dropped mid-call.
    let gave_up =
        tokio::time::timeout(Duration::from_millis(300), tool.invoke(&c, args(json!({})))).await;
    assert!(gave_up.is_err());
    never_touched(&marker).await;
}

#[tokio::test]
async fn a_cancelled_shell_call_takes_its_grandchild_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("MARKER");
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    cancelled_in_engine(
        &lib,
        "shell",
        json!({"command": late_touch(&marker)}),
        dir.path(),
    )
    .await;
    never_touched(&marker).await;
}

#[tokio::test]
async fn a_timed_out_shell_call_takes_its_grandchild_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("MARKER");
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let err = lib
        .get("shell")
        .unwrap()
        .invoke(
            &ctx(dir.path()),
            args(json!({"command": late_touch(&marker), "timeout": 0.3})),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "timeout");
    never_touched(&marker).await;
}

#[tokio::test]
async fn a_finished_call_leaves_a_detached_background_program_alone() {
    // Only a call cut short kills: a program that ends normally may leave a daemon
    // behind on purpose (its output redirected, so the call does not wait for it). It
    // lives on, though what was lent to the call (write access to the workspace, as
    // root) is taken back when the call ends: it is looked for in /proc, not by a file.
    let dir = tempfile::tempdir().unwrap();
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_micros();
    let nap = format!("{}.{micros:06}", 20 + std::process::id() % 50);
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let line = format!("sleep {nap} >/dev/null 2>&1 & echo started");
    let out = lib
        .get("shell")
        .unwrap()
        .invoke(&ctx(dir.path()), args(json!({"command": line})))
        .await
        .unwrap();
    assert_eq!(out.to_text().trim(), "started");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let alive = alive_with(&format!("sleep {nap}"));
    assert_eq!(alive.len(), 1, "the daemon was killed: {alive:?}");
    let pid: i32 = alive[0].split(':').next().unwrap().parse().unwrap();
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    );
}

/// A world for `toolgate run`: an agent whose AUTO `slow` command tool leaves a
/// grandchild behind, and a scripted model that calls it once.
fn world(marker: &Path) -> tempfile::TempDir {
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    let line = format!("echo started > started.txt; {}", late_touch(marker));
    command_tool(dir, &line, Some(120.0));
    std::fs::write(
        dir.join("agent.yaml"),
        "name: a\nmodel: scripted:replies.yaml\ntools: [slow]\npermissions: {slow: auto}\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("replies.yaml"),
        "replies:\n  - content: Working.\n    tool_calls: [{id: call_s, name: slow, arguments: {}}]\n  - content: Done.\n",
    )
    .unwrap();
    w
}

fn start_run(dir: &Path) -> Child {
    let child = Command::new(toolgate_test_support::bin())
        .args(["run", "--agent", "agent.yaml", "--json", "go"])
        .current_dir(dir)
        .env_remove("TOOLGATE_DB")
        .env_remove("TOOLGATE_TOOLS")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = dir.join("started.txt");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn interrupt(child: &Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
}

fn marker_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("MARKER")
}

/// `kill -9` of toolgate in the middle of a command call: no drop, no signal handler
/// runs, yet neither the program nor its grandchild lives on (the guard kills the
/// group), and the grandchild never touches its marker.
#[test]
fn kill_9_of_toolgate_during_a_command_call_leaves_no_process_behind() {
    let outside = tempfile::tempdir().unwrap();
    let marker = marker_in(&outside);
    let w = world(&marker);
    let mut running = start_run(w.path());
    running.kill().unwrap();
    running.wait().unwrap();
    let needle = marker.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !alive_with(&needle).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        alive_with(&needle),
        Vec::<String>::new(),
        "the tool's processes outlived toolgate's kill -9"
    );
    assert_never_touched(&marker);
}

#[test]
fn ctrl_c_during_a_command_call_takes_its_grandchild_with_it() {
    let outside = tempfile::tempdir().unwrap();
    let marker = marker_in(&outside);
    let w = world(&marker);
    let running = start_run(w.path());
    interrupt(&running);
    let out = running.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(last["status"], "failed");
    assert_never_touched(&marker);
}

#[test]
fn a_second_ctrl_c_that_quits_at_once_still_takes_the_grandchild() {
    let outside = tempfile::tempdir().unwrap();
    let marker = marker_in(&outside);
    let w = world(&marker);
    // The first Ctrl-C is handled, the second exits without unwinding; a slow exit
    // path would let the first one finish the job, so both come back to back.
    let running = start_run(w.path());
    interrupt(&running);
    std::thread::sleep(Duration::from_millis(5));
    interrupt(&running);
    let out = running.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert_never_touched(&marker);
}

#[test]
fn toolgate_cancel_during_a_command_call_takes_its_grandchild_with_it() {
    // `toolgate cancel` from another process: the running one learns it (within a
    // second), its lease is gone, and it cancels the call. The grandchild would act
    // 4 s after the call started.
    let outside = tempfile::tempdir().unwrap();
    let marker = marker_in(&outside);
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    let line = format!(
        "echo started > started.txt; (sleep 4; touch '{}') & sleep 60",
        marker.display()
    );
    command_tool(dir, &line, Some(120.0));
    std::fs::write(
        dir.join("agent.yaml"),
        "name: a\nmodel: scripted:replies.yaml\ntools: [slow]\npermissions: {slow: auto}\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("replies.yaml"),
        "replies:\n  - content: Working.\n    tool_calls: [{id: call_s, name: slow, arguments: {}}]\n  - content: Done.\n",
    )
    .unwrap();
    let started = Instant::now();
    let running = start_run(dir);
    let toolgate = |args: &[&str]| {
        Command::new(toolgate_test_support::bin())
            .args(args)
            .current_dir(dir)
            .env_remove("TOOLGATE_DB")
            .output()
            .unwrap()
    };
    let runs: Value =
        serde_json::from_slice(&toolgate(&["runs", "--status", "in_progress", "--json"]).stdout)
            .unwrap();
    let id = runs[0]["id"].as_str().unwrap().to_string();
    assert!(toolgate(&["cancel", &id]).status.success());
    let out = running.wait_with_output().unwrap();
    assert!(!out.status.success());
    let noticed = started.elapsed();
    assert!(
        noticed < Duration::from_secs(3),
        "noticed after {noticed:?}"
    );
    std::thread::sleep(Duration::from_secs(6).saturating_sub(started.elapsed()));
    check_untouched(&marker);
}

/// The guard is in the library's process runner itself: tools written in Rust that
/// start programs through it get the same.
#[tokio::test]
async fn process_run_dropped_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("MARKER");
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(late_touch(&marker));
    let run = toolgate::tool::process::run(cmd, b"", Duration::from_secs(30), 1024);
    let task = tokio::spawn(run);
    tokio::time::sleep(Duration::from_millis(300)).await;
    task.abort();
    let _ = task.await;
    never_touched(&marker).await;
}

/// `toolgate tools call` of a command tool with this line, in `dir`, to its end.
fn tools_call(dir: &Path, line: &str) -> std::process::Output {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let yaml = format!(
        "name: bg\ndescription: x\ntimeout: 60\nentry:\n  type: command\n  command: sh\n  args: [\"-c\", {}]\n",
        serde_json::to_string(line).unwrap()
    );
    std::fs::write(tools.join("bg.yaml"), yaml).unwrap();
    Command::new(toolgate_test_support::bin())
        .args(["tools", "call", "bg", "--tools"])
        .arg(&tools)
        .arg("--db")
        .arg(dir.join("t.db"))
        .current_dir(dir)
        .env_remove("TOOLGATE_DB")
        .env_remove("TOOLGATE_TOOLS")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A program a finished call left running on purpose lives on while toolgate does,
/// but not past it: once `toolgate tools call` has exited, its guard has killed it.
#[test]
fn a_daemon_a_finished_call_left_dies_with_toolgate() {
    let w = tempfile::tempdir().unwrap();
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_micros();
    let nap = format!("{}.{micros:06}", 40 + std::process::id() % 50);
    let out = tools_call(
        w.path(),
        &format!("sleep {nap} >/dev/null 2>&1 & echo started"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let needle = format!("sleep {nap}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !alive_with(&needle).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        alive_with(&needle),
        Vec::<String>::new(),
        "the daemon outlived toolgate"
    );
}

/// A sandboxed program cannot leave its process group (`setsid`, `setpgid` are
/// refused), so nothing it starts escapes the kill of a call cut short.
#[test]
fn a_sandboxed_program_cannot_leave_its_process_group() {
    let w = tempfile::tempdir().unwrap();
    let marker = w.path().join("MARKER");
    let out = tools_call(
        w.path(),
        &format!(
            "setsid sh -c 'sleep 1; touch {}' 2>&1; python3 -c 'import os; os.setpgid(0, 0)' 2>&1 | tail -1; echo done",
            marker.display()
        ),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("PermissionError") || text.contains("Permission denied"),
        "{text}"
    );
    assert_never_touched(&marker);
}
