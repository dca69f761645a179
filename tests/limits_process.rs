//! One limiter per process, end to end: `toolgate serve` drives several runs at once and
//! their call records (start and duration, as stored) show the limits held across runs
//! (an agent's `limits:` shared by all its runs, the process's `--limit-global` and
//! `--limit-category` by all agents); under the `priority` strategy a queue of waiting
//! calls is served by priority (a run's request, then the agent's `priority:`); a call
//! the limits refuse is recorded as `rejected`; `GET /v1/limits` shows the limiter live.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::time::Duration;

use serde_json::{Value, json};
use serving::{Server, Site};

/// A command tool that sleeps `seconds`, in `category` when given.
fn sleeper(site: &Site, name: &str, seconds: f64, category: Option<&str>) {
    let category = category.map_or(String::new(), |c| format!("category: {c}\n"));
    std::fs::write(
        site.path().join(format!("tools/{name}.yaml")),
        format!(
            "name: {name}\ndescription: Sleeps.\npermission: auto\n{category}timeout: 60\nentry:\n  type: command\n  command: sh\n  args: [-c, \"sleep {seconds}; echo done\"]\n"
        ),
    )
    .unwrap();
}

/// An agent calling `tools` (one call each, all in its first turn), then answering.
fn agent(site: &Site, name: &str, tools: &[&str], extra: &str) {
    let calls: Vec<String> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{{id: c{i}, name: {t}, arguments: {{}}}}"))
        .collect();
    let mut unique: Vec<&str> = tools.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let dir = site.path().join("agents");
    std::fs::write(
        dir.join(format!("{name}.yaml")),
        format!(
            "name: {name}\nmodel: scripted:{name}.replies.yaml\ninstructions: Work.\ntools: [{}]\n{extra}",
            unique.join(", ")
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("{name}.replies.yaml")),
        format!(
            "replies:\n  - content: Working.\n    tool_calls: [{}]\n  - content: Done.\n",
            calls.join(", ")
        ),
    )
    .unwrap();
}

/// Starts a run on its own task; its answer is the finished run object.
fn start(server: &Server, body: Value) -> tokio::task::JoinHandle<Value> {
    let (client, url) = (server.client.clone(), server.url("/v1/runs"));
    tokio::spawn(async move {
        let r = client.post(url).json(&body).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        r.json::<Value>().await.unwrap()
    })
}

/// The finished runs of `starts`, each completed.
async fn finished(starts: Vec<tokio::task::JoinHandle<Value>>) -> Vec<Value> {
    let mut runs = Vec::new();
    for s in starts {
        let run = s.await.unwrap();
        assert_eq!(run["status"], "completed", "{run}");
        runs.push(run);
    }
    runs
}

