//! The execution engine: batches in call order with every failure kind recorded,
//! limits that hold under load (global, per category, queue bound, fifo / priority /
//! reject, workflow bypass), cancellation, events, and records committed before a
//! batch is reported done.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use toolgate::engine::{
    CallOutcome, Cancel, Engine, EngineConfig, LimitConfig, PreparedCall, Strategy, call, prepare,
};
use toolgate::protocol::{CallStatus, CallerKind, Event};
use toolgate::store::{CallQuery, Store};
use toolgate::tool::{
    Entry, LoadedTool, Part, Permission, Tool, ToolContext, ToolError, ToolLibrary, ToolOutput,
    ToolSpec,
};

/// Shared observations of the probe tools.
#[derive(Default)]
struct Watch {
    running: AtomicUsize,
    max_running: AtomicUsize,
    by_category: Mutex<HashMap<String, (usize, usize)>>,
    started: Mutex<Vec<String>>,
    finished: AtomicUsize,
    gate: Notify,
}

/// A tool that notes when it runs: `label`, `sleep_ms`, `parts` (streamed), `wait`
/// (until the gate opens), `panic`, `big` (a large result).
struct Probe {
    spec: ToolSpec,
    watch: Arc<Watch>,
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let w = &self.watch;
        let label = args
            .get("label")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        w.started.lock().unwrap().push(label.clone());
        let now = w.running.fetch_add(1, Ordering::SeqCst) + 1;
        w.max_running.fetch_max(now, Ordering::SeqCst);
        let cat = self.spec.category.clone().unwrap_or_default();
        {
            let mut m = w.by_category.lock().unwrap();
            let e = m.entry(cat.clone()).or_default();
            e.0 += 1;
            e.1 = e.1.max(e.0);
        }
        if args.get("wait").and_then(Value::as_bool) == Some(true) {
            w.gate.notified().await;
        }
        if let Some(n) = args.get("parts").and_then(Value::as_u64) {
            for i in 0..n {
                ctx.emit(Part::Text {
                    text: format!("{label}:part{i}:{}", "x".repeat(200)),
                });
                tokio::task::yield_now().await;
            }
        }
        let ms = args.get("sleep_ms").and_then(Value::as_u64).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        if args.get("panic").and_then(Value::as_bool) == Some(true) {
            panic!("probe panicked");
        }
        w.running.fetch_sub(1, Ordering::SeqCst);
        w.by_category.lock().unwrap().get_mut(&cat).unwrap().0 -= 1;
        w.finished.fetch_add(1, Ordering::SeqCst);
        if args.get("big").and_then(Value::as_bool) == Some(true) {
            return Ok(ToolOutput::text("y".repeat(200_000)));
        }
        Ok(ToolOutput::text(format!("done {label}")))
    }
}

fn probe_spec(name: &str, category: Option<&str>, timeout: Option<f64>) -> ToolSpec {
    ToolSpec {
        credentials: Default::default(),
        is_final: false,
        hidden: false,
        sandbox: None,
        name: name.into(),
        description: "probe".into(),
        parameters: json!({"type": "object", "properties": {
            "label": {"type": "string"}, "sleep_ms": {"type": "integer"}, "parts": {"type": "integer"},
            "wait": {"type": "boolean"}, "panic": {"type": "boolean"}, "big": {"type": "boolean"},
            "token": {"type": "string", "secret": true}}}),
        permission: Permission::Auto,
        entry: Entry::Builtin {
            handler: "probe".into(),
        },
        category: category.map(str::to_string),
        timeout,
        tags: vec![],
        version: None,
        output: None,
        read_only: false,
        display: Default::default(),
    }
}

struct Setup {
    lib: Arc<ToolLibrary>,
    watch: Arc<Watch>,
    _dir: tempfile::TempDir,
    store: Store,
}

