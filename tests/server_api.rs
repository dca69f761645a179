//! `toolgate serve` through its HTTP API, with reqwest against the real binary on a
//! free port: every endpoint, every error status, SSE order, a run paused by one
//! request and decided by another (and by another server process), auth on and off,
//! and SIGTERM in the middle of a run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::time::Duration;

use serde_json::{Value, json};
use serving::{Server, Site, bin};

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(e, _)| e.as_str()).collect()
}

/// Starts a run of the `slow` agent on its own task (its answer comes when the run
/// ends) and returns that task and the run's id once it is in progress.
async fn slow_run(server: &Server) -> (tokio::task::JoinHandle<Value>, String) {
    let client = server.client.clone();
    let url = server.url("/v1/runs");
    let starter = tokio::spawn(async move {
        let r = client
            .post(url)
            .json(&json!({"agent": "slow", "input": "nap"}))
            .send()
            .await
            .unwrap();
        r.json::<Value>().await.unwrap_or(Value::Null)
    });
    for _ in 0..200 {
        let (_, runs) = server.get("/v1/runs?status=in_progress").await;
        if let Some(r) = runs.as_array().and_then(|a| a.first()) {
            return (starter, r["id"].as_str().unwrap().to_string());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the run never showed up as in_progress");
}

async fn paused_run(server: &Server) -> Value {
    server.paused_assistant().await
}

#[tokio::test]
async fn a_run_paused_by_one_request_is_decided_by_others() {
    let site = Site::new();
    let server = site.serve(None);
    let run = paused_run(&server).await;
    let id = run["id"].as_str().unwrap();
    let items = run["required_action"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["call_id"], "call_write");
    assert_eq!(items[0]["kind"], "approval");
    assert_eq!(items[1]["kind"], "submit_tool_output");
    assert_eq!(run["object"], "run");
    assert_eq!(run["usage"]["model_calls"], 2);

    // The same run object everywhere: by id, by prefix, and in the list.
    let (s, shown) = server.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(shown, run);
    let (s, by_prefix) = server.get(&format!("/v1/runs/{}", &id[..12])).await;
    assert_eq!(s, 200);
    assert_eq!(by_prefix["id"], run["id"]);
    let (s, list) = server.get("/v1/runs?status=requires_action").await;
    assert_eq!(s, 200);
    assert_eq!(list.as_array().unwrap()[0], run);

    // One decision leaves an item: the run stays paused.
    let (s, after) = server
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "call_write"}),
        )
        .await;
    assert_eq!(s, 200, "{after}");
    assert_eq!(after["status"], "requires_action");
    assert_eq!(
        after["required_action"]["items"].as_array().unwrap().len(),
        1
    );

    // The last one continues the run in the same request.
    let (s, done) = server
        .post(
            &format!("/v1/runs/{id}/submit"),
            json!({"call_id": "call_ask", "output": "blue"}),
        )
        .await;
    assert_eq!(s, 200, "{done}");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"], "Done. 2+3*4 is 14.");
    assert_eq!(done["required_action"], Value::Null);
    assert_eq!(
        std::fs::read_to_string(site.path().join("ws/result.txt")).unwrap(),
        "14\n"
    );

    // Records and summaries.
    let conv = run["conversation_id"].as_str().unwrap();
    let (s, calls) = server.get(&format!("/v1/calls?run_id={id}")).await;
    assert_eq!(s, 200);
    assert_eq!(calls["total"], 3);
    let mut tools: Vec<&str> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    tools.sort();
    assert_eq!(tools, ["ask_user", "calculator", "write_file"]);
    let (s, calls) = server
        .get("/v1/calls?tool=calculator&status=succeeded&limit=1")
        .await;
    assert_eq!(s, 200);
    assert_eq!(calls["calls"].as_array().unwrap().len(), 1);
    let (s, stats) = server.get(&format!("/v1/conversations/{conv}/stats")).await;
    assert_eq!(s, 200);
    assert_eq!(stats["conversation_id"], conv);
    assert_eq!(stats["total_calls"], 3);
    assert_eq!(stats["successful_calls"], 2);
    assert_eq!(stats["tool_usage"]["write_file"], 1);
    assert!(stats["duration_ms"]["p95"].is_number());
    let (s, global) = server.get("/v1/stats").await;
    assert_eq!(s, 200);
    assert_eq!(global["total_calls"], 3);
    let (s, tool) = server.get("/v1/tools/calculator/stats").await;
    assert_eq!(s, 200);
    assert_eq!(tool["total_calls"], 1);
}

