//! `anthropic:MODEL` end to end against a fake Messages API server that streams the
//! documented event sequence chunk by chunk: an AUTO call and what goes back
//! (`tool_use` / `tool_result` blocks, system, tools with `input_schema`, headers), a
//! CONFIRM call paused in one process and approved from another, a client tool,
//! parallel `tool_use` blocks, a stream cut mid-block and retried, `thinking` blocks
//! kept in the history, `error` events (retried when overloaded, failing otherwise),
//! usage with the cache counts, xml mode, and the agent's settings in the request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fake_anthropic;
use crate::launching;

use std::time::Duration;

use fake_anthropic::{
    FakeAnthropic, Reply, ev_error, ev_json_delta, ev_message_start, ev_tool_start, text_reply,
    thinking_reply, tools_reply,
};
use serde_json::{Value, json};
use toolgate::agent::Agent;
use toolgate::model::OpenAiConfig;
use toolgate::protocol::{Decision, ItemKind, RunObject, RunStatus};
use toolgate::run::{Runner, StartRun};
use toolgate::store::{CallQuery, Store};

const ASK_USER: &str = "name: ask_user\ndescription: Ask the person.\nparameters:\n  - {name: question, type: string, required: true}\nentry: {type: client}\n";

struct World {
    dir: tempfile::TempDir,
    runner: Runner,
    agent: Agent,
}

/// An agent on `server` (its `model:` names the server's URL) with `rest` of its file.
fn world(server: &FakeAnthropic, model_extra: &str, rest: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(dir.path().join("tools/ask_user.yaml"), ASK_USER).unwrap();
    let yaml = format!(
        "name: claude\nmodel:\n  name: anthropic:claude-test\n  base_url: {}\n{model_extra}instructions: Be brief.\n{rest}",
        server.base_url
    );
    let file = dir.path().join("agent.yaml");
    std::fs::write(&file, yaml).unwrap();
    let agent = Agent::load(&file).unwrap();
    let mut runner = Runner::new(
        Store::open(dir.path().join("t.db")).unwrap(),
        toolgate::tool::sources::standard(),
    );
    runner.model_config = OpenAiConfig {
        attempts: 3,
        backoff: Duration::from_millis(5),
        ..OpenAiConfig::default()
    };
    World { dir, runner, agent }
}

async fn start(w: &World, message: &str) -> RunObject {
    w.runner
        .start(StartRun {
            priority: None,
            owner: None,
            agent: w.agent.clone(),
            model: None,
            conversation: None,
            message: message.into(),
            tools_dir: Some(w.dir.path().join("tools")),
            workspace: Some(w.dir.path().to_path_buf()),
        })
        .await
        .unwrap()
}

/// The blocks of the last user turn of a request.
fn last_user_blocks(body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    last["content"].as_array().unwrap().clone()
}