fn setup() -> Setup {
    let watch = Arc::new(Watch::default());
    let mut lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    for (name, cat, timeout) in [
        ("probe", None, None),
        ("http_probe", Some("http"), None),
        ("slow_probe", None, Some(0.2)),
    ] {
        lib.add(Arc::new(Probe {
            spec: probe_spec(name, cat, timeout),
            watch: watch.clone(),
        }))
        .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("t.db")).unwrap();
    Setup {
        lib: Arc::new(lib),
        watch,
        _dir: dir,
        store,
    }
}

fn tool(lib: &ToolLibrary, name: &str) -> Result<Arc<LoadedTool>, ToolError> {
    lib.get(name).cloned().ok_or_else(|| ToolError::NotFound {
        name: name.into(),
        available: lib.names(),
    })
}

fn prep(lib: &ToolLibrary, id: &str, name: &str, args: Value) -> PreparedCall {
    prepare(
        call(id, name, args.as_object().unwrap().clone()),
        tool(lib, name),
        "conv",
        CallerKind::Agent,
    )
}

fn engine(s: &Setup, limits: LimitConfig) -> Engine {
    Engine::new(
        EngineConfig {
            limits,
            workspace: s._dir.path().to_path_buf(),
            ..EngineConfig::default()
        },
        None,
    )
}

