//! `toolgate serve` attacked as a hostile page, a hostile client and a curious key
//! holder would: a rebinding Host, a foreign Origin, cross-site form posts, guessed run
//! prefixes, oversized and binary ids, a path that is not UTF-8, a secret number in
//! the timeline, an "always" reaching another agent, host paths in answers, the
//! bearer scheme in lower case, and any token on a keyless loopback server. Each test
//! is the attack first, then what must hold.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use reqwest::header::{CONTENT_TYPE, HOST, ORIGIN};
use serde_json::{Value, json};
use serving::{Server, Site};

/// A paused `assistant` run's id (write_file waits for approval, ask_user for output).
async fn paused(server: &Server) -> String {
    let (status, run) = server
        .post(
            "/v1/runs",
            json!({"agent": "assistant", "input": "Work it out."}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "requires_action");
    run["id"].as_str().unwrap().to_string()
}

async fn status_and_json(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The run as stored: what an attack must not have changed.
async fn waiting_calls(server: &Server, id: &str) -> Vec<String> {
    let (_, run) = server.get(&format!("/v1/runs/{id}")).await;
    run["required_action"]["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i["call_id"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rebinding_host_is_refused_on_every_route() {
    let site = Site::new();
    let server = Server::start(&site, None, &["--allowed-host", "toolgate.example"]);
    let id = paused(&server).await;
    let port = server.base.rsplit(':').next().unwrap().to_string();
    let evil = format!("evil.example:{port}");
    for path in [
        "/v1/runs",
        "/",
        "/inbox/app.js",
        "/mcp/assistant",
        "/openapi.json",
    ] {
        let r = server
            .client
            .get(server.url(path))
            .header(HOST, &evil)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(r).await;
        assert_eq!(status, 421, "GET {path} with Host {evil}: {body}");
        assert_eq!(body["error"]["type"], "host_not_allowed", "{body}");
    }
    // The approval a rebinding page posted, Origin matching its Host.
    let r = server
        .client
        .post(server.url(&format!("/v1/runs/{id}/approve")))
        .header(HOST, &evil)
        .header(ORIGIN, format!("http://{evil}"))
        .json(&json!({"call_id": "call_write"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 421);
    assert_eq!(
        waiting_calls(&server, &id).await,
        ["call_write", "call_ask"]
    );
    // Loopback names, IP literals and the names given with --allowed-host pass.
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("toolgate.example:{port}"),
    ] {
        let r = server
            .client
            .get(server.url("/v1/runs"))
            .header(HOST, &host)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "Host {host}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_site_posts_change_nothing() {
    let site = Site::new();
    let server = Server::start(&site, None, &["--allowed-host", "app.example"]);
    let id = paused(&server).await;
    let form = "application/x-www-form-urlencoded";
    // A real cross-origin <form>: a simple POST from another site's page.
    for action in ["cancel", "resume", "approve"] {
        let r = server
            .client
            .post(server.url(&format!("/v1/runs/{id}/{action}")))
            .header(CONTENT_TYPE, form)
            .header(ORIGIN, "http://evil.example")
            .body("")
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(r).await;
        assert_eq!(status, 403, "{action}: {body}");
        assert_eq!(body["error"]["type"], "origin_not_allowed");
    }
    // Another local port is another origin too.
    let r = server
        .client
        .post(server.url(&format!("/v1/runs/{id}/cancel")))
        .header(ORIGIN, "http://127.0.0.1:1")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    // No Origin at all (an old browser, a privacy setting), still a form: refused.
    for content_type in [
        Some(form),
        Some("text/plain"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut r = server
            .client
            .post(server.url(&format!("/v1/runs/{id}/cancel")))
            .body("");
        if let Some(c) = content_type {
            r = r.header(CONTENT_TYPE, c);
        }
        let (status, body) = status_and_json(r.send().await.unwrap()).await;
        assert_eq!(status, 415, "{content_type:?}: {body}");
        assert_eq!(body["error"]["type"], "unsupported_media_type");
    }
    assert_eq!(
        waiting_calls(&server, &id).await,
        ["call_write", "call_ask"]
    );
    // A guessed prefix changes nothing either: state changes need the whole id.
    for prefix in [&id[..6], &id[..10], &id[..id.len() - 1]] {
        let r = server
            .client
            .post(server.url(&format!("/v1/runs/{prefix}/cancel")))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(r).await;
        assert_eq!(status, 404, "{prefix}: {body}");
        assert!(
            !body.to_string().contains(&id),
            "the answer hints at the id: {body}"
        );
    }
    assert_eq!(
        waiting_calls(&server, &id).await,
        ["call_write", "call_ask"]
    );
    // The page's own requests (same origin, JSON) and a client's header still work.
    let r = server
        .client
        .post(server.url(&format!("/v1/runs/{id}/approve")))
        .header(ORIGIN, server.base.clone())
        .json(&json!({"call_id": "call_write", "resume": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // A page at a name the operator listed may post (its app embeds the inbox's calls).
    let r = server
        .client
        .post(server.url(&format!("/v1/runs/{id}/approve")))
        .header(ORIGIN, "http://app.example")
        .json(&json!({"call_id": "call_ask", "resume": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        409,
        "past the guard: call_ask is not an approval"
    );
    let r = server
        .client
        .post(server.url(&format!("/v1/runs/{id}/cancel")))
        .header("X-Toolgate-Request", "1")
        .send()
        .await
        .unwrap();
    let (status, run) = status_and_json(r).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn ids_and_paths_are_checked_and_every_error_is_json() {
    let site = Site::new();
    let server = Server::start(&site, None, &[]);
    for conversation in [
        "x".repeat(1 << 20),
        "a\u{0}b".into(),
        "with space".into(),
        String::new(),
    ] {
        let (status, body) = server
            .post(
                "/v1/runs",
                json!({"agent": "plain", "input": "hi", "conversation_id": conversation}),
            )
            .await;
        assert_eq!(
            status,
            400,
            "{}",
            &body.to_string()[..body.to_string().len().min(300)]
        );
        assert!(
            body.to_string().len() < 1000,
            "the error does not copy the id back whole"
        );
    }
    let (status, run) = server
        .post(
            "/v1/runs",
            json!({"agent": "plain", "input": "hi", "conversation_id": "user:42/chat-7"}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    // A path that is not UTF-8, and one with a control character.
    for path in [
        "/v1/runs/%FF%FE",
        "/v1/runs/run%00x",
        "/v1/conversations/%C3%28/stats",
    ] {
        let r = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 400, "{path}");
        assert!(
            r.headers()[CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("application/json"),
            "{path}"
        );
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["type"], "bad_request", "{path}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_name_no_host_paths() {
    let site = Site::new();
    let server = Server::start(&site, None, &[]);
    let root = site.path().to_string_lossy().into_owned();
    let (_, agents) = server.get("/v1/agents").await;
    let (_, run) = server
        .post("/v1/runs", json!({"agent": "plain", "input": "hi"}))
        .await;
    let (status, missing) = server
        .post("/v1/runs", json!({"agent": "nobody", "input": "hi"}))
        .await;
    assert_eq!(status, 404);
    std::fs::write(site.path().join("agents/broken.yaml"), "name: [unclosed\n").unwrap();
    let (_, missing_with_broken) = server
        .post("/v1/runs", json!({"agent": "nobody", "input": "hi"}))
        .await;
    assert!(
        missing_with_broken.to_string().contains("broken.yaml"),
        "{missing_with_broken}"
    );
    for (what, v) in [
        ("agents", &agents),
        ("run", &run),
        ("404", &missing),
        ("404 with a broken file", &missing_with_broken),
    ] {
        assert!(!v.to_string().contains(&root), "{what} names {root}: {v}");
    }
    assert_eq!(run["model"], "scripted:plain.replies.yaml");
    let plain = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "plain")
        .unwrap();
    assert_eq!(plain["file"], "plain.yaml");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bearer_scheme_is_case_insensitive() {
    let site = Site::new();
    let server = Server::start(&site, Some("k-123"), &[]);
    for (header, want) in [
        ("bearer k-123", 200),
        ("BEARER k-123", 200),
        ("Bearer k-123", 200),
        ("Bearer k-124", 401),
        ("Basic k-123", 401),
    ] {
        let r = server
            .client
            .get(server.url("/v1/runs"))
            .header(reqwest::header::AUTHORIZATION, header)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), want, "{header}");
    }
}

/// A keyless loopback server (no key, no issued key, no JWT settings) is open: the
/// OpenAI SDKs always send a bearer token, and it must not be refused; `serve` says at
/// start that it is open. A server with a key still refuses a wrong one (above).
#[tokio::test(flavor = "multi_thread")]
async fn a_keyless_loopback_server_takes_any_bearer_token_and_says_it_is_open() {
    let site = Site::new();
    let mut cmd = serving::serve_command(&site, std::process::Command::new(serving::bin()), &[]);
    cmd.env_remove("TOOLGATE_API_KEY")
        .stderr(std::process::Stdio::piped());
    let mut server = Server::started(&mut cmd, None);
    for header in [None, Some("Bearer sk-anything"), Some("Bearer not-a-key")] {
        let mut req = server.client.get(server.url("/v1/runs"));
        if let Some(h) = header {
            req = req.header(reqwest::header::AUTHORIZATION, h);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{header:?}");
    }
    let (status, run) = server
        .post("/v1/runs", json!({"agent": "assistant", "input": "Hi."}))
        .await;
    assert_eq!(status, 200, "{run}");
    server.child.kill().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut server.child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(
        err.matches("open on loopback").count(),
        1,
        "serve says once that it is open: {err}"
    );
}

/// A secret integer, a secret number and secret integers in an array: the timeline
/// (the stored conversation as served) shows none of them.
#[tokio::test(flavor = "multi_thread")]
async fn the_timeline_serves_no_secret_number() {
    let site = Site::new();
    std::fs::write(
        site.path().join("tools/pay.yaml"),
        "name: pay\ndescription: Pays.\npermission: confirm\nparameters:\n  type: object\n  properties:\n    pin: {type: integer, secret: true}\n    amount: {type: number, secret: true}\n    codes: {type: array, items: {type: integer, secret: true}}\n  required: [pin]\nentry: {type: command, command: echo, args: [paid]}\n",
    )
    .unwrap();
    site.agent(
        "payer",
        "[pay]",
        "  - content: Paying.\n    tool_calls: [{id: c_pay, name: pay, arguments: {pin: 739184, amount: 88123.75, codes: [551907]}}]\n  - content: Paid.\n",
    );
    let server = Server::start(&site, None, &[]);
    let (_, run) = server
        .post("/v1/runs", json!({"agent": "payer", "input": "Pay."}))
        .await;
    assert_eq!(run["status"], "requires_action", "{run}");
    let id = run["id"].as_str().unwrap();
    let check = |what: &str, text: &str| {
        for n in ["739184", "88123.75", "551907"] {
            assert!(!text.contains(n), "{n} in clear in {what}: {text}");
        }
    };
    let (_, timeline) = server.get(&format!("/v1/runs/{id}/timeline")).await;
    check("the paused run's timeline", &timeline.to_string());
    assert!(timeline.to_string().contains("[secret]"), "{timeline}");
    let (_, done) = server
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "c_pay"}),
        )
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    let (_, timeline) = server.get(&format!("/v1/runs/{id}/timeline")).await;
    check("the ended run's timeline", &timeline.to_string());
}

/// "Approve always" given to one agent's write_file does not auto-run another agent's
/// write_file in the same conversation.
#[tokio::test(flavor = "multi_thread")]
async fn always_belongs_to_the_agent_that_was_approved() {
    let site = Site::new();
    // One replies file for both: the scripted model answers by the conversation's
    // count of assistant messages, and the two agents share the conversation.
    std::fs::write(
        site.path().join("agents/writers.replies.yaml"),
        "replies:\n  - content: Writing.\n    tool_calls: [{id: c_a, name: write_file, arguments: {path: a.txt, content: x}}]\n  - content: Written.\n  - content: Writing too.\n    tool_calls: [{id: c_b, name: write_file, arguments: {path: b.txt, content: x}}]\n  - content: Not written.\n  - content: Writing again.\n    tool_calls: [{id: c_a2, name: write_file, arguments: {path: a2.txt, content: x}}]\n  - content: Written again.\n",
    )
    .unwrap();
    for name in ["alpha", "beta"] {
        std::fs::write(
            site.path().join(format!("agents/{name}.yaml")),
            format!("name: {name}\nmodel: scripted:writers.replies.yaml\ninstructions: Write.\ntools: [write_file]\npermissions: {{write_file: confirm}}\n"),
        )
        .unwrap();
    }
    let server = Server::start(&site, None, &[]);
    let start = |agent: &'static str| json!({"agent": agent, "input": "Write.", "conversation_id": "shared-conv"});
    let (_, a) = server.post("/v1/runs", start("alpha")).await;
    assert_eq!(a["status"], "requires_action");
    let (_, a) = server
        .post(
            &format!("/v1/runs/{}/approve", a["id"].as_str().unwrap()),
            json!({"call_id": "c_a", "always": true}),
        )
        .await;
    assert_eq!(a["status"], "completed", "{a}");
    let (_, b) = server.post("/v1/runs", start("beta")).await;
    assert_eq!(
        b["status"], "requires_action",
        "beta's write_file ran on alpha's always: {b}"
    );
    assert!(!site.path().join("ws/b.txt").exists());
    let (_, b) = server
        .post(
            &format!("/v1/runs/{}/deny", b["id"].as_str().unwrap()),
            json!({"call_id": "c_b"}),
        )
        .await;
    assert_eq!(b["status"], "completed", "{b}");
    // And alpha's own later call runs on its always.
    let (_, a2) = server.post("/v1/runs", start("alpha")).await;
    assert_eq!(a2["status"], "completed", "{a2}");
    assert!(site.path().join("ws/a2.txt").exists());
}
