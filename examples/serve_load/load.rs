//! The load: concurrent clients, each driving runs one after another (start, approve,
//! submit, get, calls), every request timed by its kind. With several servers, a
//! client starts its runs on one and decides and reads them on the next.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{EXPECTED_CALLS, KINDS, Plan, Res, Tally, truncate};

pub async fn load(
    bases: Vec<String>,
    clients: usize,
    plan: Plan,
    completed: Arc<AtomicUsize>,
) -> Res<(Tally, Duration)> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(clients)
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    // Everyone starts together.
    let gate = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut set = tokio::task::JoinSet::new();
    for c in 0..clients {
        let first = bases[c % bases.len()].clone();
        let next = bases[(c + 1) % bases.len()].clone();
        let (http, tally, gate, completed) = (
            http.clone(),
            Arc::clone(&tally),
            Arc::clone(&gate),
            Arc::clone(&completed),
        );
        set.spawn(async move {
            gate.wait().await;
            let start = Instant::now();
            let more = |r: usize| match plan {
                Plan::Runs(runs) => r < runs,
                Plan::For(d) => start.elapsed() < d,
            };
            let mut r = 0;
            while more(r) {
                let outcome = one_run(&http, [&first, &next], c, r).await;
                let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
                let (timings, result) = outcome;
                for (kind, d) in timings {
                    t.latencies.entry(kind).or_default().push(d);
                }
                t.started += 1;
                match result {
                    Ok(id) => {
                        t.completed += 1;
                        completed.fetch_add(1, Ordering::Relaxed);
                        t.run_ids.push(id);
                    }
                    Err(e) => t.failures.push(format!("client {c} run {r}: {e}")),
                }
                r += 1;
            }
        });
    }
    gate.wait().await;
    let start = Instant::now();
    while let Some(joined) = set.join_next().await {
        if let Err(e) = joined {
            tally
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .failures
                .push(format!("a client task stopped: {e}"));
        }
    }
    let elapsed = start.elapsed();
    let tally = std::mem::take(&mut *tally.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((tally, elapsed))
}

/// One timed request: status 200 and a JSON body, or why not.
async fn request(
    timings: &mut Vec<(&'static str, Duration)>,
    kind: &'static str,
    req: reqwest::RequestBuilder,
) -> Res<Value> {
    let t = Instant::now();
    let response = req.send().await.map_err(|e| format!("{kind}: {e}"))?;
    let status = response.status();
    let body = response.text().await.map_err(|e| format!("{kind}: {e}"))?;
    timings.push((kind, t.elapsed()));
    if status != reqwest::StatusCode::OK {
        return Err(format!("{kind}: HTTP {status}: {body}"));
    }
    serde_json::from_str(&body).map_err(|e| format!("{kind}: not JSON ({e}): {body}"))
}

fn expect_status(kind: &str, run: &Value, want: &str) -> Res<()> {
    match run["status"].as_str() {
        Some(s) if s == want => Ok(()),
        _ => Err(format!(
            "{kind}: expected a {want} run, got {}",
            truncate(&run.to_string())
        )),
    }
}

fn items(run: &Value) -> Vec<(String, String)> {
    run["required_action"]["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    (
                        i["call_id"].as_str().unwrap_or("").to_string(),
                        i["kind"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One run from start to its records; the run id when every step went as expected.
async fn one_run(
    http: &reqwest::Client,
    [base, then]: [&str; 2],
    client: usize,
    n: usize,
) -> (Vec<(&'static str, Duration)>, Res<String>) {
    let mut timings = Vec::with_capacity(KINDS.len());
    let result = async {
        let run = request(
            &mut timings,
            "start",
            http.post(format!("{base}/v1/runs")).json(&json!({
                "agent": "load",
                "input": format!("client {client}, run {n}: what is 2+3*4? save it."),
            })),
        )
        .await?;
        expect_status("start", &run, "requires_action")?;
        let id = run["id"].as_str().ok_or("start: no run id")?.to_string();
        let waiting = items(&run);
        let want = [
            ("call_write".to_string(), "approval".to_string()),
            ("call_ask".to_string(), "submit_tool_output".to_string()),
        ];
        if waiting != want {
            return Err(format!("start: run {id} waits for {waiting:?}"));
        }
        let run = request(
            &mut timings,
            "approve",
            http.post(format!("{then}/v1/runs/{id}/approve"))
                .json(&json!({"call_id": "call_write"})),
        )
        .await?;
        expect_status("approve", &run, "requires_action")?;
        let run = request(
            &mut timings,
            "submit",
            http.post(format!("{then}/v1/runs/{id}/submit"))
                .json(&json!({"call_id": "call_ask", "output": "blue"})),
        )
        .await?;
        expect_status("submit", &run, "completed")?;
        let run = request(
            &mut timings,
            "get",
            http.get(format!("{then}/v1/runs/{id}")),
        )
        .await?;
        expect_status("get", &run, "completed")?;
        if run["output"]
            .as_str()
            .is_none_or(|o| !o.starts_with("Done."))
        {
            return Err(format!("get: run {id} has output {}", run["output"]));
        }
        let page = request(
            &mut timings,
            "calls",
            http.get(format!("{then}/v1/calls?run_id={id}")),
        )
        .await?;
        let mut got: Vec<(String, String, String)> = page["calls"]
            .as_array()
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| {
                        let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
                        (s("call_id"), s("tool"), s("status"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        got.sort();
        let mut want: Vec<(String, String, String)> = EXPECTED_CALLS
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect();
        want.sort();
        if got != want || page["total"].as_u64() != Some(EXPECTED_CALLS.len() as u64) {
            return Err(format!("calls: run {id} has records {got:?}"));
        }
        Ok(id)
    }
    .await;
    (timings, result)
}
