//! Runs that go on whoever drives them: a `serve` killed (SIGKILL) or stopped (SIGTERM)
//! while it drives a run leaves it to the next `serve` on the same database, which
//! takes it up without anyone typing `resume` and drives it to its pause (the webhook
//! fires for it); the slow call it was running ran at most once. And a run approved
//! from the CLI that pauses again reaches the server's `/v1/events`, the run's SSE and
//! the webhook within a second, though the server never drove it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use serde_json::{Value, json};
use serving::{Server, Site, toolgate_in};

pub(crate) const SECRET: &str = "takeup-test-secret";

/// Every webhook body received, with when it came.
#[derive(Clone, Default)]
pub(crate) struct Hooks(Arc<Mutex<Vec<(Instant, Value)>>>);

impl Hooks {
    /// A receiver on a free port; its URL.
    pub(crate) async fn listen(&self) -> String {
        let seen = self.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |body: Bytes| {
                let seen = seen.clone();
                async move {
                    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    seen.0.lock().unwrap().push((Instant::now(), v));
                    axum::http::StatusCode::OK
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// Waits (at most `limit`) for a `run.requires_action` notification of run `id`
    /// waiting on `call`; when it came.
    pub(crate) async fn paused(&self, id: &str, call: &str, limit: Duration) -> Instant {
        let deadline = Instant::now() + limit;
        loop {
            if let Some((at, _)) = self.0.lock().unwrap().iter().find(|(_, v)| {
                v["event"] == "run.requires_action"
                    && v["run_id"] == id
                    && v["waiting"]
                        .as_array()
                        .is_some_and(|w| w.iter().any(|i| i["call_id"] == call))
            }) {
                return *at;
            }
            assert!(
                Instant::now() < deadline,
                "no pause notification for {id} on {call}: {:?}",
                self.0.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// `mover`: one call of `mark` (AUTO: it notes each start in `ws/marks.txt`, then sleeps
/// 3 s), then one of `write_file` (CONFIRM), then an answer.
pub(crate) fn mover(site: &Site) {
    let marks = site.path().join("ws/marks.txt");
    std::fs::write(
        site.path().join("tools/mark.yaml"),
        format!(
            "name: mark\ndescription: Marks, then waits.\npermission: auto\ntimeout: 60\nentry:\n  type: command\n  command: sh\n  args: [-c, \"echo ran >> {}; sleep 3; echo marked\"]\n",
            marks.display()
        ),
    )
    .unwrap();
    site.agent(
        "mover",
        "[mark, write_file]",
        "  - content: Marking.\n    tool_calls: [{id: call_mark, name: mark, arguments: {}}]\n  - content: Saving.\n    tool_calls: [{id: call_save, name: write_file, arguments: {path: out.txt, content: done}}]\n  - content: All done.\n",
    );
}

pub(crate) fn marks(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("ws/marks.txt"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

pub(crate) fn serve(site: &Site, hook: &str) -> Server {
    Server::start_env(
        site,
        None,
        &["--notify-url", hook],
        &[("TOOLGATE_NOTIFY_SECRET", SECRET)],
    )
}

/// Starts a `mover` run on `server` (its answer is not awaited) and waits until `mark`
/// has started; the run id.
pub(crate) async fn mover_marking(server: &Server, dir: &Path) -> String {
    let client = server.client.clone();
    let url = server.url("/v1/runs");
    tokio::spawn(async move {
        let _ = client
            .post(url)
            .json(&json!({"agent": "mover", "input": "go"}))
            .send()
            .await;
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while marks(dir) == 0 {
        assert!(Instant::now() < deadline, "mark never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, runs) = server.get("/v1/runs?status=in_progress").await;
    runs[0]["id"].as_str().unwrap().to_string()
}

pub(crate) fn show(site: &Site, id: &str) -> Value {
    let out = toolgate_in(site.path(), &site.db(), &["show", id, "--json"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

pub(crate) fn records(site: &Site, id: &str) -> Vec<Value> {
    let out = toolgate_in(site.path(), &site.db(), &["calls", "--run", id, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v.as_array()
        .cloned()
        .or_else(|| v["calls"].as_array().cloned())
        .unwrap_or_default()
}

/// The second server takes the run up and drives it to the `write_file` pause; the
/// webhook tells of it.
async fn taken_up_to_the_pause(site: &Site, hooks: &Hooks, hook: &str, id: &str) {
    let second = serve(site, hook);
    // A lease runs out 10 s after its last renewal; the server looks every 5 s.
    hooks.paused(id, "call_save", Duration::from_secs(45)).await;
    let (_, run) = second.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "requires_action", "{run}");
    assert_eq!(
        run["required_action"]["items"][0]["call_id"], "call_save",
        "{run}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_s_run_is_taken_up_by_the_next_and_its_call_never_runs_again() {
    let site = Site::new();
    mover(&site);
    let hooks = Hooks::default();
    let hook = hooks.listen().await;
    let first = serve(&site, &hook);
    let id = mover_marking(&first, site.path()).await;
    drop(first); // SIGKILL, mid-call
    assert_eq!(show(&site, &id)["status"], "in_progress");

    taken_up_to_the_pause(&site, &hooks, &hook, &id).await;
    assert_eq!(marks(site.path()), 1, "the killed call never ran again");
    let recs = records(&site, &id);
    let mark: Vec<&Value> = recs.iter().filter(|r| r["tool"] == "mark").collect();
    assert_eq!(mark.len(), 1, "{recs:?}");
    assert_eq!(mark[0]["status"], "failed", "{recs:?}");
    assert_eq!(mark[0]["error_kind"], "interrupted", "{recs:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_server_hands_its_run_back_and_the_next_takes_it_up() {
    let site = Site::new();
    mover(&site);
    let hooks = Hooks::default();
    let hook = hooks.listen().await;
    let mut first = serve(&site, &hook);
    let id = mover_marking(&first, site.path()).await;
    let stopped = first.terminate(Duration::from_secs(20));
    assert!(stopped.success(), "{stopped:?}");
    // Given back: still in progress, no lease, nothing failed.
    let run = show(&site, &id);
    assert_eq!(run["status"], "in_progress", "{run}");
    assert_eq!(run["last_error"], Value::Null, "{run}");

    taken_up_to_the_pause(&site, &hooks, &hook, &id).await;
    assert_eq!(marks(site.path()), 1, "the call ran once");
    let recs = records(&site, &id);
    let mark: Vec<&Value> = recs.iter().filter(|r| r["tool"] == "mark").collect();
    assert_eq!(mark.len(), 1, "{recs:?}");
    // Running when the server was stopped: it was let finish (3 s, within the drain).
    assert_eq!(mark[0]["status"], "succeeded", "{recs:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_approved_from_the_cli_that_pauses_again_reaches_every_watcher() {
    let site = Site::new();
    // `mark` (CONFIRM here), then `write_file`: approving the first from the CLI
    // drives the run (3 s of `mark`) to its second pause, in the CLI's process.
    mover(&site);
    std::fs::write(
        site.path().join("agents/mover.yaml"),
        "name: mover\nmodel: scripted:mover.replies.yaml\ninstructions: Go.\ntools: [mark, write_file]\npermissions: {mark: confirm}\n",
    )
    .unwrap();
    let hooks = Hooks::default();
    let hook = hooks.listen().await;
    let server = serve(&site, &hook);
    let (s, run) = server
        .post("/v1/runs", json!({"agent": "mover", "input": "go"}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "requires_action", "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    hooks
        .paused(&id, "call_mark", Duration::from_secs(20))
        .await;

    // Everything the server streams, from now on.
    let all = serving::stream_events(&server).await;

    let (dir, db, cli_id) = (site.path().to_path_buf(), site.db(), id.clone());
    let approver = std::thread::spawn(move || {
        toolgate_in(&dir, &db, &["approve", &cli_id, "--call", "call_mark"])
    });
    // While the CLI drives it: the run's SSE follows it to the second pause.
    let deadline = Instant::now() + Duration::from_secs(20);
    while marks(site.path()) == 0 {
        assert!(Instant::now() < deadline, "the approved call never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let watched = server.get_sse(&format!("/v1/runs/{id}/events")).await;
    let sse_end = Instant::now();
    let out = approver.join().unwrap();
    assert_eq!(out.status.code(), Some(3), "paused again: {out:?}");
    let cli_end = Instant::now();

    let last = watched.last().unwrap();
    assert_eq!(last.1["status"], "requires_action", "{watched:?}");
    // Within a second of the CLI's pause (it exits a moment after saving it).
    second_pause_seen(&id, &watched, sse_end, &hooks, &all, cli_end).await;
    // The pause as a run event too; it follows the run object on the stream, so it may
    // still be on its way when the object has come.
    serving::first_streamed(&all, Duration::from_secs(5), |e, d| {
        e == "run.requires_action" && d["run_id"] == id.as_str()
    })
    .await;
}

/// Run `id`'s pause on `call_save`, made elsewhere, reached every watcher within a
/// second of `end` (when its maker answered): the run's SSE (`watched`, which ended at
/// `sse_end`), the webhook and `/v1/events` (`all`).
pub(crate) async fn second_pause_seen(
    id: &str,
    watched: &[(String, Value)],
    sse_end: Instant,
    hooks: &Hooks,
    all: &serving::Streamed,
    end: Instant,
) {
    let last = watched.last().unwrap();
    assert_eq!(last.0, "run", "{watched:?}");
    assert_eq!(
        last.1["required_action"]["items"][0]["call_id"], "call_save",
        "{watched:?}"
    );
    let hooked = hooks.paused(id, "call_save", Duration::from_secs(5)).await;
    let streamed = serving::first_streamed(all, Duration::from_secs(5), |event, data| {
        event == "run"
            && data["id"] == id
            && data["required_action"]["items"][0]["call_id"] == "call_save"
    })
    .await;
    for (what, at) in [
        ("SSE", sse_end),
        ("webhook", hooked),
        ("/v1/events", streamed),
    ] {
        assert!(
            at <= end + Duration::from_secs(1),
            "{what} came {:?} after the pause's maker answered",
            at.saturating_duration_since(end)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_continues_with_the_agent_of_its_name_in_the_server_s_own_folders() {
    // Started by the CLI from one checkout (its agent file and tools there), paused;
    // that checkout is then gone. A server deployed elsewhere with the same agent,
    // under another file name, on the same database, continues it.
    let site = Site::new();
    mover(&site);
    let first = tempfile::tempdir().unwrap();
    for d in ["agents", "tools"] {
        std::fs::create_dir(first.path().join(d)).unwrap();
    }
    for f in [
        "agents/mover.yaml",
        "agents/mover.replies.yaml",
        "tools/mark.yaml",
    ] {
        std::fs::copy(site.path().join(f), first.path().join(f)).unwrap();
    }
    std::fs::write(
        first.path().join("agents/mover.yaml"),
        "name: mover\nmodel: scripted:mover.replies.yaml\ninstructions: Go.\ntools: [mark, write_file]\npermissions: {mark: confirm}\n",
    )
    .unwrap();
    let out = toolgate_in(
        first.path(),
        &site.db(),
        &[
            "run",
            "--agent",
            first.path().join("agents/mover.yaml").to_str().unwrap(),
            "--tools",
            first.path().join("tools").to_str().unwrap(),
            "--workspace",
            site.path().join("ws").to_str().unwrap(),
            "--json",
            "go",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let paused: Value = serde_json::from_slice(
        out.stdout
            .split(|b| *b == b'\n')
            .rfind(|l| !l.is_empty())
            .unwrap(),
    )
    .unwrap();
    let id = paused["id"].as_str().unwrap().to_string();
    drop(first); // the checkout the run started in is gone

    // The server's copy: the same agent under another file name.
    std::fs::write(
        site.path().join("agents/deployed-mover.yaml"),
        "name: mover\nmodel: scripted:mover.replies.yaml\ninstructions: Go.\ntools: [mark, write_file]\npermissions: {mark: confirm}\n",
    )
    .unwrap();
    std::fs::remove_file(site.path().join("agents/mover.yaml")).unwrap();
    let server = Server::start(&site, None, &[]);
    let (s, run) = server
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "call_mark"}),
        )
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "requires_action", "{run}");
    assert_eq!(
        run["required_action"]["items"][0]["call_id"], "call_save",
        "{run}"
    );
    assert_eq!(marks(site.path()), 1, "mark ran with the server's tools");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_decider_died_before_continuing_it_is_taken_up() {
    let site = Site::new();
    mover(&site);
    std::fs::write(
        site.path().join("agents/mover.yaml"),
        "name: mover\nmodel: scripted:mover.replies.yaml\ninstructions: Go.\ntools: [mark, write_file]\npermissions: {mark: confirm}\n",
    )
    .unwrap();
    let out = toolgate_in(
        site.path(),
        &site.db(),
        &[
            "run",
            "--agent",
            "agents/mover.yaml",
            "--workspace",
            "ws",
            "--json",
            "go",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "paused: {out:?}");
    let id = toolgate::store::Store::open(site.db())
        .unwrap()
        .runs(toolgate::store::Scope::All, None, None, 1)
        .await
        .unwrap()[0]
        .id
        .clone();
    // A decider that claims the run to continue it, and is gone before it does.
    {
        let store = toolgate::store::Store::open(site.db()).unwrap();
        let decided = toolgate::run::Runner::new(store, toolgate::tool::sources::standard())
            .decide(
                &id,
                Some("call_mark"),
                toolgate::protocol::Decision::Approve,
            )
            .await
            .unwrap();
        assert_eq!(decided.waiting, 0);
    }
    assert_eq!(show(&site, &id)["status"], "requires_action");
    let hooks = Hooks::default();
    let hook = hooks.listen().await;
    let _server = serve(&site, &hook);
    // The claim runs out 10 s after the decision; the server looks every 5 s.
    hooks
        .paused(&id, "call_save", Duration::from_secs(45))
        .await;
    assert_eq!(marks(site.path()), 1, "the approved call ran once");
}
