//! One client's run, against whichever workers are up: start it (in a conversation of
//! its own, so that a start whose answer was lost can be found again), approve its
//! CONFIRM call on another worker, and wait until it completes; every request timed by
//! step, every 5xx kept with the worker that sent it.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Res;

/// The steps a run's requests are timed by.
pub const STEPS: [&str; 3] = ["start", "approve", "complete"];

/// How long one run may take, kills and take-ups included.
const RUN_DEADLINE: Duration = Duration::from_secs(180);

/// The workers' addresses: `None` while a worker is down.
#[derive(Default)]
pub struct Pool {
    pub slots: Vec<RwLock<Option<(String, String)>>>,
    /// Worker starts that were sent SIGKILL or SIGTERM: their 5xx are expected.
    pub signalled: Mutex<Vec<String>>,
}

impl Pool {
    /// A worker that is up, starting the search at slot `from`: (name, base URL).
    async fn pick(&self, from: usize) -> Res<(String, String)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            for i in 0..self.slots.len() {
                let slot = &self.slots[(from + i) % self.slots.len()];
                if let Some(w) = slot.read().unwrap_or_else(|p| p.into_inner()).clone() {
                    return Ok(w);
                }
            }
            if Instant::now() > deadline {
                return Err("no worker was up for 60 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// What one run brought: timings by step, the 5xx seen (worker, status, body).
#[derive(Default)]
pub struct Seen {
    pub timings: Vec<(&'static str, Duration)>,
    pub server_errors: Vec<(String, u16, String)>,
    /// Requests whose connection failed (a worker going down).
    pub dropped: usize,
}

/// An answer: the status and the JSON body (`Null` when it was not JSON).
struct Answer {
    status: u16,
    body: Value,
}

async fn send(seen: &mut Seen, worker: &str, req: reqwest::RequestBuilder) -> Option<Answer> {
    match req.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            let text = r.text().await.unwrap_or_default();
            if status >= 500 {
                seen.server_errors.push((
                    worker.to_string(),
                    status,
                    text.chars().take(300).collect(),
                ));
            }
            Some(Answer {
                status,
                body: serde_json::from_str(&text).unwrap_or(Value::Null),
            })
        }
        Err(_) => {
            seen.dropped += 1;
            None
        }
    }
}

/// One run from start to completion; its id.
pub async fn one_run(
    http: &reqwest::Client,
    pool: &Arc<Pool>,
    n: usize,
    seen: &mut Seen,
) -> Res<String> {
    let began = Instant::now();
    let conversation = format!("conv_soak_{n}");
    let mut at = n;
    // Start: until a worker answers with the run, or the run is found in its conversation.
    let t = Instant::now();
    let id = loop {
        if began.elapsed() > RUN_DEADLINE {
            return Err(format!("{conversation}: no run started in time"));
        }
        let (name, base) = pool.pick(at).await?;
        at += 1;
        let answer = send(
            seen,
            &name,
            http.post(format!("{base}/v1/runs")).json(&json!({
                "agent": "soak",
                "input": format!("deploy build {n}"),
                "conversation_id": conversation,
            })),
        )
        .await;
        match answer {
            Some(a) if a.status == 200 => {
                if let Some(id) = a.body["id"].as_str() {
                    break id.to_string();
                }
                return Err(format!("start: no run id in {}", a.body));
            }
            // Lost, refused while stopping, or the conversation already has the run.
            _ => {
                let (name, base) = pool.pick(at).await?;
                if let Some(a) = send(
                    seen,
                    &name,
                    http.get(format!("{base}/v1/runs?conversation_id={conversation}")),
                )
                .await
                    && let Some(id) = a.body[0]["id"].as_str()
                {
                    break id.to_string();
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    seen.timings.push(("start", t.elapsed()));
    // Approve once it waits; on another worker than the one that started it.
    let t = Instant::now();
    loop {
        if began.elapsed() > RUN_DEADLINE {
            return Err(format!("run {id}: not approved in time"));
        }
        let run = current(http, pool, &mut at, &id, seen).await?;
        match run["status"].as_str() {
            Some("requires_action") => {}
            Some("completed") => break,
            Some("in_progress") => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            other => return Err(format!("run {id} is {other:?}: {run}")),
        }
        let (name, base) = pool.pick(at).await?;
        at += 1;
        match send(
            seen,
            &name,
            http.post(format!("{base}/v1/runs/{id}/approve"))
                .json(&json!({"call_id": "call_deploy"})),
        )
        .await
        {
            // Decided here, or already decided through another worker: either way on.
            Some(a) if a.status == 200 || a.status == 409 => break,
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    seen.timings.push(("approve", t.elapsed()));
    // Complete: the run ends, driven by whichever worker holds it (or takes it up).
    let t = Instant::now();
    loop {
        if began.elapsed() > RUN_DEADLINE {
            return Err(format!("run {id}: did not complete in time"));
        }
        let run = current(http, pool, &mut at, &id, seen).await?;
        match run["status"].as_str() {
            Some("completed") => break,
            Some("in_progress" | "requires_action") => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => return Err(format!("run {id} is {other:?}: {run}")),
        }
    }
    seen.timings.push(("complete", t.elapsed()));
    Ok(id)
}

/// The run as a worker that is up reads it.
async fn current(
    http: &reqwest::Client,
    pool: &Arc<Pool>,
    at: &mut usize,
    id: &str,
    seen: &mut Seen,
) -> Res<Value> {
    for _ in 0..200 {
        let (name, base) = pool.pick(*at).await?;
        *at += 1;
        if let Some(a) = send(seen, &name, http.get(format!("{base}/v1/runs/{id}"))).await
            && a.status == 200
        {
            return Ok(a.body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("run {id}: no worker could read it"))
}
