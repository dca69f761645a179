//! `GET /metrics` against the Prometheus project's own Python parser: `toolgate serve`
//! is scraped before, during and after a scripted run that pauses and is decided, and
//! every counter moves by exactly what the run did (its call records are the oracle for
//! the tool counters). The same scrape in OpenMetrics (`Accept`, or `--metrics-addr`)
//! reads the same. Then 1,000 runs with a model that makes up a tool name and argument
//! per run, each under a model name of its own, leave the label sets bounded: no id,
//! argument or made-up name in any label.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fake_openai;
use crate::serving;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use fake_openai::{ev_call_args, ev_call_start, ev_finish, ev_role, ev_text, ev_usage};
use serde_json::{Value, json};
use serving::{Server, Site};

const KEY: &str = "metrics-key";

/// A sample: its name and labels (sorted).
type Series = (String, BTreeMap<String, String>);

/// Parses scrapes with `prometheus_client` (`classic`: its Prometheus text parser;
/// otherwise its OpenMetrics parser), sample by sample.
fn parse(python: &Path, dir: &Path, scrapes: &[&str], classic: bool) -> Vec<BTreeMap<Series, f64>> {
    let files: Vec<String> = scrapes
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let f = dir.join(format!("scrape{i}.txt"));
            std::fs::write(&f, text).unwrap();
            f.to_string_lossy().into_owned()
        })
        .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/metrics_parse.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(if classic { "classic" } else { "openmetrics" })
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the parser refused a scrape: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Value = serde_json::from_slice(&out.stdout).unwrap();
    files
        .iter()
        .map(|f| {
            let mut samples = BTreeMap::new();
            for family in parsed[f].as_array().unwrap() {
                assert_ne!(family["type"], "unknown", "an untyped family: {family}");
                for s in family["samples"].as_array().unwrap() {
                    let labels = s["labels"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect();
                    samples.insert(
                        (s["name"].as_str().unwrap().to_string(), labels),
                        s["value"].as_f64().unwrap(),
                    );
                }
            }
            samples
        })
        .collect()
}

