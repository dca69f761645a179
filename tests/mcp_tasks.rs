//! MCP tasks (protocol 2025-11-25) on the gateway, against the official clients:
//! the TypeScript SDK's task client, unmodified (tests/node/mcp_tasks.mjs), on one of two
//! workers sharing a PostgreSQL database, its CONFIRM call approved in the inbox API of
//! the other worker while the client waits in `tasks/result`, and a second call
//! cancelled by the client; and the Python SDK `mcp` with the small extension its
//! session needs (tests/py/test_mcp_tasks.py) over stdio: a task outliving its
//! `toolgate mcp` process, approved from the command line, read by the next process; a
//! task of another tenant unknown; a task expired by its TTL, its call cancelled.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::databases::fresh_postgres_database;
use crate::serving::{self, Server, Site};
use toolgate_test_support::serving::identity::keys_create;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The runs of `agent` waiting for a decision, as the inbox lists them.
async fn waiting(server: &Server, key: &str, agent: &str) -> Vec<Value> {
    let listed: Value = server
        .client
        .get(server.url("/v1/runs?status=requires_action&limit=200"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let runs = listed.as_array().cloned().unwrap_or_default();
    runs.into_iter().filter(|r| r["agent"] == agent).collect()
}

/// Approves run `id`'s waiting call as the inbox does (`POST .../approve`).
async fn approve(server: &Server, key: &str, run: &Value) -> (u16, Value) {
    let id = run["id"].as_str().unwrap();
    let call = &run["required_action"]["items"][0]["call_id"];
    let r = server
        .client
        .post(server.url(&format!("/v1/runs/{id}/approve")))
        .bearer_auth(key)
        .json(&json!({"call_id": call, "by": "inbox"}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_task_client_waits_for_an_approval_made_on_another_worker_and_cancels() {
    let tools = serving::node_tools("the MCP tasks test");
    let url = fresh_postgres_database();
    let (a, b) = (Site::on_database(&url), Site::on_database(&url));
    for site in [&a, &b] {
        site.agent("keeper", "[write_file]", "  - content: Not asked.\n");
    }
    let client_key = keys_create(&a, "acme", "mcp-client", "client", "");
    let approver_key = keys_create(&a, "acme", "acme-approver", "approver", "");
    let other_key = keys_create(&a, "globex", "globex-client", "client", "");
    let worker_a = Server::start(&a, None, &[]);
    let worker_b = Server::start(&b, None, &[]);

    let modules = tools.join("node_modules");
    let script = tools.join("mcp_tasks.mjs");
    std::fs::copy(root().join("tests/node/mcp_tasks.mjs"), &script).unwrap();
    let mut node = Command::new(modules.join("node/bin/node"))
        .arg(&script)
        .args([worker_a.url(""), "keeper".into(), client_key, other_key])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // Every line the script prints, as it prints it.
    let stdout = BufReader::new(node.stdout.take().unwrap());
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = tokio::task::spawn_blocking(move || {
        let first = lines.recv_timeout(std::time::Duration::from_secs(60));
        (first, lines)
    })
    .await
    .unwrap();
    let (first, lines) = first;
    let mut seen = vec![first.expect("the script printed nothing within 60 s")];
    assert!(
        seen[0].contains("\"input_required\""),
        "the client never saw input_required: {seen:?}"
    );
    let note: Value = serde_json::from_str(&seen[0]).unwrap();
    assert!(
        note["message"]
            .as_str()
            .unwrap_or_default()
            .contains("decision"),
        "{note}"
    );

    // The call waits on worker B's inbox too (one database): approved there.
    let runs = waiting(&worker_b, &approver_key, "keeper").await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["tenant"], "acme", "{runs:?}");
    let (status, run) = approve(&worker_b, &approver_key, &runs[0]).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        std::fs::read_to_string(b.path().join("ws/tenants/acme/tasked.txt")).unwrap(),
        "approved",
        "the approved call ran on B, where it was decided, in the tenant's folder"
    );

    let status = tokio::task::spawn_blocking(move || node.wait().unwrap())
        .await
        .unwrap();
    reader.join().unwrap();
    seen.extend(lines.try_iter());
    assert!(
        status.success(),
        "tests/node/mcp_tasks.mjs failed: {seen:#?}"
    );
    let last: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    let approved = &last["approved"]["seen"];
    assert_eq!(approved[0], "created:input_required", "{last}");
    assert!(
        approved
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "input_required"),
        "{last}"
    );

    // The cancelled call never ran and can no longer be approved.
    for site in [&a, &b] {
        assert!(!site.path().join("ws/tenants/acme/cancelled.txt").exists());
    }
    assert!(waiting(&worker_b, &approver_key, "keeper").await.is_empty());
    let calls = serving::toolgate_in(
        a.path(),
        &a.db(),
        &["--tenant", "acme", "calls", "--json", "--limit", "100"],
    );
    let calls: Value = serde_json::from_slice(&calls.stdout).unwrap();
    let mut outcomes: Vec<(String, String)> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["arguments"]["path"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                c["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        vec![
            ("cancelled.txt".to_string(), "cancelled".to_string()),
            ("tasked.txt".to_string(), "succeeded".to_string())
        ],
        "{calls}"
    );
}

#[test]
fn the_python_sdk_extended_for_tasks_follows_a_task_across_processes_tenants_and_its_ttl() {
    let python = serving::python("the MCP tasks test");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let agent = dir.path().join("keeper.yaml");
    std::fs::write(
        &agent,
        "name: keeper\nmodel: scripted:none.yaml\ninstructions: Keep.\ntools: [write_file]\n",
    )
    .unwrap();
    let db = dir.path().join("toolgate.db");
    let out = Command::new(&python)
        .arg(root().join("tests/py/test_mcp_tasks.py"))
        .arg(toolgate_test_support::bin())
        .args([&db, &agent, &ws])
        .current_dir(dir.path())
        .env_remove("TOOLGATE_DB")
        .env_remove("TOOLGATE_TENANT")
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tests/py/test_mcp_tasks.py failed ({}): {stdout}",
        out.status
    );
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert!(last["waited"].as_f64().unwrap() >= 0.9, "{last}");
    assert!(last["notes"].as_u64().unwrap() >= 2, "{last}");
    // The expired task's call is recorded cancelled, and never ran.
    let calls = serving::toolgate_in(
        dir.path(),
        &db,
        &["--tenant", "acme", "calls", "--json", "--limit", "100"],
    );
    let calls: Value = serde_json::from_slice(&calls.stdout).unwrap();
    let expired: Vec<&Value> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["run_id"] == last["expired_run"])
        .collect();
    assert_eq!(expired.len(), 1, "{calls}");
    assert_eq!(expired[0]["status"], "cancelled", "{calls}");
}
