//! toolgate as an MCP server, against the official `mcp` Python SDK client, unmodified:
//! tests/py/setup.sh makes its venv (these tests fail, never skip, when it cannot), and
//! tests/py/test_mcp_gateway.py drives `toolgate mcp` over stdio (list, AUTO calls,
//! errors, `never`, CONFIRM by elicitation, CONFIRM held and approved from another
//! process, a held call that times out, a held call cancelled when its client leaves) and `toolgate
//! serve`'s `/mcp/{agent}` (401 without the bearer key; AUTO, `never`, CONFIRM by
//! elicitation over SSE, CONFIRM held and denied through the HTTP run API). Then every
//! call is looked up in `toolgate calls --json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const KEY: &str = "mcp-test-key";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/mcp")
}

/// Runs the SDK script; returns the JSON object of its last line.
fn sdk(python: &Path, args: &[&str]) -> Value {
    let out = Command::new(python)
        .arg(root().join("tests/py/test_mcp_gateway.py"))
        .args(args)
        .env_remove("TOOLGATE_DB")
        .stderr(Stdio::inherit())
        .output()
        .expect("the venv's python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tests/py/test_mcp_gateway.py {args:?} failed ({}); stdout: {stdout}",
        out.status
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the SDK script's last line is not JSON ({e}): {stdout}"))
}

/// `toolgate calls --json` on `db`: every record.
fn calls(db: &Path) -> Vec<Value> {
    let out = Command::new(toolgate_test_support::bin())
        .args(["calls", "--json", "--limit", "1000", "--db"])
        .arg(db)
        .env_remove("TOOLGATE_DB")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "toolgate calls failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    page["calls"].as_array().cloned().unwrap_or_default()
}

/// (tool, status) of each record, in order.
fn outcomes(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or_default().to_string(),
                c["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn pair(tool: &str, status: &str) -> (String, String) {
    (tool.to_string(), status.to_string())
}

#[test]
fn the_mcp_python_sdk_uses_an_agents_tools_through_toolgate_mcp() {
    let python = serving::python("the MCP gateway test");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let db = dir.path().join("toolgate.db");
    let out = sdk(
        &python,
        &[
            "stdio",
            toolgate_test_support::bin(),
            db.to_str().unwrap(),
            fixtures().join("agents/gateway.yaml").to_str().unwrap(),
            fixtures().join("tools").to_str().unwrap(),
            ws.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out["listed"],
        serde_json::json!(["calculator", "echo", "read_file", "write_file"])
    );

    let records = calls(&db);
    let seen = outcomes(&records);
    // Every call the client made is recorded, in order, as the gate and engine ended it
    // (the definition-only ask_user is refused before any run, so it has no record).
    assert_eq!(
        seen,
        vec![
            pair("calculator", "succeeded"),
            pair("echo", "succeeded"),
            pair("calculator", "failed"),
            pair("no_such_tool", "failed"),
            pair("shell", "denied"),
            pair("calculator", "failed"),
            pair("write_file", "succeeded"),
            pair("write_file", "denied"),
            pair("write_file", "succeeded"),
            pair("write_file", "denied"),
            pair("echo", "succeeded"),
            pair("write_file", "cancelled"),
        ],
        "records: {records:#?}"
    );
    for r in &records {
        assert_eq!(r["agent"], "gateway", "{r}");
        assert!(r["run_id"].as_str().unwrap().starts_with("run_"), "{r}");
        assert!(
            r["conversation_id"]
                .as_str()
                .unwrap()
                .starts_with("conv_mcp_"),
            "{r}"
        );
    }
    // One conversation per MCP session: five sessions.
    let conversations: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r["conversation_id"].as_str().unwrap())
        .collect();
    assert_eq!(conversations.len(), 5, "{conversations:?}");
    assert_eq!(records[7]["error_kind"], "denied", "{}", records[7]);
    assert!(
        records[9]["error_message"]
            .as_str()
            .unwrap()
            .contains("not approved within 2s"),
        "{}",
        records[9]
    );
    // The held call ran in the run the other process approved.
    assert_eq!(records[8]["run_id"], out["held_run"]);
    // Held when its client went away: cancelled with it, never run (the later approval
    // was refused).
    assert_eq!(records[11]["run_id"], out["restart_run"]);
    assert_eq!(records[11]["error_kind"], "cancelled", "{}", records[11]);
}

/// A running `toolgate serve`, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path) -> Server {
    let mut cmd = Command::new(toolgate_test_support::bin());
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--agents"])
        .arg(fixtures().join("agents"))
        .arg("--tools")
        .arg(fixtures().join("tools"))
        .arg("--db")
        .arg(dir.join("toolgate.db"))
        .arg("--workspace")
        .arg(dir.join("ws"))
        .env("TOOLGATE_API_KEY", KEY)
        .env_remove("TOOLGATE_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let (child, url) = serving::listen(&mut cmd);
    Server { child, url }
}

#[test]
fn the_mcp_python_sdk_reaches_an_agent_at_mcp_of_toolgate_serve_with_the_key() {
    let python = serving::python("the MCP gateway test");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let server = serve(dir.path());
    let out = sdk(
        &python,
        &["http", &format!("{}/mcp/gateway", server.url), KEY],
    );
    assert_eq!(out["without_key"], 401);
    assert_eq!(
        out["listed"],
        serde_json::json!(["calculator", "echo", "read_file", "write_file"])
    );
    // An unknown agent is the API's 404, with the key.
    let status = Command::new(&python)
        .arg("-c")
        .arg(format!(
            "import httpx2,sys; r=httpx2.post('{}/mcp/nobody', json={{}}, headers={{'Authorization': 'Bearer {KEY}'}}); print(r.status_code)",
            server.url
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout).trim(), "404");
    drop(server);
    let seen = outcomes(&calls(&dir.path().join("toolgate.db")));
    assert_eq!(
        seen,
        vec![
            pair("calculator", "succeeded"),
            pair("shell", "denied"),
            pair("write_file", "succeeded"),
            pair("write_file", "denied"),
        ]
    );
    let ws = dir.path().join("ws");
    assert_eq!(
        std::fs::read_to_string(ws.join("over_http.txt")).unwrap(),
        "elicited"
    );
    assert!(!ws.join("never_written.txt").exists());
}

#[test]
fn toolgate_mcp_ends_quietly_when_its_client_stops_reading() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(toolgate_test_support::bin())
        .arg("mcp")
        .arg("--agent")
        .arg(fixtures().join("agents/gateway.yaml"))
        .arg("--tools")
        .arg(fixtures().join("tools"))
        .arg("--db")
        .arg(dir.path().join("toolgate.db"))
        .env_remove("TOOLGATE_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "toolgate", "{line}");
    // The client stops reading but keeps stdin open and goes on asking.
    drop(reader);
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    let mut ended = None;
    for _ in 0..600 {
        let _ = writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#);
        if let Some(status) = child.try_wait().unwrap() {
            ended = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some(status) = ended else {
        let _ = child.kill();
        panic!("toolgate mcp went on after its stdout closed");
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert_eq!(stderr, "", "a closed stdout is not an error");
}