#[tokio::test]
async fn catalogue_health_and_the_openapi_document() {
    let site = Site::new();
    let server = site.serve(None);
    let (s, health) = server.get("/healthz").await;
    assert_eq!((s, health), (200, json!({"status": "ok"})));
    let (s, agents) = server.get("/v1/agents").await;
    assert_eq!(s, 200);
    let mut names: Vec<&str> = agents
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["assistant", "plain", "slow"]);
    let (s, tools) = server.get("/v1/tools").await;
    assert_eq!(s, 200);
    let ask = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ask_user")
        .unwrap();
    assert_eq!(ask["definition_only"], true);
    assert_eq!(ask["runs"], "client");
    let write = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "write_file")
        .unwrap();
    assert_eq!(write["permission"], "confirm");

    let (s, doc) = server.get("/openapi.json").await;
    assert_eq!(s, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/v1/runs",
        "/v1/runs/{id}",
        "/v1/runs/{id}/events",
        "/v1/runs/{id}/approve",
        "/v1/runs/{id}/deny",
        "/v1/runs/{id}/submit",
        "/v1/runs/{id}/resume",
        "/v1/runs/{id}/cancel",
        "/v1/calls",
        "/v1/conversations/{id}/stats",
        "/v1/stats",
        "/v1/tools/{name}/stats",
        "/v1/tools",
        "/v1/agents",
        "/healthz",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} is not documented");
    }
    // The run object's schema is generated from the type.
    let run = &doc["components"]["schemas"]["RunObject"]["properties"];
    assert!(run["required_action"].is_object() && run["status"].is_object());
    // `serve --openapi` prints the same document.
    let out = std::process::Command::new(bin())
        .args(["serve", "--openapi"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, doc);
}

#[tokio::test]
async fn streams_come_in_order_with_the_run_object_last() {
    let site = Site::new();
    let server = site.serve(None);
    let events = server
        .post_sse(
            "/v1/runs",
            json!({"agent": "assistant", "input": "2+3*4", "stream": true}),
        )
        .await;
    let seen = names(&events);
    assert_eq!(seen.first(), Some(&"run.started"), "{seen:?}");
    let order = [
        "run.started",
        "text.delta",
        "tool_call.parsed",
        "tool.started",
        "tool.finished",
        "approval.requested",
        "run.requires_action",
        "run",
    ];
    let mut at = 0;
    for name in &seen {
        if at < order.len() && *name == order[at] {
            at += 1;
        }
    }
    assert_eq!(at, order.len(), "events out of order: {seen:?}");
    assert_eq!(seen.last(), Some(&"run"));
    let (_, run) = events.last().unwrap();
    assert_eq!(run["status"], "requires_action");
    let id = run["id"].as_str().unwrap();
    // Every event names its run, tool events included.
    for (name, data) in &events[..events.len() - 1] {
        assert_eq!(data["run_id"], id, "{name}: {data}");
        assert_eq!(data["type"], name.as_str());
    }

    // A decision that does not resolve the last item, streamed: the run object alone.
    let part = server
        .post_sse(
            &format!("/v1/runs/{id}/deny"),
            json!({"call_id": "call_write", "reason": "not now", "stream": true}),
        )
        .await;
    assert_eq!(names(&part), ["run"]);
    // The last one streams the continuation.
    let rest = server
        .post_sse(
            &format!("/v1/runs/{id}/submit"),
            json!({"call_id": "call_ask", "output": "green", "stream": true}),
        )
        .await;
    let seen = names(&rest);
    assert_eq!(seen.first(), Some(&"run.started"));
    assert!(seen.contains(&"tool.resolved"), "{seen:?}");
    assert_eq!(&seen[seen.len() - 2..], ["run.completed", "run"]);
    assert_eq!(rest.last().unwrap().1["status"], "completed");
    // The denial reached the model as the call's result and the record says so.
    let (_, calls) = server
        .get(&format!("/v1/calls?run_id={id}&status=denied"))
        .await;
    assert_eq!(calls["total"], 1);
}

