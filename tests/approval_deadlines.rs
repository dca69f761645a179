//! Approval deadlines across processes: a deadline that passes while `serve` is
//! stopped is applied when it starts; `approval.expiring` and `approval.expired` reach
//! the webhooks, signed; and without any server, the command line refuses to approve
//! an expired item and `resume` denies it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serving::{Server, Site};

async fn paused_finance(server: &Server) -> Value {
    let (status, run) = server
        .post(
            "/v1/runs",
            json!({"agent": "finance", "input": "Pay acme."}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "requires_action", "{run}");
    run
}

/// Polls the run until `test` holds (at most 15 s).
async fn until(server: &Server, id: &str, test: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let (_, run) = server.get(&format!("/v1/runs/{id}")).await;
        if test(&run) {
            return run;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "waited for {run}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deadline_that_passed_while_serve_was_stopped_is_applied_when_it_starts() {
    let site = Site::new();
    site.finance("approval_timeout: 2s\n");
    let mut server = site.serve(None);
    let run = paused_finance(&server).await;
    let item = &run["required_action"]["items"][0];
    assert_eq!(item["reason"], "confirm_if: args.amount > 1000", "{item}");
    assert_eq!(item["on_timeout"], "deny", "{item}");
    let id = run["id"].as_str().unwrap().to_string();
    server.terminate(Duration::from_secs(10));
    drop(server);
    std::thread::sleep(Duration::from_millis(2500));
    let server = site.serve(None);
    let run = until(&server, &id, |r| r["status"] == "completed").await;
    assert_eq!(run["output"], "Paid.", "{run}");
    let (_, calls) = server.get(&format!("/v1/calls?run_id={id}")).await;
    let call = &calls["calls"][0];
    assert_eq!(call["status"], "denied", "{call}");
    assert_eq!(call["error_kind"], "expired", "{call}");
}

/// What a receiver got: each POST's event, body, and whether it was signed.
type Received = Arc<Mutex<Vec<(String, Value, bool)>>>;

/// A local receiver of notifications, and what it got.
fn receiver() -> (String, Received) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&got);
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut reader = BufReader::new(sock.try_clone().unwrap());
            let (mut length, mut event, mut signed) = (0usize, String::new(), false);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if let Some(v) = lower.strip_prefix("x-toolgate-event:") {
                    event = v.trim().to_string();
                }
                signed |= lower.starts_with("x-toolgate-signature: sha256=");
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            keep.lock().unwrap().push((event, body, signed));
            let _ = sock.write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
        }
    });
    (url, got)
}

#[tokio::test(flavor = "multi_thread")]
async fn expiring_and_expired_reach_the_webhooks_while_serve_runs() {
    let site = Site::new();
    site.finance("approval_timeout: 3s\n");
    let (url, got) = receiver();
    let server = Server::start_env(
        &site,
        None,
        &["--notify-url", &url, "--approval-warning", "2s"],
        &[("TOOLGATE_NOTIFY_SECRET", "s3cret")],
    );
    let run = paused_finance(&server).await;
    let id = run["id"].as_str().unwrap().to_string();
    until(&server, &id, |r| r["status"] == "completed").await;
    let start = Instant::now();
    let events = loop {
        let events: Vec<(String, Value, bool)> = got.lock().unwrap().clone();
        if events.iter().any(|(e, ..)| e == "approval.expired")
            || start.elapsed() > Duration::from_secs(10)
        {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let names: Vec<&str> = events.iter().map(|(e, ..)| e.as_str()).collect();
    let at = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("no {name} in {names:?}"))
    };
    assert!(
        at("approval.expiring") < at("approval.expired"),
        "{names:?}"
    );
    for (name, body, signed) in &events {
        assert!(signed, "{name} was not signed");
        if name.starts_with("approval.") {
            assert_eq!(body["run_id"], id.as_str(), "{body}");
            assert_eq!(body["item"]["call_id"], "call_pay", "{body}");
            assert_eq!(
                body["item"]["reason"], "confirm_if: args.amount > 1000",
                "{body}"
            );
        }
    }
}

#[test]
fn without_a_server_the_command_line_refuses_an_expired_approval_and_resume_denies_it() {
    let site = Site::new();
    site.finance("approval_timeout: 500ms\n");
    let root = site.path();
    let toolgate = |args: &[&str]| serving::toolgate_in(root, &site.db(), args);
    let out = toolgate(&[
        "run",
        "--agent",
        "agents/finance.yaml",
        "--tools",
        "tools",
        "--json",
        "pay",
    ]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let run: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let id = run["id"].as_str().unwrap();
    let shown = toolgate(&["show", id]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("because     confirm_if: args.amount > 1000"),
        "{shown}"
    );
    assert!(shown.contains("(then deny)"), "{shown}");
    std::thread::sleep(Duration::from_millis(700));
    let out = toolgate(&["approve", id]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("expired") && said.contains("can no longer be approved"),
        "{said}"
    );
    let out = toolgate(&["resume", id, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = toolgate(&["calls", "--json"]);
    let calls: Value = serde_json::from_slice(&calls.stdout).unwrap();
    let call = &calls["calls"][0];
    assert_eq!(
        (call["status"].as_str(), call["error_kind"].as_str()),
        (Some("denied"), Some("expired")),
        "{calls}"
    );
    assert!(!root.join("ws/paid").exists());
}
