//! What the approval inbox needs from the API, over HTTP against a real `toolgate
//! serve`: the page and its assets (built in, no outside host), the feed of every
//! run (`GET /v1/events`), and a run's timeline (`GET /v1/runs/{id}/timeline`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use serving::Site;

#[tokio::test(flavor = "multi_thread")]
async fn the_page_and_its_assets_come_from_the_server_alone() {
    let site = Site::new();
    let server = site.serve(Some("k"));
    let client = reqwest::Client::new();
    for (path, kind) in [
        ("/", "text/html"),
        ("/runs/run_x", "text/html"),
        ("/conversations/conv_x", "text/html"),
        ("/inbox/app.js", "text/javascript"),
        ("/inbox/api.js", "text/javascript"),
        ("/inbox/dom.js", "text/javascript"),
        ("/inbox/items.js", "text/javascript"),
        ("/inbox/pages.js", "text/javascript"),
        ("/inbox/chart.js", "text/javascript"),
        ("/inbox/app.css", "text/css"),
        ("/inbox/icon.svg", "image/svg+xml"),
    ] {
        // No key needed for the page itself: it holds no data.
        let r = client.get(server.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let h = r.headers().clone();
        assert!(
            h["content-type"].to_str().unwrap().starts_with(kind),
            "{path}"
        );
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"),
            "{csp}"
        );
        let text = r.text().await.unwrap();
        // Nothing is fetched from another host: no absolute URL in a src, href, url()
        // or fetch (the SVG namespace is a name, not a request).
        let without_ns = text.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !without_ns.contains("://"),
            "{path} names an outside address"
        );
        assert!(
            !text.contains("@import") && !text.contains("url("),
            "{path}"
        );
    }
    let r = client
        .get(server.url("/inbox/nope.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // The data does need the key.
    let r = client.get(server.url("/v1/runs")).send().await.unwrap();
    assert_eq!(r.status(), 401);
}

/// Reads SSE events from a response until `want` says stop (or a generous deadline).
async fn read_until(
    r: reqwest::Response,
    mut want: impl FnMut(&str, &Value) -> bool,
) -> Vec<(String, Value)> {
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the feed went quiet")
            .expect("the feed ended")
            .unwrap();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            for (name, data) in serving::parse_sse(&block) {
                let stop = want(&name, &data);
                seen.push((name, data));
                if stop {
                    return seen;
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_feed_carries_every_run_and_each_pause() {
    let site = Site::new();
    let server = site.serve(None);
    let feed = reqwest::Client::new()
        .get(server.url("/v1/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status(), 200);
    assert!(
        feed.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let (_, run) = server
        .post("/v1/runs", json!({"agent": "assistant", "input": "Go."}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    // The run object and the pause's run event come in either order: read until both.
    let (mut object, mut paused) = (false, false);
    let seen = read_until(feed, |name, data| {
        object |= name == "run" && data["id"] == id;
        paused |= name == "run.requires_action";
        object && paused
    })
    .await;
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"run.started"), "{names:?}");
    assert!(names.contains(&"tool.finished"), "{names:?}");
    let (_, last) = seen
        .iter()
        .rfind(|(n, d)| n == "run" && d["id"] == id)
        .unwrap();
    // The run object comes once saved: paused, with its items.
    assert_eq!(last["status"], "requires_action");
    assert_eq!(
        last["required_action"]["items"].as_array().unwrap().len(),
        2
    );
    for (name, data) in &seen {
        if name != "run" {
            assert_eq!(data["run_id"], id.as_str(), "{name}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runs_timeline_has_messages_pauses_decisions_and_calls() {
    let site = Site::new();
    let server = site.serve(None);
    let (_, run) = server
        .post("/v1/runs", json!({"agent": "assistant", "input": "Go."}))
        .await;
    let id = run["id"].as_str().unwrap();
    let (status, t) = server.get(&format!("/v1/runs/{id}/timeline")).await;
    assert_eq!(status, 200);
    assert_eq!(t["run"]["status"], "requires_action");
    let pauses = t["pauses"].as_array().unwrap();
    assert_eq!(pauses.len(), 2);
    assert_eq!(pauses[0]["state"], "waiting");
    assert_eq!(pauses[0]["decision"], Value::Null);

    let (s, _) = server
        .post(
            &format!("/v1/runs/{id}/deny"),
            json!({"call_id": "call_write", "reason": "no", "by": "Ada"}),
        )
        .await;
    assert_eq!(s, 200);
    // The other item is answered from the command line, in another process.
    let out = std::process::Command::new(serving::bin())
        .current_dir(site.path())
        .arg("--db")
        .arg(site.db())
        .args(["submit", id, "--call", "call_ask", "--output", "Red"])
        .args(["--by", "ops-bot"])
        .env_remove("TOOLGATE_DB")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A prefix of the id answers too, as for every run route.
    let (_, t) = server
        .get(&format!("/v1/runs/{}/timeline", &id[..12]))
        .await;
    assert_eq!(t["run"]["id"], id);
    assert_eq!(t["run"]["status"], "completed");
    let roles: Vec<&str> = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.first(), Some(&"user"));
    assert_eq!(roles.last(), Some(&"assistant"));
    let pauses = t["pauses"].as_array().unwrap();
    assert_eq!(
        pauses[0]["decision"],
        json!({"type": "deny", "reason": "no"})
    );
    assert_eq!(pauses[1]["decision"]["type"], "submit");
    assert!(pauses.iter().all(|p| p["decided_at"].as_i64().unwrap() > 0));
    // Over HTTP decided_by is the identity (a server without keys: `local`), the typed
    // name kept beside it; the command line records its --by.
    assert_eq!(pauses[0]["decided_by"], "local");
    assert_eq!(pauses[0]["decided_as"], "Ada");
    assert_eq!(pauses[1]["decided_by"], "ops-bot");
    let calls: Vec<(&str, &str)> = t["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["call_id"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_calc", "succeeded"),
            ("call_write", "denied"),
            ("call_ask", "client")
        ]
    );
    let (s, e) = server.get("/v1/runs/run_nope/timeline").await;
    assert_eq!(s, 404, "{e}");
}