#[tokio::test]
async fn a_watcher_sees_a_run_another_request_drives() {
    let site = Site::new();
    let server = site.serve(None);
    // Found while its tool sleeps.
    let (starter, id) = slow_run(&server).await;
    let events = server.get_sse(&format!("/v1/runs/{id}/events")).await;
    let seen = names(&events);
    assert_eq!(seen.first(), Some(&"run"), "{seen:?}");
    assert_eq!(events[0].1["status"], "in_progress");
    assert!(seen.contains(&"tool.finished"), "{seen:?}");
    assert!(seen.contains(&"run.completed"), "{seen:?}");
    assert_eq!(seen.last(), Some(&"run"));
    assert_eq!(events.last().unwrap().1["status"], "completed");
    let finished = starter.await.unwrap();
    assert_eq!(finished["status"], "completed");
    // Watching a run that is not moving: its run object, and the stream ends.
    let events = server.get_sse(&format!("/v1/runs/{id}/events")).await;
    assert_eq!(names(&events), ["run"]);
}

#[tokio::test]
async fn every_error_has_its_status_and_one_shape() {
    let site = Site::new();
    let server = site.serve(None);
    let check = |(status, body): (u16, Value), want: u16, kind: &str| {
        assert_eq!(status, want, "{body}");
        assert_eq!(body["error"]["type"], kind, "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().len() > 5,
            "{body}"
        );
    };
    // 400: a body that is not the request, an unknown filter, an empty input, a
    // model that names a file, unknown fields.
    let r = server
        .client
        .post(server.url("/v1/runs"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "bad_request");
    check(
        server.get("/v1/runs?status=sleeping").await,
        400,
        "bad_request",
    );
    check(
        server.get("/v1/calls?status=sleeping").await,
        400,
        "bad_request",
    );
    check(server.get("/v1/runs?limit=many").await, 400, "bad_request");
    check(
        server
            .post("/v1/runs", json!({"agent": "plain", "input": "  "}))
            .await,
        400,
        "bad_request",
    );
    check(
        server
            .post(
                "/v1/runs",
                json!({"agent": "plain", "input": "hi", "model": "scripted:/etc/passwd"}),
            )
            .await,
        400,
        "bad_request",
    );
    check(
        server
            .post(
                "/v1/runs",
                json!({"agent": "plain", "input": "hi", "colour": 1}),
            )
            .await,
        400,
        "bad_request",
    );
    // 404: no such agent, run or conversation.
    check(
        server
            .post("/v1/runs", json!({"agent": "nobody", "input": "hi"}))
            .await,
        404,
        "not_found",
    );
    check(server.get("/v1/runs/run_nothing").await, 404, "not_found");
    check(
        server.post("/v1/runs/run_nothing/resume", json!({})).await,
        404,
        "not_found",
    );
    check(
        server.get("/v1/conversations/conv_none/stats").await,
        404,
        "not_found",
    );

    let run = paused_run(&server).await;
    let id = run["id"].as_str().unwrap();
    // 409: decisions that do not fit, a resume with items waiting, a busy conversation.
    check(
        server
            .post(
                &format!("/v1/runs/{id}/submit"),
                json!({"call_id": "call_write", "output": "x"}),
            )
            .await,
        409,
        "decision_conflict",
    );
    check(
        server
            .post(
                &format!("/v1/runs/{id}/deny"),
                json!({"call_id": "call_nope"}),
            )
            .await,
        409,
        "decision_conflict",
    );
    check(
        server
            .post(&format!("/v1/runs/{id}/resume"), json!({}))
            .await,
        409,
        "still_waiting",
    );
    check(
        server
            .post(
                "/v1/runs",
                json!({"agent": "assistant", "input": "again", "conversation_id": run["conversation_id"]}),
            )
            .await,
        409,
        "conversation_busy",
    );
    // 422: edited arguments the schema refuses; nothing changes.
    check(
        server
            .post(
                &format!("/v1/runs/{id}/approve"),
                json!({"call_id": "call_write", "arguments": {"path": 5}}),
            )
            .await,
        422,
        "invalid_arguments",
    );
    // 400: a body that is JSON but not an object (schemathesis sent `[null, null]`,
    // which serde reads as the fields in order); nothing is decided.
    for route in ["approve", "deny", "submit"] {
        for body in [
            json!([null, null]),
            json!(["call_write"]),
            json!("x"),
            json!(null),
        ] {
            let (status, answer) = server
                .post(&format!("/v1/runs/{id}/{route}"), body.clone())
                .await;
            assert_eq!(status, 400, "{route} {body}: {answer}");
            assert_eq!(answer["error"]["type"], "bad_request", "{answer}");
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("the request body must be a JSON object"),
                "{answer}"
            );
        }
    }
    let (_, still) = server.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(
        still["required_action"]["items"].as_array().unwrap().len(),
        2
    );
    // Cancelled: it never continues.
    let (s, cancelled) = server
        .post(&format!("/v1/runs/{id}/cancel"), json!({}))
        .await;
    assert_eq!(s, 200);
    assert_eq!(cancelled["status"], "cancelled");
    check(
        server
            .post(&format!("/v1/runs/{id}/cancel"), json!({}))
            .await,
        409,
        "not_resumable",
    );
    check(
        server
            .post(
                &format!("/v1/runs/{id}/approve"),
                json!({"call_id": "call_write"}),
            )
            .await,
        409,
        "decision_conflict",
    );

    // 500: a run whose saved state was damaged by hand cannot continue; the error
    // says so, and the server goes on.
    let (_, plain) = server
        .post("/v1/runs", json!({"agent": "plain", "input": "hi"}))
        .await;
    let conn = rusqlite::Connection::open(site.db()).unwrap();
    conn.execute(
        "UPDATE runs SET status = 'failed', state = '{broken' WHERE id = ?1",
        [plain["id"].as_str().unwrap()],
    )
    .unwrap();
    check(
        server
            .post(
                &format!("/v1/runs/{}/resume", plain["id"].as_str().unwrap()),
                json!({}),
            )
            .await,
        500,
        "corrupt",
    );
    let (s, _) = server.get("/healthz").await;
    assert_eq!(s, 200);
}