/// The call records of `run`.
async fn records(server: &Server, run: &Value) -> Vec<Value> {
    let (status, page) = server
        .get(&format!("/v1/calls?run_id={}", run["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200, "{page}");
    page["calls"].as_array().unwrap().clone()
}

/// (start, end) of a record in milliseconds: started when it got its slot, for as long
/// as it ran (the slot is held at least that long).
fn span(r: &Value) -> (f64, f64) {
    let start = r["started_at"].as_i64().unwrap() as f64;
    (start, start + r["duration_ms"].as_f64().unwrap())
}

/// No two of `records` ran at the same time (start times are whole milliseconds,
/// rounded down: one more millisecond is allowed for that).
fn never_overlap(records: &[Value]) {
    let mut spans: Vec<(f64, f64, String)> = records
        .iter()
        .map(|r| {
            let (s, e) = span(r);
            assert_eq!(r["status"], "succeeded", "{r}");
            (s, e, format!("{}/{}", r["run_id"], r["call_id"]))
        })
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in spans.windows(2) {
        assert!(
            w[0].1 < w[1].0 + 1.0,
            "{} ran until {} but {} started at {}: they overlapped",
            w[0].2,
            w[0].1,
            w[1].2,
            w[1].0
        );
    }
}

#[tokio::test]
async fn an_agents_limits_are_shared_by_all_its_runs() {
    let site = Site::new();
    sleeper(&site, "hold", 0.3, None);
    agent(&site, "solo", &["hold", "hold"], "limits: {global: 1}\n");
    let server = site.serve(None);
    let runs = finished(vec![
        start(&server, json!({"agent": "solo", "input": "one"})),
        start(&server, json!({"agent": "solo", "input": "two"})),
    ])
    .await;
    let mut all = records(&server, &runs[0]).await;
    all.extend(records(&server, &runs[1]).await);
    assert_eq!(all.len(), 4);
    never_overlap(&all);
    // The share is the agent's, live: every call took a slot there.
    let (_, limits) = server.get("/v1/limits").await;
    assert_eq!(limits["agents"]["solo"]["config"]["global"], 1, "{limits}");
    assert_eq!(
        limits["agents"]["solo"]["metrics"]["acquired"], 4,
        "{limits}"
    );
    assert_eq!(limits["process"]["metrics"]["acquired"], 4, "{limits}");
    assert_eq!(limits["process"]["metrics"]["current"], 0, "{limits}");
}

#[tokio::test]
async fn the_process_limits_hold_across_agents() {
    let site = Site::new();
    sleeper(&site, "hold", 0.3, None);
    agent(&site, "a", &["hold"], "");
    agent(&site, "b", &["hold"], "");
    let server = Server::start(&site, None, &["--limit-global", "1"]);
    let runs = finished(vec![
        start(&server, json!({"agent": "a", "input": "go"})),
        start(&server, json!({"agent": "b", "input": "go"})),
    ])
    .await;
    let mut all = records(&server, &runs[0]).await;
    all.extend(records(&server, &runs[1]).await);
    never_overlap(&all);
}

#[tokio::test]
async fn a_category_limit_holds_across_agents() {
    let site = Site::new();
    sleeper(&site, "fetch", 0.3, Some("http"));
    sleeper(&site, "think", 0.01, None);
    agent(&site, "a", &["fetch", "think", "fetch"], "");
    agent(&site, "b", &["fetch", "think"], "");
    let server = Server::start(&site, None, &["--limit-category", "http=1"]);
    let runs = finished(vec![
        start(&server, json!({"agent": "a", "input": "go"})),
        start(&server, json!({"agent": "b", "input": "go"})),
    ])
    .await;
    let mut fetches = Vec::new();
    for run in &runs {
        let rs = records(&server, run).await;
        assert!(rs.iter().all(|r| r["status"] == "succeeded"), "{rs:?}");
        fetches.extend(rs.into_iter().filter(|r| r["tool"] == "fetch"));
    }
    assert_eq!(fetches.len(), 3);
    never_overlap(&fetches);
    let (_, limits) = server.get("/v1/limits").await;
    let http = &limits["process"]["metrics"]["per_category"]["http"];
    assert_eq!(http["acquired"], 3, "{limits}");
    assert_eq!(http["completed"], 3, "{limits}");
}

/// Waits until the process limiter shows `running` calls holding a slot and `queued`
/// waiting.
async fn until_limiter(server: &Server, running: u64, queued: u64) {
    for _ in 0..1500 {
        let (_, l) = server.get("/v1/limits").await;
        let m = &l["process"]["metrics"];
        if m["current"] == running && m["queued"] == queued {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the limiter never had {running} running and {queued} queued");
}

#[tokio::test]
async fn a_queue_is_served_by_priority() {
    let site = Site::new();
    // Every call waits for the gate file in the workspace, then holds its slot a while.
    std::fs::write(
        site.path().join("tools/gate.yaml"),
        "name: gate\ndescription: Waits for the gate.\npermission: auto\ntimeout: 60\nentry:\n  type: command\n  command: sh\n  args: [-c, \"while [ ! -e gate ]; do sleep 0.02; done; sleep 0.05; echo open\"]\n",
    )
    .unwrap();
    agent(&site, "plain", &["gate"], "");
    agent(&site, "urgent", &["gate"], "priority: 5\n");
    let server = Server::start(
        &site,
        None,
        &["--limit-global", "1", "--limit-strategy", "priority"],
    );
    // One call holds the only slot; three queue behind it, worst first.
    let blocker = start(&server, json!({"agent": "plain", "input": "block"}));
    until_limiter(&server, 1, 0).await;
    let low = start(&server, json!({"agent": "plain", "input": "low"}));
    until_limiter(&server, 1, 1).await;
    let agent_high = start(&server, json!({"agent": "urgent", "input": "agent's"}));
    until_limiter(&server, 1, 2).await;
    let asked_high = start(
        &server,
        json!({"agent": "plain", "input": "request's", "priority": 9}),
    );
    until_limiter(&server, 1, 3).await;
    std::fs::write(site.path().join("ws/gate"), "").unwrap();
    let runs = finished(vec![blocker, asked_high, agent_high, low]).await;
    let mut starts = Vec::new();
    for run in &runs {
        let rs = records(&server, run).await;
        assert_eq!(rs.len(), 1);
        starts.push(span(&rs[0]).0);
    }
    // Served by priority: the request's 9, the agent's 5, then 0 (which came first).
    assert!(
        starts.windows(2).all(|w| w[0] < w[1]),
        "blocker, request 9, agent 5, plain 0 started at {starts:?}"
    );
    never_overlap(&{
        let mut all = Vec::new();
        for run in &runs {
            all.extend(records(&server, run).await);
        }
        all
    });
}

#[tokio::test]
async fn a_call_the_limits_refuse_is_recorded_as_rejected() {
    let site = Site::new();
    sleeper(&site, "hold", 0.3, None);
    agent(
        &site,
        "strict",
        &["hold", "hold"],
        "limits: {global: 1, strategy: reject}\n",
    );
    let server = site.serve(None);
    let runs = finished(vec![start(
        &server,
        json!({"agent": "strict", "input": "both"}),
    )])
    .await;
    let rs = records(&server, &runs[0]).await;
    let mut outcomes: Vec<(String, Value)> = rs
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_string(),
                r["error_kind"].clone(),
            )
        })
        .collect();
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        outcomes,
        [
            ("failed".to_string(), json!("rejected")),
            ("succeeded".to_string(), Value::Null)
        ],
        "{rs:?}"
    );
    let (_, limits) = server.get("/v1/limits").await;
    assert_eq!(
        limits["agents"]["strict"]["metrics"]["rejected"], 1,
        "{limits}"
    );
}

#[test]
fn stats_limits_shows_a_servers_limiter_live() {
    let site = Site::new();
    let server = Server::start(
        &site,
        Some("k"),
        &["--limit-global", "3", "--limit-category", "http=2"],
    );
    let out = std::process::Command::new(serving::bin())
        .args(["stats", "--limits", "--server", &server.base])
        .env("TOOLGATE_API_KEY", "k")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("process limits: 3 at once"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("process") && l.contains("all")),
        "{text}"
    );
    let json = std::process::Command::new(serving::bin())
        .args(["stats", "--limits", "--json", "--server", &server.base])
        .env("TOOLGATE_API_KEY", "k")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["process"]["config"]["per_category"]["http"], 2, "{v}");
    // Without the key, the server refuses, and the command says so.
    let refused = std::process::Command::new(serving::bin())
        .args(["stats", "--limits", "--server", &server.base])
        .env_remove("TOOLGATE_API_KEY")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"));
}
