//! One retry policy for every transport (`retry:` in a tool file or a source file),
//! against real peers: a FastAPI app (tests/py/flaky_api.py) that answers 503 and 429
//! (with `Retry-After`) or stalls on purpose, reached through its own OpenAPI document;
//! an `http` tool file whose port refuses connections; a server of the official MCP
//! Python SDK (tests/mcp/dropping_server.py) that drops the connection mid-call and is
//! started again before the retry. Each try is on the call's record (`calls --json`);
//! calls that are not safe to repeat run once.

use crate::serving;
use toolgate_test_support::toolgate;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The FastAPI app on a free port; killed when dropped.
pub(crate) struct Api {
    child: Child,
    pub(crate) port: u16,
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn start_api() -> Api {
    let python = serving::python("tests/tool_retries.rs");
    let port = free_port();
    let child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/flaky_api.py"))
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let api = Api { child, port };
    let start = Instant::now();
    while get(port, "/openapi.json").is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the API did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    api
}

/// How many requests the app has had for `key`.
pub(crate) fn hits(api: &Api, key: &str) -> u64 {
    let body = get(api.port, &format!("/hits/{key}")).unwrap();
    serde_json::from_str::<Value>(&body).unwrap()["hits"]
        .as_u64()
        .unwrap()
}

/// A folder whose tools/ holds `files`.
fn world(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// The app's document and an `openapi:` file over it with `retry`.
fn flaky_world(api: &Api, retry: &str) -> tempfile::TempDir {
    world(&[
        ("tools/flaky.json", get(api.port, "/openapi.json").unwrap()),
        (
            "tools/flaky.yaml",
            format!(
                "openapi: flaky.json\nname: flaky\nbase_url: http://127.0.0.1:{}\ntimeout: 1\n\
                 permissions: {{postItem: auto}}\nretry: {retry}\n",
                api.port
            ),
        ),
    ])
}

fn all(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `tools call TOOL --args ARGS` in conversation `conv`; its record from `calls --json`.
fn call_and_record(dir: &Path, tool: &str, args: Value, conv: &str) -> (Output, Value) {
    let out = toolgate(dir)
        .args(["tools", "call", tool, "--args", &args.to_string()])
        .args(["--conversation", conv, "--json"])
        .env("TOOLGATE_HTTP_ALLOW", "127.0.0.1")
        .output()
        .unwrap();
    let listed = toolgate(dir)
        .args(["calls", "--conversation", conv, "--json"])
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&listed.stdout).unwrap_or_else(|e| panic!("{e}: {}", all(&listed)));
    let calls = v["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{v}");
    (out, calls[0].clone())
}

/// The outcome of each try on a record.
fn outcomes(record: &Value) -> Vec<String> {
    record["attempts"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["outcome"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn openapi_calls_are_retried_on_5xx_and_429_honouring_retry_after() {
    let api = start_api();
    let w = flaky_world(
        &api,
        "{attempts: 3, backoff: 50ms, on: [429, 5xx, timeout]}",
    );
    let d = w.path();

    // Two 503s, then the answer: three tries, each on the record.
    let (out, rec) = call_and_record(d, "flaky__getItem", json!({"key": "a", "fail": 2}), "c1");
    assert!(out.status.success(), "{}", all(&out));
    assert_eq!(rec["status"], "succeeded", "{rec}");
    assert_eq!(outcomes(&rec), ["5xx", "5xx", "succeeded"], "{rec}");
    assert!(
        rec["attempts"][0]["error"]
            .as_str()
            .unwrap()
            .contains("503"),
        "{rec}"
    );
    assert_eq!(
        rec["attempts"][1]["wait_ms"], 100.0,
        "the backoff doubles: {rec}"
    );
    assert_eq!(hits(&api, "a"), 3);

    // A 429 with Retry-After: 1 waits that second, not the 50 ms backoff.
    let start = Instant::now();
    let (out, rec) = call_and_record(
        d,
        "flaky__getItem",
        json!({"key": "b", "fail": 1, "status": 429, "retry_after": "1"}),
        "c2",
    );
    assert!(out.status.success(), "{}", all(&out));
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert_eq!(outcomes(&rec), ["429", "succeeded"], "{rec}");
    assert_eq!(rec["attempts"][0]["wait_ms"], 1000.0, "{rec}");

    // Failing past the attempts: the last try's result, every try recorded.
    let (out, rec) = call_and_record(d, "flaky__getItem", json!({"key": "c", "fail": 9}), "c3");
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert_eq!(rec["status"], "failed", "{rec}");
    assert_eq!(outcomes(&rec), ["5xx", "5xx", "5xx"], "{rec}");
    assert_eq!(hits(&api, "c"), 3);

    // A 404 is not a failure to retry.
    let (_, rec) = call_and_record(
        d,
        "flaky__getItem",
        json!({"key": "d", "fail": 1, "status": 404}),
        "c4",
    );
    assert_eq!(rec["status"], "failed", "{rec}");
    assert!(rec.get("attempts").is_none(), "{rec}");
    assert_eq!(hits(&api, "d"), 1);

    // A stalled first answer is a timeout, tried again.
    let (out, rec) = call_and_record(d, "flaky__getSlow", json!({"key": "e", "sleep": 3}), "c5");
    assert!(out.status.success(), "{}", all(&out));
    assert_eq!(outcomes(&rec), ["timeout", "succeeded"], "{rec}");
}

#[test]
fn a_call_that_is_not_safe_to_repeat_runs_once_unless_declared_idempotent() {
    let api = start_api();
    let w = flaky_world(&api, "{attempts: 3, backoff: 0}");
    let (_, rec) = call_and_record(
        w.path(),
        "flaky__postItem",
        json!({"key": "p", "fail": 1}),
        "c1",
    );
    assert_eq!(rec["status"], "failed", "a POST is not retried: {rec}");
    assert!(rec.get("attempts").is_none(), "{rec}");
    assert_eq!(hits(&api, "p"), 1);

    let w = flaky_world(&api, "{attempts: 3, backoff: 0, idempotent: true}");
    let (out, rec) = call_and_record(
        w.path(),
        "flaky__postItem",
        json!({"key": "q", "fail": 1}),
        "c1",
    );
    assert!(out.status.success(), "{}", all(&out));
    assert_eq!(outcomes(&rec), ["5xx", "succeeded"], "{rec}");
    assert_eq!(hits(&api, "q"), 2);
}

#[test]
fn an_http_tool_file_retries_a_refused_connection_and_a_bad_policy_names_its_key() {
    let port = free_port();
    let tool = format!(
        "name: ping\ndescription: Ping.\nread_only: true\n\
         entry: {{type: http, url: \"http://127.0.0.1:{port}/\", allow_hosts: [\"127.0.0.1\"]}}\n\
         retry: {{attempts: 2, backoff: 10ms, on: [connect]}}\n"
    );
    let w = world(&[("tools/ping.yaml", tool.clone())]);
    let (out, rec) = call_and_record(w.path(), "ping", json!({}), "c1");
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert_eq!(outcomes(&rec), ["connect", "connect"], "{rec}");

    let bad = tool.replace("on: [connect]", "on: [teapot]");
    let w = world(&[("tools/ping.yaml", bad)]);
    let out = toolgate(w.path())
        .args(["tools", "check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    let text = all(&out);
    assert!(
        text.contains("ping.yaml:5") && text.contains("teapot"),
        "{text}"
    );
}

/// The dropping MCP server declared with `retry`.
fn dropping(retry: &str) -> tempfile::TempDir {
    let python = serving::python("tests/tool_retries.rs");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/dropping_server.py");
    world(&[(
        "tools/dropping.yaml",
        format!(
            "mcp_server: dropping\ncommand: {}\nargs: ['{}']\ntimeout: 30s\nretry: {retry}\n",
            python.display(),
            server.display()
        ),
    )])
}

#[test]
fn an_mcp_server_that_drops_mid_call_is_started_again_and_a_read_only_call_retried() {
    let w = dropping("{attempts: 2, backoff: 0, on: [connect]}");
    let d = w.path();
    let (out, rec) = call_and_record(d, "dropping__lookup", json!({"key": "k"}), "c1");
    assert!(out.status.success(), "{}", all(&out));
    assert_eq!(rec["status"], "succeeded", "{rec}");
    assert_eq!(outcomes(&rec), ["connect", "succeeded"], "{rec}");
    // The first process noted its pid and dropped; a second one answered.
    let first_pid = std::fs::read_to_string(d.join("dropped-lookup.txt")).unwrap();
    let answer = rec["result"].as_str().unwrap();
    let pid = answer
        .split("found k in process ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .unwrap_or_else(|| panic!("{rec}"));
    assert_ne!(pid, first_pid.trim(), "a new server process: {rec}");

    // A write is not repeated: the dropped call fails, as without a policy.
    let (_, rec) = call_and_record(d, "dropping__store", json!({"key": "k"}), "c2");
    assert_eq!(rec["status"], "failed", "{rec}");
    assert_eq!(rec["error_kind"], "server_unavailable", "{rec}");
    assert!(rec.get("attempts").is_none(), "{rec}");
}

#[test]
fn the_tries_are_kept_by_both_store_backends_for_runs_and_single_calls() {
    let port = free_port();
    let tool = format!(
        "name: ping\ndescription: Ping.\nread_only: true\n\
         entry: {{type: http, url: \"http://127.0.0.1:{port}/\", allow_hosts: [\"127.0.0.1\"]}}\n\
         retry: {{attempts: 2, backoff: 0, on: [connect]}}\n"
    );
    let replies = "replies:\n  - content: Pinging.\n    tool_calls: [{id: call_ping, name: ping, arguments: {}}]\n  - content: It is down.\n";
    let agent =
        "name: pinger\nmodel: scripted:replies.yaml\ntools: [ping]\npermissions: {ping: auto}\n";
    let w = world(&[
        ("tools/ping.yaml", tool),
        ("replies.yaml", replies.to_string()),
        ("agent.yaml", agent.to_string()),
    ]);
    let d = w.path();
    for db in crate::databases::TestDb::both() {
        let run = |args: &[&str]| {
            toolgate(d)
                .arg("--db")
                .arg(db.arg())
                .args(args)
                .output()
                .unwrap()
        };
        let out = run(&["run", "--agent", "agent.yaml", "--json", "ping it"]);
        assert_eq!(out.status.code(), Some(0), "{}: {}", db.name(), all(&out));
        let out = run(&[
            "tools",
            "call",
            "ping",
            "--args",
            "{}",
            "--conversation",
            "single",
        ]);
        assert_eq!(out.status.code(), Some(1), "{}: {}", db.name(), all(&out));
        let out = run(&["calls", "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{}: {e}: {}", db.name(), all(&out)));
        let calls = v["calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2, "{}: {v}", db.name());
        for rec in calls {
            assert_eq!(
                outcomes(rec),
                ["connect", "connect"],
                "{}: {rec}",
                db.name()
            );
            assert_eq!(rec["attempts"][0]["wait_ms"], 0.0, "{}: {rec}", db.name());
        }
    }
}
