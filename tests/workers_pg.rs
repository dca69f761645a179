//! Workers on one PostgreSQL database, each deployed in a folder of its own: a run a
//! killed (SIGKILL) or stopped (SIGTERM) worker drove is taken up by another worker
//! (its call never runs again), and a run one worker drives is seen live by another:
//! its `/v1/events`, the run's SSE and its webhooks, within a second; a decision on the
//! other worker continues the run there.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::databases::fresh_postgres_database;
use crate::serving::{self, Server, Site};
use crate::takeup::{Hooks, marks, mover, mover_marking, records, second_pause_seen, serve, show};

/// Two sites (folders with their own agents, tools and workspace) on one new database.
fn two_workers_sites() -> (Site, Site) {
    let url = fresh_postgres_database();
    let (a, b) = (Site::on_database(&url), Site::on_database(&url));
    mover(&a);
    mover(&b);
    (a, b)
}

/// The `mark` calls of run `id`, as recorded.
fn mark_records(site: &Site, id: &str) -> Vec<Value> {
    records(site, id)
        .into_iter()
        .filter(|r| r["tool"] == "mark")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_worker_s_run_is_taken_up_by_another_worker_and_its_call_never_runs_again() {
    let (a, b) = two_workers_sites();
    let hooks = Hooks::default();
    let hook = hooks.listen().await;
    let first = serve(&a, &hook);
    let id = mover_marking(&first, a.path()).await;
    drop(first); // SIGKILL, mid-call
    assert_eq!(show(&b, &id)["status"], "in_progress");

    let second = serve(&b, &hook);
    // The lease runs out 10 s after its last renewal; workers look every 5 s.
    hooks
        .paused(&id, "call_save", Duration::from_secs(45))
        .await;
    let (_, run) = second.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "requires_action", "{run}");
    assert_eq!(
        marks(a.path()) + marks(b.path()),
        1,
        "the killed call never ran again"
    );
    let mark = mark_records(&b, &id);
    assert_eq!(mark.len(), 1, "{mark:?}");
    assert_eq!(mark[0]["status"], "failed", "{mark:?}");
    assert_eq!(mark[0]["error_kind"], "interrupted", "{mark:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_worker_hands_its_run_back_and_another_worker_takes_it_up() {
    let (a, b) = two_workers_sites();
    let hooks = Hooks::default();
    let hook = hooks.listen().await;
    let mut first = serve(&a, &hook);
    let id = mover_marking(&first, a.path()).await;
    let stopped = first.terminate(Duration::from_secs(20));
    assert!(stopped.success(), "{stopped:?}");
    let run = show(&b, &id);
    assert_eq!(run["status"], "in_progress", "{run}");
    assert_eq!(run["last_error"], Value::Null, "{run}");

    let _second = serve(&b, &hook);
    hooks
        .paused(&id, "call_save", Duration::from_secs(45))
        .await;
    assert_eq!(marks(a.path()) + marks(b.path()), 1);
    let mark = mark_records(&b, &id);
    assert_eq!(mark.len(), 1, "{mark:?}");
    // Running when its worker was stopped: let finish there (within the drain).
    assert_eq!(mark[0]["status"], "succeeded", "{mark:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_one_worker_drives_is_live_on_another_and_continues_where_it_is_decided() {
    let (a, b) = two_workers_sites();
    // `mark` asks first here; approving it drives the run (3 s of `mark`) to the
    // `write_file` pause on the worker that was asked.
    for site in [&a, &b] {
        std::fs::write(
            site.path().join("agents/mover.yaml"),
            "name: mover\nmodel: scripted:mover.replies.yaml\ninstructions: Go.\ntools: [mark, write_file]\npermissions: {mark: confirm}\n",
        )
        .unwrap();
    }
    let hooks = Hooks::default();
    let hook = hooks.listen().await;
    let worker_a = Server::start(&a, None, &[]);
    let worker_b = serve(&b, &hook);
    let on_b = serving::stream_events(&worker_b).await;

    let (s, run) = worker_a
        .post("/v1/runs", json!({"agent": "mover", "input": "go"}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "requires_action", "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    // B's webhook tells of the pause A made.
    hooks.paused(&id, "call_mark", Duration::from_secs(5)).await;

    // Approved on A: A drives it to its second pause while B's SSE follows it.
    let approve = {
        let (client, url) = (
            worker_a.client.clone(),
            worker_a.url(&format!("/v1/runs/{id}/approve")),
        );
        tokio::spawn(async move {
            let r = client
                .post(url)
                .json(&json!({"call_id": "call_mark"}))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap(), Instant::now())
        })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while marks(a.path()) == 0 {
        assert!(
            Instant::now() < deadline,
            "the approved call never started on A"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let watched = worker_b.get_sse(&format!("/v1/runs/{id}/events")).await;
    let sse_end = Instant::now();
    let (status, run, a_end) = approve.await.unwrap();
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "requires_action", "{run}");
    assert_eq!(marks(b.path()), 0, "B never ran the call A drove");

    second_pause_seen(&id, &watched, sse_end, &hooks, &on_b, a_end).await;

    // Decided on B: B continues it to the end; A reads it completed.
    let (s, run) = worker_b
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "call_save"}),
        )
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        std::fs::read_to_string(b.path().join("ws/out.txt")).unwrap(),
        "done",
        "the write ran on B, in B's workspace"
    );
    let (_, run) = worker_a.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "completed", "{run}");
}
