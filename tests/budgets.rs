//! Budgets end to end against the fake OpenAI server, on both store backends: a
//! per-run token budget pauses the run on a `budget` item before the request that would
//! pass it (the server is asked nothing more), an approver raises it and the run
//! continues; a per-conversation dollar budget that fails the run, and keeps failing it
//! on resume without a request; and the spend that `stats` shows (CLI and store)
//! matching the usage the fake server reported, token for token, priced by the table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};
use toolgate::agent::Agent;
use toolgate::model::OpenAiConfig;
use toolgate::protocol::{Decision, ItemKind, RunObject, RunStatus};
use toolgate::run::{Runner, StartRun};
use toolgate::store::{Scope, SpendBy, Store};

use crate::databases::TestDb;
use crate::fake_openai::{
    FakeOpenAi, Reply, ev_call_args, ev_call_start, ev_finish, ev_role, ev_text, ev_usage,
};

/// gpt-4o-mini's shipped prices, in nanodollars per token: $0.15 and $0.60 per million.
const INPUT_NANOS: u64 = 150;
const OUTPUT_NANOS: u64 = 600;

/// A reply calling `echo` once, reporting `usage` (prompt, completion).
fn echo_call(id: &str, usage: (u64, u64)) -> Reply {
    Reply::Stream(vec![
        ev_role(),
        ev_call_start(0, id, "echo"),
        ev_call_args(0, r#"{"text": "hi"}"#),
        ev_finish("tool_calls"),
        ev_usage(usage.0, usage.1),
    ])
}

/// A final answer reporting `usage`.
fn answer(text: &str, usage: (u64, u64)) -> Reply {
    Reply::Stream(vec![
        ev_role(),
        ev_text(text),
        ev_finish("stop"),
        ev_usage(usage.0, usage.1),
    ])
}

/// A runner on `store` asking `server`, and the agent file written with `budget`.
fn setup(
    server: &FakeOpenAi,
    store: Store,
    dir: &std::path::Path,
    budget: &str,
) -> (Runner, Agent) {
    let file = dir.join("agent.yaml");
    std::fs::write(
        &file,
        format!("name: spender\nmodel: openai:gpt-4o-mini\ntools: [echo]\nmax_iterations: 10\nbudget: {budget}\n"),
    )
    .unwrap();
    let mut runner = Runner::new(store, toolgate::tool::sources::standard());
    runner.model_config = OpenAiConfig {
        api_key: Some("sk-test".into()),
        base_url: Some(server.base_url.clone()),
        attempts: 1,
        backoff: Duration::from_millis(5),
        ..OpenAiConfig::default()
    };
    (runner, Agent::load(&file).unwrap())
}

fn start(agent: Agent, dir: &std::path::Path) -> StartRun {
    StartRun {
        priority: None,
        owner: None,
        agent,
        model: None,
        conversation: None,
        message: "go".into(),
        tools_dir: None,
        workspace: Some(dir.to_path_buf()),
    }
}

/// The spend of `usages`, as the fake server reported them: (requests, prompt,
/// completion, nanodollars).
fn reported(usages: &[(u64, u64)]) -> (u64, u64, u64, u64) {
    let prompt: u64 = usages.iter().map(|u| u.0).sum();
    let completion: u64 = usages.iter().map(|u| u.1).sum();
    let cost = prompt * INPUT_NANOS + completion * OUTPUT_NANOS;
    (usages.len() as u64, prompt, completion, cost)
}

fn paused_item(run: &RunObject) -> toolgate::protocol::RequiredItem {
    assert_eq!(run.status, RunStatus::RequiresAction, "{run:?}");
    let items = &run.required_action.as_ref().unwrap().items;
    assert_eq!(items.len(), 1, "{items:?}");
    items[0].clone()
}

/// `toolgate stats ARGS --json` on `db`, parsed.
fn stats_json(db: &TestDb, dir: &std::path::Path, args: &[&str]) -> Value {
    let out = toolgate_test_support::toolgate(dir)
        .args(["stats", "--json", "--db", db.arg()])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_budget_pauses_is_raised_by_an_approver_and_continues() {
    for db in TestDb::both() {
        pause_raise_continue(&db).await;
    }
}

async fn pause_raise_continue(db: &TestDb) {
    let usages = [(200, 50), (100, 20), (300, 10)];
    let server = FakeOpenAi::start(vec![
        echo_call("c1", usages[0]),
        echo_call("c2", usages[1]),
        answer("done", usages[2]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (runner, agent) = setup(&server, db.open(), dir.path(), "{per: run, tokens: 300}");
    let run = runner.start(start(agent, dir.path())).await.unwrap();
    // 250 tokens after the first answer (under 300): asked again; 370 after the second:
    // paused before a third request.
    let item = paused_item(&run);
    assert_eq!(item.kind, ItemKind::Budget, "on {}", db.name());
    assert_eq!(item.tool, "budget");
    assert_eq!(item.arguments["limit"], json!(300));
    assert_eq!(item.arguments["spent"], json!(370));
    assert_eq!(item.arguments["whose"], json!("agent spender"));
    assert_eq!(server.requests().len(), 2, "no request beyond the limit");
    // A client's output is not how a budget is resumed; nor an edit without a limit.
    assert!(
        runner
            .decide(
                &run.id,
                Some(&item.call_id),
                Decision::Submit {
                    output: "x".into(),
                    is_error: false
                }
            )
            .await
            .is_err()
    );
    let no_limit = serde_json::Map::from_iter([("limit".to_string(), json!(0))]);
    assert!(
        runner
            .decide(
                &run.id,
                Some(&item.call_id),
                Decision::Edit {
                    arguments: no_limit
                }
            )
            .await
            .is_err()
    );
    let raise = serde_json::Map::from_iter([("limit".to_string(), json!(1000))]);
    runner
        .decide_by(
            &run.id,
            Some(&item.call_id),
            Decision::Edit { arguments: raise },
            Some("ann".into()),
        )
        .await
        .unwrap();
    let done = runner.resume(&run.id).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert_eq!(done.output.as_deref(), Some("done"));
    assert_eq!(server.requests().len(), 3);
    check_spend(db, dir.path(), &done, &usages).await;
}

/// The spend by agent, by conversation and by key in the store and in `toolgate
/// stats`: exactly what the fake server reported, priced by the table.
async fn check_spend(db: &TestDb, dir: &std::path::Path, run: &RunObject, usages: &[(u64, u64)]) {
    let (requests, prompt, completion, cost) = reported(usages);
    let store = db.open();
    for by in [
        SpendBy::Agent,
        SpendBy::Conversation,
        SpendBy::Tenant,
        SpendBy::Key,
    ] {
        let rows = store.spend_by(by, Scope::All).await.unwrap();
        assert_eq!(rows.len(), 1, "{by:?} on {}: {rows:?}", db.name());
        let s = rows[0].spend;
        assert_eq!(
            (
                s.requests,
                s.prompt_tokens,
                s.completion_tokens,
                s.total_tokens,
                s.cost_nanos
            ),
            (requests, prompt, completion, prompt + completion, cost),
            "{by:?} on {}",
            db.name()
        );
    }
    let by_agent = stats_json(db, dir, &["--spend-by", "agent"]);
    let row = &by_agent["rows"][0];
    assert_eq!(row["name"], json!("spender"));
    assert_eq!(row["total_tokens"], json!(prompt + completion));
    assert_eq!(row["cost_nanos"], json!(cost));
    assert_eq!(
        row["cost_usd"],
        json!(toolgate::protocol::budget::usd(cost)),
        "{by_agent}"
    );
    let conv = stats_json(db, dir, &["--conversation", &run.conversation_id]);
    assert_eq!(conv["spend"]["prompt_tokens"], json!(prompt), "{conv}");
    assert_eq!(conv["spend"]["completion_tokens"], json!(completion));
    assert_eq!(conv["spend"]["cost_nanos"], json!(cost));
    assert_eq!(
        conv["model_usage"]["total_tokens"],
        json!(prompt + completion)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_dollar_budget_fails_the_run_and_resuming_asks_nothing() {
    for db in TestDb::both() {
        fail_and_stay_failed(&db).await;
    }
}

async fn fail_and_stay_failed(db: &TestDb) {
    // 500 * 150 + 100 * 600 nanodollars: $0.000135, past $0.0001.
    let usages = [(500, 100)];
    let server = FakeOpenAi::start(vec![echo_call("c1", usages[0]), answer("never", (1, 1))]).await;
    let dir = tempfile::tempdir().unwrap();
    let (runner, agent) = setup(
        &server,
        db.open(),
        dir.path(),
        "[{per: conversation, usd: 0.0001, on_limit: fail}, {per: run, tokens: 100000, on_limit: warn}]",
    );
    let run = runner.start(start(agent, dir.path())).await.unwrap();
    assert_eq!(run.status, RunStatus::Failed, "on {}: {run:?}", db.name());
    let error = run.last_error.clone().unwrap();
    assert!(
        error.contains("budget of agent spender reached: 0.000135 of 0.0001 usd per conversation"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1, "no request past a hard limit");
    let again = runner.resume(&run.id).await.unwrap();
    assert_eq!(again.status, RunStatus::Failed);
    assert_eq!(
        server.requests().len(),
        1,
        "resuming does not ask the model either"
    );
    let (requests, prompt, completion, cost) = reported(&usages);
    let spend = db
        .open()
        .spend(&toolgate::store::SpendFilter {
            conversation: Some(run.conversation_id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (
            spend.requests,
            spend.prompt_tokens,
            spend.completion_tokens,
            spend.cost_nanos
        ),
        (requests, prompt, completion, cost)
    );
}