#[tokio::test]
async fn an_auto_call_goes_back_as_tool_result_blocks() {
    let server = FakeAnthropic::start(vec![
        tools_reply(
            "Let me compute.",
            &[("toolu_1", "calculator", json!({"expression": "2+3*4"}))],
        ),
        text_reply("It is 14."),
    ])
    .await;
    let w = world(&server, "", "tools: [calculator]\n");
    let run = start(&w, "What is 2+3*4?").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    assert_eq!(run.output.as_deref(), Some("It is 14."));
    // Usage: input and output of both turns, and the cache counts of the first.
    assert_eq!(run.usage.model_calls, 2);
    assert_eq!(run.usage.prompt_tokens, 20 + 12);
    assert_eq!(run.usage.completion_tokens, 9 + 6);
    assert_eq!(run.usage.cache_read_tokens, 7);
    assert_eq!(run.usage.cache_creation_tokens, 3);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first["model"], "claude-test");
    assert_eq!(first["stream"], true);
    assert_eq!(first["system"], "Be brief.");
    assert_eq!(first["max_tokens"], 8192);
    assert_eq!(first["tools"][0]["name"], "calculator");
    assert_eq!(first["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(first["messages"][0]["role"], "user");
    let head = &server.heads()[0];
    assert!(head.starts_with("post /v1/messages "), "{head}");
    assert!(head.contains("anthropic-version: 2023-06-01"), "{head}");

    let second = &requests[1];
    let assistant = &second["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "text", "text": "Let me compute."})
    );
    assert_eq!(
        assistant["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {"expression": "2+3*4"}})
    );
    let results = last_user_blocks(second);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert_eq!(results[0]["content"], "14");
}

#[tokio::test]
async fn parallel_tool_use_blocks_run_and_answer_in_order() {
    let server = FakeAnthropic::start(vec![
        tools_reply(
            "",
            &[
                ("toolu_a", "calculator", json!({"expression": "1+1"})),
                ("toolu_b", "calculator", json!({"expression": "6*7"})),
            ],
        ),
        text_reply("2 and 42."),
    ])
    .await;
    let w = world(&server, "", "tools: [calculator]\n");
    let run = start(&w, "Both sums").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    let results = last_user_blocks(&server.requests()[1]);
    let ids: Vec<&str> = results
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["toolu_a", "toolu_b"]);
    assert_eq!(results[0]["content"], "2");
    assert_eq!(results[1]["content"], "42");
    let calls = w
        .runner
        .store
        .calls(&CallQuery {
            run_id: Some(run.id.clone()),
            ..CallQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(calls.total, 2);
}

#[tokio::test]
async fn a_client_tool_pauses_and_the_submitted_output_goes_back() {
    let server = FakeAnthropic::start(vec![
        tools_reply(
            "",
            &[("toolu_q", "ask_user", json!({"question": "Colour?"}))],
        ),
        text_reply("Blue it is."),
    ])
    .await;
    let w = world(&server, "", "tools: [ask_user]\n");
    let run = start(&w, "Pick a colour").await;
    assert_eq!(run.status, RunStatus::RequiresAction);
    let items = &run.required_action.as_ref().unwrap().items;
    assert_eq!(items[0].kind, ItemKind::SubmitToolOutput);
    assert_eq!(items[0].call_id, "toolu_q");
    w.runner
        .decide(
            &run.id,
            Some("toolu_q"),
            Decision::Submit {
                output: "blue".into(),
                is_error: false,
            },
        )
        .await
        .unwrap();
    let run = w.runner.resume(&run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    let results = last_user_blocks(&server.requests()[1]);
    assert_eq!(results[0]["tool_use_id"], "toolu_q");
    assert_eq!(results[0]["content"], "blue");
}

#[tokio::test]
async fn a_stream_cut_mid_block_is_retried_and_the_call_runs_once() {
    let cut = Reply::Cut(vec![
        ev_message_start(20, 0, 0),
        ev_tool_start(0, "toolu_1", "calculator"),
        ev_json_delta(0, "{\"expression\": \"2+"),
    ]);
    let server = FakeAnthropic::start(vec![
        cut,
        tools_reply(
            "",
            &[("toolu_1", "calculator", json!({"expression": "2+2"}))],
        ),
        text_reply("Four."),
    ])
    .await;
    let w = world(&server, "", "tools: [calculator]\n");
    let run = start(&w, "2+2?").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    assert_eq!(server.requests().len(), 3);
    let calls = w
        .runner
        .store
        .calls(&CallQuery {
            run_id: Some(run.id.clone()),
            ..CallQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(calls.total, 1);
    assert_eq!(calls.calls[0].record.result.as_deref(), Some("4"));
}

#[tokio::test]
async fn thinking_blocks_are_kept_in_the_history() {
    let server = FakeAnthropic::start(vec![
        thinking_reply(
            "The user wants a sum; the calculator does it.",
            "sig-abc123",
            &[("toolu_t", "calculator", json!({"expression": "3+4"}))],
        ),
        text_reply("Seven."),
    ])
    .await;
    let w = world(
        &server,
        "  reasoning_effort: low\n",
        "tools: [calculator]\n",
    );
    let run = start(&w, "3+4?").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    let requests = server.requests();
    assert_eq!(
        requests[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    let assistant = &requests[1]["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "The user wants a sum; the calculator does it.", "signature": "sig-abc123"})
    );
    assert_eq!(assistant[1]["type"], "tool_use");
}

#[tokio::test]
async fn an_overloaded_error_event_is_retried_and_another_error_fails_the_run() {
    let overloaded = Reply::Stream(vec![
        ev_message_start(5, 0, 0),
        ev_error("overloaded_error", "Overloaded"),
    ]);
    let server = FakeAnthropic::start(vec![
        overloaded,
        Reply::Status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
        ),
        text_reply("Fine now."),
    ])
    .await;
    let w = world(&server, "", "");
    let run = start(&w, "Hello").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    assert_eq!(server.requests().len(), 3);

    let server = FakeAnthropic::start(vec![Reply::Stream(vec![
        ev_message_start(5, 0, 0),
        ev_error("invalid_request_error", "messages: bad block"),
    ])])
    .await;
    let w = world(&server, "", "");
    let run = start(&w, "Hello").await;
    assert_eq!(run.status, RunStatus::Failed);
    let error = run.last_error.unwrap();
    assert!(
        error.contains("invalid_request_error: messages: bad block"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1, "not retried");
}

#[tokio::test]
async fn a_prompt_too_long_refusal_compacts_and_retries() {
    let too_long = || {
        Reply::Status(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#.into(),
        )
    };
    let server = FakeAnthropic::start(vec![
        tools_reply(
            "",
            &[("toolu_1", "calculator", json!({"expression": "1+2"}))],
        ),
        tools_reply(
            "",
            &[("toolu_2", "calculator", json!({"expression": "3+4"}))],
        ),
        too_long(),
        text_reply("Done."),
    ])
    .await;
    let w = world(
        &server,
        "",
        "tools: [calculator]\ncontext: {strategy: truncate}\n",
    );
    let run = start(&w, "Sums").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    assert_eq!(run.usage.compactions, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let before = requests[2]["messages"].as_array().unwrap().len();
    let after = requests[3]["messages"].as_array().unwrap().len();
    assert!(after < before, "{before} -> {after}");
}

#[tokio::test]
async fn xml_mode_works_on_anthropic() {
    let server = FakeAnthropic::start(vec![
        text_reply(
            "<tool_call><name>calculator</name><params><expression><![CDATA[5*5]]></expression></params></tool_call>",
        ),
        text_reply("25."),
    ])
    .await;
    let w = world(&server, "", "mode: xml\ntools: [calculator]\n");
    let run = start(&w, "5*5?").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    let requests = server.requests();
    assert!(requests[0].get("tools").is_none());
    assert!(
        requests[0]["system"]
            .as_str()
            .unwrap()
            .contains("calculator")
    );
    let results = last_user_blocks(&requests[1]);
    assert_eq!(results[0]["type"], "text");
    assert!(results[0]["text"].as_str().unwrap().contains("25"));
}

#[tokio::test]
async fn settings_reach_the_anthropic_request() {
    let server = FakeAnthropic::start(vec![text_reply("Hi.")]).await;
    let w = world(
        &server,
        "  temperature: 0.3\n  top_p: 0.8\n  max_tokens: 500\n  headers: {anthropic-beta: tools-2024}\n",
        "",
    );
    let run = start(&w, "Hello").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    let body = &server.requests()[0];
    assert_eq!(body["temperature"], 0.3);
    assert_eq!(body["top_p"], 0.8);
    assert_eq!(body["max_tokens"], 500);
    assert!(body.get("thinking").is_none());
    assert!(server.heads()[0].contains("anthropic-beta: tools-2024"));
}

/// Through the binary, with `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`: a CONFIRM
/// call pauses the run (exit 3), another process approves it, and the run completes.
#[test]
fn a_confirm_call_paused_and_approved_from_another_process() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeAnthropic::start(vec![
        tools_reply(
            "",
            &[("toolu_c", "calculator", json!({"expression": "6*7"}))],
        ),
        text_reply("42."),
    ]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agent.yaml"),
        "name: careful\nmodel: anthropic:claude-test\ntools: [calculator]\npermissions: {calculator: confirm}\n",
    )
    .unwrap();
    let cmd = |args: &[&str]| {
        launching::command(args, dir.path(), "0")
            .env("ANTHROPIC_BASE_URL", &server.base_url)
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("TOOLGATE_MODEL_BACKOFF_MS", "5")
            .output()
            .unwrap()
    };
    let out = cmd(&["run", "--agent", "agent.yaml", "--json", "6*7?"]);
    assert_eq!(out.status.code(), Some(3), "{}", launching::stderr(&out));
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(last["required_action"]["items"][0]["call_id"], "toolu_c");
    let id = last["id"].as_str().unwrap().to_string();
    let out = cmd(&["approve", &id, "--call", "toolu_c", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", launching::stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(server.heads()[0].contains("x-api-key: sk-ant-test"));
    let results = last_user_blocks(&requests[1]);
    assert_eq!(results[0]["tool_use_id"], "toolu_c");
    assert_eq!(results[0]["content"], "42");
    let shown = cmd(&["show", &id, "--json"]);
    let run: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(run["status"], "completed");
    assert_eq!(run["model"], "anthropic:claude-test");
}

#[test]
fn without_a_key_or_a_server_the_error_names_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agent.yaml"),
        "name: keyless\nmodel: anthropic:claude-test\n",
    )
    .unwrap();
    let out = launching::command(&["run", "--agent", "agent.yaml", "Hi"], dir.path(), "0")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = launching::stderr(&out);
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