fn series(name: &str, labels: &[(&str, &str)]) -> Series {
    (
        name.to_string(),
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

async fn scrape(server: &Server, accept: Option<&str>) -> (u16, String) {
    let mut req = server.client.get(server.url("/metrics")).bearer_auth(KEY);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// A webhook receiver answering 500 to its first attempt, 200 after; returns its URL
/// and the count of attempts.
async fn webhook() -> (String, Arc<AtomicUsize>) {
    let attempts = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&attempts);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let seen = Arc::clone(&seen);
            async move {
                match seen.fetch_add(1, Ordering::SeqCst) {
                    0 => StatusCode::INTERNAL_SERVER_ERROR,
                    _ => StatusCode::OK,
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, attempts)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

const COUNTED_REPLIES: &str = r#"replies:
  - content: Working.
    tool_calls:
      - {id: c_ok, name: calculator, arguments: {expression: "2+3"}}
      - {id: c_bad, name: calculator, arguments: {expression: "2+"}}
      - {id: c_none, name: teleport, arguments: {to: the moon}}
      - {id: c_write, name: write_file, arguments: {path: out.txt, content: hi}}
    usage: {prompt_tokens: 10, completion_tokens: 3}
  - content: Done.
    usage: {prompt_tokens: 12, completion_tokens: 2}
"#;

#[tokio::test]
async fn every_counter_moves_by_what_the_run_did() {
    let python = serving::python("the metrics test");
    let site = Site::new();
    std::fs::write(
        site.path().join("agents/counted.yaml"),
        "name: counted\nmodel: scripted:counted.replies.yaml\ninstructions: Count.\ntools: [calculator, write_file]\npermissions: {write_file: confirm}\n",
    )
    .unwrap();
    std::fs::write(
        site.path().join("agents/counted.replies.yaml"),
        COUNTED_REPLIES,
    )
    .unwrap();
    let (hook, attempts) = webhook().await;
    let metrics_port = free_port().to_string();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let server = Server::start_env(
        &site,
        Some(KEY),
        &["--notify-url", &hook, "--metrics-addr", &metrics_addr],
        &[("TOOLGATE_NOTIFY_SECRET", "s")],
    );
    // Behind the key on the main address.
    let r = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);

    let (status, before) = scrape(&server, None).await;
    assert_eq!(status, 200, "{before}");
    let (status, run) = server
        .post("/v1/runs", json!({"agent": "counted", "input": "count"}))
        .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "requires_action", "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    let (_, paused) = scrape(&server, None).await;
    let (status, done) = server
        .post(
            &format!("/v1/runs/{id}/deny"),
            json!({"call_id": "c_write", "reason": "not today"}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    // The pause's notification: refused once, then taken.
    let mut after = String::new();
    for _ in 0..500 {
        after = scrape(&server, None).await.1;
        if attempts.load(Ordering::SeqCst) >= 2
            && after.contains("toolgate_webhook_deliveries_total{outcome=\"delivered\"} 1")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let parsed = parse(&python, site.path(), &[&before, &paused, &after], true);
    let (before, paused, after) = (&parsed[0], &parsed[1], &parsed[2]);
    let delta =
        |s: &Series| after.get(s).copied().unwrap_or(0.0) - before.get(s).copied().unwrap_or(0.0);

    // The oracle for the tool counters: the run's own records.
    let (_, page) = server.get(&format!("/v1/calls?run_id={id}")).await;
    let records = page["calls"].as_array().unwrap().clone();
    assert_eq!(records.len(), 4, "{page}");
    let mut calls: BTreeMap<Series, f64> = BTreeMap::new();
    let mut ran: BTreeMap<Series, f64> = BTreeMap::new();
    for r in &records {
        let tool = match r["tool"].as_str().unwrap() {
            t @ ("calculator" | "write_file") => t,
            _ => "unknown",
        };
        let kind = r["error_kind"].as_str().unwrap_or("none");
        let status = r["status"].as_str().unwrap();
        *calls
            .entry(series(
                "toolgate_tool_calls_total",
                &[("tool", tool), ("status", status), ("error_kind", kind)],
            ))
            .or_default() += 1.0;
        if r["duration_ms"].as_f64().unwrap() > 0.0 {
            *ran.entry(series(
                "toolgate_tool_call_duration_seconds_count",
                &[("tool", tool)],
            ))
            .or_default() += 1.0;
        }
    }
    assert_eq!(ran.values().sum::<f64>(), 2.0, "{records:?}");
    let started = ran.values().sum::<f64>();
    let mut expected: BTreeMap<Series, f64> = calls.into_iter().chain(ran).collect();
    let agent = [("agent", "counted")];
    let scripted = [("model", "scripted")];
    let process = [("limiter", "process"), ("category", "all")];
    for (s, v) in [
        (
            series(
                "toolgate_runs_total",
                &[("agent", "counted"), ("status", "requires_action")],
            ),
            1.0,
        ),
        (
            series(
                "toolgate_runs_total",
                &[("agent", "counted"), ("status", "completed")],
            ),
            1.0,
        ),
        (series("toolgate_run_duration_seconds_count", &agent), 2.0),
        (
            series(
                "toolgate_model_calls_total",
                &[("model", "scripted"), ("outcome", "ok")],
            ),
            2.0,
        ),
        (
            series("toolgate_model_call_duration_seconds_count", &scripted),
            2.0,
        ),
        (
            series(
                "toolgate_model_tokens_total",
                &[("model", "scripted"), ("type", "input")],
            ),
            22.0,
        ),
        (
            series(
                "toolgate_model_tokens_total",
                &[("model", "scripted"), ("type", "output")],
            ),
            5.0,
        ),
        (
            series("toolgate_decision_latency_seconds_count", &agent),
            1.0,
        ),
        (series("toolgate_limiter_acquired_total", &process), started),
        (
            series("toolgate_limiter_completed_total", &process),
            started,
        ),
        (
            series(
                "toolgate_webhook_deliveries_total",
                &[("outcome", "delivered")],
            ),
            1.0,
        ),
        (series("toolgate_webhook_failed_attempts_total", &[]), 1.0),
        // The spend: the model's 22 + 5 tokens (the scripted model costs nothing).
        (
            series(
                "toolgate_spend_tokens_total",
                &[
                    ("agent", "counted"),
                    ("key", "api-key"),
                    ("tenant", "default"),
                ],
            ),
            27.0,
        ),
    ] {
        expected.insert(s, v);
    }
    for (s, want) in &expected {
        assert_eq!(
            delta(s),
            *want,
            "{s:?} moved by {}, the run did {want}",
            delta(s)
        );
    }
    // Nothing else counted moved, but for what the run timed (buckets and sums) and
    // the store's commits.
    let timed = [
        "toolgate_run_duration_seconds",
        "toolgate_model_call_duration_seconds",
        "toolgate_tool_call_duration_seconds",
        "toolgate_decision_latency_seconds",
        "toolgate_store_commit_duration_seconds",
    ];
    for (s, v) in after {
        let moved = *v != before.get(s).copied().unwrap_or(0.0);
        let is_counter = s.0.ends_with("_total") || timed.iter().any(|t| s.0.starts_with(t));
        if moved && is_counter && !expected.contains_key(s) {
            assert!(
                timed.iter().any(|t| s.0.starts_with(t)) && !s.0.ends_with("_count")
                    || s.0.starts_with("toolgate_store_commit_duration_seconds"),
                "{s:?} moved by {} though the run did not do that",
                v - before.get(s).copied().unwrap_or(0.0)
            );
        }
    }
    let commits: f64 = after
        .iter()
        .filter(|(s, _)| s.0 == "toolgate_store_commit_duration_seconds_count")
        .map(|(s, v)| v - before.get(s).copied().unwrap_or(0.0))
        .sum();
    assert!(commits >= 3.0, "the run's steps were committed: {commits}");
    // While paused, one approval waited; after, none.
    let waiting = series("toolgate_approvals_waiting", &[]);
    assert_eq!(paused[&waiting], 1.0);
    assert_eq!(after[&waiting], 0.0);
    assert!(paused[&series("toolgate_approvals_oldest_wait_seconds", &[])] >= 0.0);
    assert_eq!(after[&series("toolgate_runs_active", &agent)], 0.0);

    // OpenMetrics, asked for on the main address or read on --metrics-addr without a
    // key, says the same.
    let (_, om) = scrape(&server, Some("application/openmetrics-text; version=1.0.0")).await;
    let separate = reqwest::get(format!("http://{metrics_addr}/metrics"))
        .await
        .unwrap();
    assert_eq!(separate.status().as_u16(), 200);
    assert!(
        separate.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let om = parse(&python, site.path(), &[&om], false);
    for s in expected.keys() {
        assert_eq!(om[0].get(s), after.get(s), "{s:?}");
    }
}

/// A model server that answers every request with a call of a tool it makes up (and an
/// argument of its own), or with text once a tool's result came back.
async fn inventive_model() -> String {
    let made = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let made = Arc::clone(&made);
            async move {
                let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
                let answered = last.is_some_and(|m| m["role"] == "tool");
                let mut chunks = vec![ev_role()];
                if answered {
                    chunks.extend([ev_text("Done."), ev_finish("stop")]);
                } else {
                    let n = made.fetch_add(1, Ordering::SeqCst);
                    let args = json!({"value": format!("value-{n}")}).to_string();
                    chunks.extend([
                        ev_call_start(0, &format!("call_made_{n}"), &format!("made_up_{n}")),
                        ev_call_args(0, &args),
                        ev_finish("tool_calls"),
                    ]);
                }
                chunks.push(ev_usage(3, 2));
                let mut text = String::new();
                for c in chunks {
                    text.push_str(&format!("data: {c}\n\n"));
                }
                text.push_str("data: [DONE]\n\n");
                ([("content-type", "text/event-stream")], text)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    // Each answer goes out at once (no wait for the client's delayed ACK).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn labels_stay_bounded_after_a_thousand_runs() {
    let python = serving::python("the metrics test");
    let site = Site::new();
    std::fs::write(
        site.path().join("agents/inventive.yaml"),
        // One turn: the made-up call, then the run stops (one request per run).
        "name: inventive\nmodel: openai:base\ninstructions: Invent.\ntools: [calculator]\nmax_iterations: 1\n",
    )
    .unwrap();
    let base = inventive_model().await;
    let server = Arc::new(Server::start_env(
        &site,
        Some(KEY),
        &[],
        &[("OPENAI_BASE_URL", base.as_str()), ("OPENAI_API_KEY", "k")],
    ));
    let runs = 1000;
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let (server, next) = (Arc::clone(&server), Arc::clone(&next));
            tokio::spawn(async move {
                let mut ids = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= runs {
                        return ids;
                    }
                    let (status, run) = server
                        .post(
                            "/v1/runs",
                            json!({"agent": "inventive", "input": format!("run {i}"), "model": format!("openai:model-{i}")}),
                        )
                        .await;
                    assert_eq!(status, 200, "{run}");
                    assert_eq!(run["status"], "incomplete", "{run}");
                    ids.push(run["id"].as_str().unwrap().to_string());
                }
            })
        })
        .collect();
    let mut ids = Vec::new();
    for w in workers {
        ids.extend(w.await.unwrap());
    }
    assert_eq!(ids.len(), runs);
    let (_, text) = scrape(&server, None).await;
    let parsed = parse(&python, site.path(), &[&text], true);
    let mut values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, labels) in parsed[0].keys() {
        for (k, v) in labels {
            if k != "le" {
                values.entry(k.clone()).or_default().insert(v.clone());
            }
            for bad in ["run_", "conv_", "call_", "value-", "made_up_"] {
                assert!(
                    !v.contains(bad),
                    "{name}{{{k}={v:?}}}: an id or argument in a label"
                );
            }
        }
    }
    // 1,000 model names: the first few, then `other`.
    let models = &values["model"];
    assert!(models.contains("other"), "{models:?}");
    assert!(models.len() <= 33, "{} model label values", models.len());
    // 1,000 made-up tools: one `unknown`, beside the tools of the folder's agents (their
    // series are there from the start, at zero).
    let tools = &values["tool"];
    let folder = ["ask_user", "calculator", "nap", "unknown", "write_file"];
    assert!(tools.contains("unknown"), "{tools:?}");
    assert!(
        tools.iter().all(|t| folder.contains(&t.as_str())),
        "{tools:?}"
    );
    let calls = parsed[0]
        .iter()
        .filter(|(s, _)| s.0 == "toolgate_tool_calls_total")
        .map(|(_, v)| v)
        .sum::<f64>();
    assert_eq!(calls, runs as f64);
    assert!(
        parsed[0].len() < 2000,
        "{} series after {runs} runs",
        parsed[0].len()
    );
}