/// Runs a batch and commits its records, as `toolgate tools call` does.
async fn run_and_record(
    s: &Setup,
    e: &Engine,
    batch: Vec<PreparedCall>,
    cancel: &Cancel,
) -> Vec<CallOutcome> {
    let outcomes = e.execute_batch(batch, cancel).await;
    toolgate::run::commit_outcomes(&s.store, outcomes)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_in_call_order_with_every_outcome_recorded() {
    let s = setup();
    let e = engine(&s, LimitConfig::default());
    let batch = vec![
        prep(
            &s.lib,
            "c1",
            "probe",
            json!({"label": "slow", "sleep_ms": 80}),
        ),
        prep(&s.lib, "c2", "probe", json!({"label": "fast"})),
        prep(&s.lib, "c3", "teleport", json!({})),
        prep(&s.lib, "c4", "probe", json!({"sleep_ms": "soon"})),
        prep(&s.lib, "c5", "probe", json!({"panic": true})),
        prep(&s.lib, "c6", "slow_probe", json!({"sleep_ms": 5000})),
        prep(&s.lib, "c7", "shell", json!({"command": "exit 2"})),
        prep(
            &s.lib,
            "c8",
            "probe",
            json!({"token": "hunter2", "big": true}),
        ),
    ];
    let out = run_and_record(&s, &e, batch, &Cancel::new()).await;
    let got: Vec<(&str, CallStatus, Option<&str>)> = out
        .iter()
        .map(|o| {
            (
                o.call_id.as_str(),
                o.status,
                o.record
                    .error_kind
                    .map(toolgate::protocol::ErrorKind::as_str),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("c1", CallStatus::Succeeded, None),
            ("c2", CallStatus::Succeeded, None),
            ("c3", CallStatus::Failed, Some("tool_not_found")),
            ("c4", CallStatus::Failed, Some("validation_error")),
            ("c5", CallStatus::Failed, Some("execution_error")),
            ("c6", CallStatus::Timeout, Some("timeout")),
            ("c7", CallStatus::Failed, None),
            ("c8", CallStatus::Succeeded, None),
        ]
    );
    assert_eq!(out[0].result.as_ref().unwrap().to_text(), "done slow");
    // Committed before the batch was reported done: readable at once.
    let page = s
        .store
        .calls(&CallQuery {
            conversation_id: Some("conv".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.total, 8);
    let by_id: HashMap<&str, _> = page
        .calls
        .iter()
        .map(|c| (c.record.call_id.as_str(), &c.record))
        .collect();
    assert!(
        by_id["c3"]
            .error_message
            .as_deref()
            .unwrap()
            .contains("the tools you have are")
    );
    assert!(
        by_id["c5"]
            .error_message
            .as_deref()
            .unwrap()
            .contains("probe panicked")
    );
    assert_eq!(by_id["c8"].arguments["token"], "[secret]");
    assert_eq!(by_id["c8"].result_size, 200_000);
    // Kept whole: under the record's cap.
    assert_eq!(
        by_id["c8"].result.as_ref().unwrap().len(),
        200_000.min(toolgate::store::RESULT_CAP)
    );
    assert!(by_id["c1"].duration_ms >= 80.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_and_category_limits_hold_under_load() {
    let s = setup();
    let limits = LimitConfig {
        global: 4,
        per_category: HashMap::from([("http".into(), 2)]),
        queue: 1000,
        strategy: Strategy::Fifo,
    };
    let e = engine(&s, limits);
    let mut batch = Vec::new();
    for i in 0..60 {
        let name = if i % 2 == 0 { "http_probe" } else { "probe" };
        batch.push(prep(
            &s.lib,
            &format!("c{i}"),
            name,
            json!({"label": i.to_string(), "sleep_ms": 5}),
        ));
    }
    let out = run_and_record(&s, &e, batch, &Cancel::new()).await;
    assert!(out.iter().all(|o| o.status == CallStatus::Succeeded));
    assert!(s.watch.max_running.load(Ordering::SeqCst) <= 4);
    assert!(
        s.watch.max_running.load(Ordering::SeqCst) >= 2,
        "calls did run concurrently"
    );
    assert!(s.watch.by_category.lock().unwrap()["http"].1 <= 2);
    let m = e.metrics();
    assert_eq!(m.all.acquired, 60);
    assert_eq!(m.all.completed, 60);
    assert_eq!(m.all.current, 0);
    assert_eq!(m.all.queued, 0);
    assert_eq!(m.per_category["http"].acquired, 30);
    assert!(m.all.mean_execution_ms >= 5.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_strategy_and_queue_bound() {
    let s = setup();
    let e = engine(
        &s,
        LimitConfig {
            global: 1,
            queue: 10,
            strategy: Strategy::Reject,
            ..LimitConfig::default()
        },
    );
    let batch: Vec<_> = (0..5)
        .map(|i| prep(&s.lib, &format!("c{i}"), "probe", json!({"sleep_ms": 100})))
        .collect();
    let out = run_and_record(&s, &e, batch, &Cancel::new()).await;
    let ok = out
        .iter()
        .filter(|o| o.status == CallStatus::Succeeded)
        .count();
    assert_eq!(ok, 1);
    let refused: Vec<_> = out
        .iter()
        .filter(|o| o.status == CallStatus::Failed)
        .collect();
    assert_eq!(refused.len(), 4);
    assert!(
        refused[0]
            .record
            .error_message
            .as_deref()
            .unwrap()
            .contains("refuse"),
        "{:?}",
        refused[0].record.error_message
    );
    assert_eq!(e.metrics().all.rejected, 4);
    assert!(refused.iter().all(|o| {
        o.record
            .error_kind
            .map(toolgate::protocol::ErrorKind::as_str)
            == Some("rejected")
    }));

    let e = engine(
        &s,
        LimitConfig {
            global: 1,
            queue: 2,
            strategy: Strategy::Fifo,
            ..LimitConfig::default()
        },
    );
    let batch: Vec<_> = (0..5)
        .map(|i| prep(&s.lib, &format!("q{i}"), "probe", json!({"sleep_ms": 50})))
        .collect();
    let out = run_and_record(&s, &e, batch, &Cancel::new()).await;
    assert_eq!(
        out.iter()
            .filter(|o| o.status == CallStatus::Succeeded)
            .count(),
        3
    );
    let full: Vec<_> = out
        .iter()
        .filter(|o| o.status == CallStatus::Failed)
        .collect();
    assert_eq!(full.len(), 2);
    assert!(
        full[0]
            .record
            .error_message
            .as_deref()
            .unwrap()
            .contains("queue of waiting calls is full")
    );
}

async fn wait_until(mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "condition never met"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_order_and_workflow_bypass() {
    let s = setup();
    let e = engine(
        &s,
        LimitConfig {
            global: 1,
            queue: 10,
            strategy: Strategy::Priority,
            ..LimitConfig::default()
        },
    );
    // Hold the only slot until the others are queued.
    let blocker = {
        let e = e.clone();
        let p = prep(
            &s.lib,
            "block",
            "probe",
            json!({"label": "block", "wait": true}),
        );
        tokio::spawn(async move { e.execute_batch(vec![p], &Cancel::new()).await })
    };
    wait_until(|| s.watch.started.lock().unwrap().len() == 1).await;
    let mut queued = Vec::new();
    for (label, priority) in [("low", 1), ("high", 9), ("mid", 5)] {
        let mut p = prep(&s.lib, label, "probe", json!({"label": label}));
        p.priority = priority;
        let worker = e.clone();
        queued.push(tokio::spawn(async move {
            worker.execute_batch(vec![p], &Cancel::new()).await
        }));
        let want = queued.len();
        wait_until(|| e_queued(&e) == want).await;
    }
    // A workflow call bypasses the limit while the slot is held.
    let mut wf = prep(&s.lib, "wf", "probe", json!({"label": "workflow"}));
    wf.caller = CallerKind::Workflow;
    let out = run_and_record(&s, &e, vec![wf], &Cancel::new()).await;
    assert_eq!(out[0].status, CallStatus::Succeeded);
    s.watch.gate.notify_one();
    blocker.await.unwrap();
    for q in queued {
        q.await.unwrap();
    }
    assert_eq!(
        *s.watch.started.lock().unwrap(),
        ["block", "workflow", "high", "mid", "low"]
    );
}

fn e_queued(e: &Engine) -> usize {
    e.metrics().all.queued
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_running_and_waiting_calls() {
    let s = setup();
    let e = engine(
        &s,
        LimitConfig {
            global: 2,
            ..LimitConfig::default()
        },
    );
    let cancel = Cancel::new();
    let batch: Vec<_> = (0..6)
        .map(|i| {
            prep(
                &s.lib,
                &format!("c{i}"),
                "probe",
                json!({"sleep_ms": 10_000}),
            )
        })
        .collect();
    let stopper = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let out = run_and_record(&s, &e, batch, &cancel).await;
    stopper.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.iter().all(|o| {
        o.status == CallStatus::Cancelled
            && o.record
                .error_kind
                .map(toolgate::protocol::ErrorKind::as_str)
                == Some("cancelled")
    }));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        s.watch.finished.load(Ordering::SeqCst),
        0,
        "cancelled tools kept running"
    );
    assert_eq!(e.metrics().all.current, 0);
    let page = s
        .store
        .calls(&CallQuery {
            status: Some(CallStatus::Cancelled),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.total, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_never_interleave_inside_a_part() {
    let s = setup();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let e = Engine::new(
        EngineConfig {
            workspace: s._dir.path().to_path_buf(),
            ..EngineConfig::default()
        },
        Some(tx),
    );
    let batch: Vec<_> = (0..4)
        .map(|i| {
            prep(
                &s.lib,
                &format!("c{i}"),
                "probe",
                json!({"label": format!("p{i}"), "parts": 20}),
            )
        })
        .collect();
    run_and_record(&s, &e, batch, &Cancel::new()).await;
    drop(e);
    let mut events = Vec::new();
    while let Some(ev) = rx.recv().await {
        events.push(ev);
    }
    let mut next_part: HashMap<String, usize> = HashMap::new();
    let (mut started, mut finished) = (0, 0);
    for ev in &events {
        match ev {
            Event::ToolStarted { .. } => started += 1,
            Event::ToolFinished { status, .. } => {
                finished += 1;
                assert_eq!(*status, CallStatus::Succeeded);
            }
            Event::ToolOutput {
                call_id,
                part: Part::Text { text },
            } => {
                let n = next_part.entry(call_id.clone()).or_default();
                let label = format!("p{}", &call_id[1..]);
                assert_eq!(
                    text,
                    &format!("{label}:part{n}:{}", "x".repeat(200)),
                    "a part arrived whole and in order"
                );
                *n += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((started, finished), (4, 4));
    assert!(next_part.values().all(|&n| n == 20));
}