#[tokio::test]
async fn the_api_key_guards_every_v1_route() {
    let site = Site::new();
    let server = site.serve(Some("s3cret-key"));
    // With the key: works.
    let (s, _) = server.get("/v1/agents").await;
    assert_eq!(s, 200);
    // Without it, or with a wrong one: 401, in the error shape.
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Bearer s3cret-ke"),
        Some("s3cret-key"),
    ] {
        let mut r = server.client.get(server.url("/v1/runs"));
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status().as_u16(), 401, "{auth:?}");
        // The unread request ends its connection, and the client is told so.
        assert_eq!(r.headers()["connection"], "close", "{auth:?}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["type"], "unauthorized");
    }
    let r = server
        .client
        .post(server.url("/v1/runs"))
        .json(&json!({"agent": "plain", "input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    // Health and the document stay open.
    let r = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r = server
        .client
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[test]
fn without_a_key_only_loopback_is_served() {
    let site = Site::new();
    let out = std::process::Command::new(bin())
        .current_dir(site.path())
        .arg("--db")
        .arg(site.db())
        .args(["serve", "--addr", "0.0.0.0:0", "--agents", "agents"])
        .env_remove("TOOLGATE_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("without an API key"), "{err}");
    // A missing agents folder is one line too.
    let out = std::process::Command::new(bin())
        .current_dir(site.path())
        .arg("--db")
        .arg(site.db())
        .args(["serve", "--addr", "127.0.0.1:0", "--agents", "nowhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("agents folder"));
}

#[tokio::test]
async fn two_servers_on_one_database_share_runs() {
    let site = Site::new();
    let a = site.serve(None);
    let b = site.serve(None);
    let run = paused_run(&a).await;
    let id = run["id"].as_str().unwrap();
    let (s, seen) = b.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(seen, run);
    // Both items decided on b in one go each; b continues the run.
    let (s, _) = b
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "call_write", "resume": false}),
        )
        .await;
    assert_eq!(s, 200);
    let (s, recorded) = a
        .post(
            &format!("/v1/runs/{id}/submit"),
            json!({"call_id": "call_ask", "output": "red", "resume": false}),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(recorded["required_action"]["items"], json!([]));
    // Two resumes at once, one on each server: exactly one drives, the other is told.
    let path = format!("/v1/runs/{id}/resume");
    let (ra, rb) = tokio::join!(a.post(&path, json!({})), b.post(&path, json!({})));
    let statuses = [ra.0, rb.0];
    assert!(statuses.contains(&200), "{ra:?} {rb:?}");
    for (s, body) in [&ra, &rb] {
        if *s != 200 {
            assert_eq!(*s, 409, "{body}");
            assert!(
                ["lease_held", "not_resumable"].contains(&body["error"]["type"].as_str().unwrap()),
                "{body}"
            );
        }
    }
    let (_, done) = a.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(done["status"], "completed");
    let (_, calls) = b.get(&format!("/v1/calls?run_id={id}")).await;
    assert_eq!(calls["total"], 3, "every call recorded once");
}

/// A `slow` run stopped by SIGTERM mid-call (its nap lasting `nap` seconds), given
/// back and taken up by the next server to completion; the nap's record.
async fn stopped_mid_call_then_taken_up(nap: &str) -> Value {
    let site = Site::new();
    let mut server = Server::start_env(&site, None, &[], &[("SLOW_SECONDS", nap)]);
    let (starter, id) = slow_run(&server).await;
    let status = server.terminate(Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
    let _ = starter.await;
    // Stopped where it was and given back: still in progress, nothing failed.
    let out = std::process::Command::new(bin())
        .current_dir(site.path())
        .arg("--db")
        .arg(site.db())
        .args(["show", &id, "--json"])
        .output()
        .unwrap();
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["status"], "in_progress", "{run}");
    assert_eq!(run["last_error"], Value::Null, "{run}");
    // The next server takes it up at its start, without being asked.
    let server = site.serve(None);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let done = loop {
        let (_, run) = server.get(&format!("/v1/runs/{id}")).await;
        if run["status"] != "in_progress" {
            break run;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never taken up: {run}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    let (_, calls) = server.get(&format!("/v1/calls?run_id={id}")).await;
    assert_eq!(calls["total"], 1, "{calls}");
    calls["calls"][0].clone()
}

#[tokio::test]
async fn sigterm_lets_the_running_call_finish_gives_the_run_back_and_the_next_server_ends_it() {
    // A 2 s call: within the drain, so it finishes before the run is given back.
    let nap = stopped_mid_call_then_taken_up("2").await;
    assert_eq!(nap["status"], "succeeded", "{nap}");
}

#[tokio::test]
async fn sigterm_cuts_a_call_that_outlasts_the_drain() {
    // A 60 s call: cut short when the drain (10 s) runs out, recorded as cancelled,
    // and the model goes on without it on the next server.
    let nap = stopped_mid_call_then_taken_up("60").await;
    assert_eq!(nap["status"], "cancelled", "{nap}");
}

#[tokio::test]
async fn a_cancel_over_http_stops_the_run_this_server_drives_at_once() {
    let site = Site::new();
    let server = site.serve(None);
    let (starter, id) = slow_run(&server).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = std::time::Instant::now();
    let (s, cancelled) = server
        .post(&format!("/v1/runs/{id}/cancel"), json!({}))
        .await;
    assert_eq!(s, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    let ended = starter.await.unwrap();
    assert!(
        asked.elapsed() < Duration::from_millis(1500),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(ended["status"], "cancelled", "{ended}");
    let (_, calls) = server.get(&format!("/v1/calls?run_id={id}")).await;
    assert_eq!(calls["total"], 1, "{calls}");
    assert_eq!(calls["calls"][0]["status"], "cancelled");
}
