//! The loop end to end against a fake OpenAI server that streams its replies chunk by
//! chunk: what the loop sends back (every result after its call, ids matching, denials
//! with their reason, xml mode's system prompt and result messages), retries, and
//! failures that a later resume recovers from.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fake_openai;

use std::path::Path;
use std::time::Duration;

use fake_openai::{FakeOpenAi, Reply, calls_reply, text_reply};
use serde_json::{Value, json};
use tempfile::TempDir;
use toolgate::agent::Agent;
use toolgate::model::OpenAiConfig;
use toolgate::protocol::{Decision, ItemKind, RunEvent, RunObject, RunStatus, events};
use toolgate::run::{Runner, StartRun};
use toolgate::store::{CallQuery, Store};

struct Setup {
    dir: TempDir,
    runner: Runner,
    events: tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
}

fn setup(server: &FakeOpenAi, agent_yaml: &str, attempts: u32) -> (Setup, Agent) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.yaml");
    std::fs::write(&file, agent_yaml).unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let agent = Agent::load(&file).unwrap();
    let store = Store::open(dir.path().join("t.db")).unwrap();
    let mut runner = Runner::new(store, toolgate::tool::sources::standard());
    runner.model_config = OpenAiConfig {
        api_key: Some("sk-test".into()),
        base_url: Some(server.base_url.clone()),
        attempts,
        backoff: Duration::from_millis(5),
        ..OpenAiConfig::default()
    };
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    runner.events = Some(tx);
    (
        Setup {
            dir,
            runner,
            events,
        },
        agent,
    )
}

fn start(agent: Agent, ws: &Path, message: &str) -> StartRun {
    StartRun {
        priority: None,
        owner: None,
        agent,
        model: None,
        conversation: None,
        message: message.into(),
        tools_dir: None,
        workspace: Some(ws.to_path_buf()),
    }
}

const NATIVE: &str = "name: helper\nmodel: openai:gpt-test\nmode: native\ninstructions: Be brief.\ntools: [calculator, echo, write_file]\n";
const XML: &str = "name: xml-helper\nmodel: openai:gpt-test\nmode: xml\ninstructions: Be brief.\ntools: [calculator]\n";

/// Every tool message answers a call of the assistant message before it, in order,
/// and every call is answered before the next assistant message.
fn assert_results_follow_calls(messages: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                assert!(open.is_empty(), "calls without results: {open:?}");
                open = m["tool_calls"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .map(|c| c["id"].as_str().unwrap().to_string())
                            .collect()
                    })
                    .unwrap_or_default();
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                assert_eq!(
                    open.first().map(String::as_str),
                    Some(id),
                    "result out of order"
                );
                open.remove(0);
            }
            _ => assert!(open.is_empty(), "a message came between calls and results"),
        }
    }
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<RunEvent>) -> Vec<RunEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

#[tokio::test]
async fn native_results_follow_their_calls() {
    let server = FakeOpenAi::start(vec![
        calls_reply(
            "Let me compute.",
            &[
                ("call_a", "calculator", json!({"expression": "2+3*4"})),
                ("call_b", "echo", json!({"text": "hi"})),
            ],
        ),
        text_reply("It is 14.", 3),
    ])
    .await;
    let (mut s, agent) = setup(&server, NATIVE, 2);
    let ws = s.dir.path().join("ws");
    let run = s
        .runner
        .start(start(agent, &ws, "What is 2+3*4?"))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert_eq!(run.output.as_deref(), Some("It is 14."));
    assert_eq!(run.usage.prompt_tokens, 30);
    assert_eq!(run.usage.completion_tokens, 13);
    assert_eq!(run.usage.model_calls, 2);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first["model"], "gpt-test");
    assert_eq!(first["stream"], true);
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["calculator", "echo", "write_file"]);
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(first["messages"][0]["content"], "Be brief.");
    assert_eq!(first["messages"][1]["content"], "What is 2+3*4?");

    let messages = requests[1]["messages"].as_array().unwrap();
    assert_results_follow_calls(messages);
    let assistant = &messages[2];
    assert_eq!(assistant["content"], "Let me compute.");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_a");
    let args: Value = serde_json::from_str(
        assistant["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({"expression": "2+3*4"}));
    assert_eq!(messages[3]["tool_call_id"], "call_a");
    assert_eq!(messages[3]["content"], "14");
    assert_eq!(messages[4]["tool_call_id"], "call_b");
    assert_eq!(messages[4]["content"], "hi");

    let events = drain(&mut s.events);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::TextDelta(events::TextDelta { text, .. }) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me compute.It is 14.");
    assert!(matches!(events.last(), Some(RunEvent::RunCompleted(_))));
}

#[tokio::test]
async fn a_denial_reaches_the_model_with_its_reason() {
    let server = FakeOpenAi::start(vec![
        calls_reply(
            "",
            &[(
                "call_w",
                "write_file",
                json!({"path": "x.txt", "content": "data"}),
            )],
        ),
        text_reply("Understood, I did not write it.", 8),
    ])
    .await;
    let (s, agent) = setup(&server, NATIVE, 2);
    let ws = s.dir.path().join("ws");
    let run = s
        .runner
        .start(start(agent, &ws, "Save data"))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::RequiresAction);
    let items = run.required_action.unwrap().items;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].call_id, "call_w");
    assert_eq!(items[0].kind, ItemKind::Approval);
    assert_eq!(
        items[0].arguments,
        json!({"path": "x.txt", "content": "data"})
    );

    let decided = s
        .runner
        .decide(
            &run.id,
            Some("call_w"),
            Decision::Deny {
                reason: Some("not today".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(decided.waiting, 0);
    let run = s.runner.resume(&run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert!(!ws.join("x.txt").exists());
    let messages = server.requests()[1]["messages"].as_array().unwrap().clone();
    assert_results_follow_calls(&messages);
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "call_w");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("Reason: not today")
    );
    let page = s.runner.store.calls(&CallQuery::default()).await.unwrap();
    assert_eq!(page.calls.len(), 1);
    assert_eq!(page.calls[0].record.status.as_str(), "denied");
}

#[tokio::test]
async fn xml_mode_instructs_in_the_system_prompt_and_answers_in_the_next_message() {
    let reply = "I will calculate.\n<tool_call>\n  <name>calculator</name>\n  <params>\n    <expression><![CDATA[6*7]]></expression>\n  </params>\n</tool_call>";
    let server = FakeOpenAi::start(vec![text_reply(reply, 7), text_reply("42.", 2)]).await;
    let (s, agent) = setup(&server, XML, 2);
    let ws = s.dir.path().join("ws");
    let run = s
        .runner
        .start(start(agent, &ws, "6 times 7?"))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert_eq!(run.output.as_deref(), Some("42."));
    let requests = server.requests();
    assert!(
        requests[0].get("tools").is_none(),
        "xml mode sends no tools"
    );
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("Be brief."));
    assert!(system.contains("<tool_call>") && system.contains("calculator"));
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], reply);
    assert!(messages[2].get("tool_calls").is_none());
    let results = messages[3]["content"].as_str().unwrap();
    assert_eq!(messages[3]["role"], "user");
    assert!(results.contains("<tool_result>"), "{results}");
    assert!(results.contains("<status>ok</status>"));
    assert!(results.contains("<![CDATA[42]]>"), "{results}");
    assert!(results.contains("<call_id>call_"));
}

#[tokio::test]
async fn auto_calls_run_at_once_and_results_keep_the_call_order() {
    let server = FakeOpenAi::start(vec![
        calls_reply(
            "",
            &[
                (
                    "call_w",
                    "write_file",
                    json!({"path": "a.txt", "content": "A"}),
                ),
                ("call_c", "calculator", json!({"expression": "1+1"})),
            ],
        ),
        text_reply("Both done.", 4),
    ])
    .await;
    let (s, agent) = setup(&server, NATIVE, 2);
    let ws = s.dir.path().join("ws");
    let run = s.runner.start(start(agent, &ws, "go")).await.unwrap();
    assert_eq!(run.status, RunStatus::RequiresAction);
    // The AUTO call already ran and is recorded while the run waits.
    let q = CallQuery {
        run_id: Some(run.id.clone()),
        ..CallQuery::default()
    };
    let recorded = s.runner.store.calls(&q).await.unwrap().calls;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].record.tool, "calculator");
    s.runner
        .decide(&run.id, None, Decision::Approve)
        .await
        .unwrap();
    let run = s.runner.resume(&run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "A");
    let messages = server.requests()[1]["messages"].as_array().unwrap().clone();
    assert_results_follow_calls(&messages);
    let ids: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_w", "call_c"]);
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let server = FakeOpenAi::start(vec![
        Reply::Status(500, "upstream exploded".into()),
        Reply::Cut(vec![fake_openai::ev_role(), fake_openai::ev_text("Half an ans")]),
        Reply::Status(
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}"#.into(),
        ),
        text_reply("Fine now.", 5),
    ])
    .await;
    let (mut s, agent) = setup(&server, NATIVE, 4);
    let ws = s.dir.path().join("ws");
    let run = s.runner.start(start(agent, &ws, "hello")).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(
        run.output.as_deref(),
        Some("Fine now."),
        "a cut stream is not an answer"
    );
    assert_eq!(server.requests().len(), 4);
    let retries: Vec<u32> = drain(&mut s.events)
        .iter()
        .filter_map(|e| match e {
            RunEvent::ModelRetry(events::ModelRetry { attempt, .. }) => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [1, 2, 3]);
}

#[tokio::test]
async fn a_run_that_failed_on_the_model_resumes() {
    let server = FakeOpenAi::start(vec![
        Reply::Status(503, "down".into()),
        Reply::Status(503, "still down".into()),
        text_reply("Back again.", 5),
    ])
    .await;
    let (s, agent) = setup(&server, NATIVE, 2);
    let ws = s.dir.path().join("ws");
    let run: RunObject = s.runner.start(start(agent, &ws, "hello")).await.unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let error = run.last_error.unwrap();
    assert!(
        error.contains("failed 2 time(s)") && error.contains("still down"),
        "{error}"
    );
    assert_eq!(server.remaining(), 1);
    let run = s.runner.resume(&run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.output.as_deref(), Some("Back again."));
    // The resumed request carries the same conversation, sent once.
    let requests = server.requests();
    assert_eq!(requests[2]["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_refused_request_fails_at_once() {
    let server = FakeOpenAi::start(vec![Reply::Status(
        400,
        r#"{"error":{"message":"model 'gpt-test' does not exist","type":"invalid_request_error","param":null,"code":null}}"#.into(),
    )])
    .await;
    let (s, agent) = setup(&server, NATIVE, 4);
    let ws = s.dir.path().join("ws");
    let run = s.runner.start(start(agent, &ws, "hello")).await.unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    assert!(run.last_error.unwrap().contains("does not exist"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_dead_server_fails_the_run_after_the_retries() {
    // Port 1: nothing listens there and no test server can take it (a port freed by a
    // closed listener could go to another test's fake server meanwhile).
    let server = FakeOpenAi::start(Vec::new()).await;
    let (mut s, agent) = setup(&server, NATIVE, 3);
    s.runner.model_config.base_url = Some("http://127.0.0.1:1/v1".into());
    let ws = s.dir.path().join("ws");
    let run = s
        .runner
        .start(start(agent, &ws, "anyone there?"))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let error = run.last_error.unwrap();
    assert!(error.contains("failed 3 time(s)"), "{error}");
    let retries = drain(&mut s.events)
        .iter()
        .filter(|e| matches!(e, RunEvent::ModelRetry(_)))
        .count();
    assert_eq!(retries, 2);
}

#[tokio::test]
async fn a_call_with_unreadable_arguments_is_sent_back_to_the_model() {
    let broken = Reply::Stream(vec![
        fake_openai::ev_role(),
        fake_openai::ev_call_start(0, "call_x", "calculator"),
        fake_openai::ev_call_args(0, "{\"expression\": \"2+"),
        fake_openai::ev_finish("tool_calls"),
    ]);
    let server = FakeOpenAi::start(vec![
        broken,
        calls_reply(
            "",
            &[("call_y", "calculator", json!({"expression": "2+2"}))],
        ),
        text_reply("4.", 2),
    ])
    .await;
    let (s, agent) = setup(&server, NATIVE, 2);
    let ws = s.dir.path().join("ws");
    let run = s.runner.start(start(agent, &ws, "2+2?")).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert_eq!(run.output.as_deref(), Some("4."));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[1]["messages"].as_array().unwrap();
    let note = messages.last().unwrap();
    assert_eq!(note["role"], "user");
    let text = note["content"].as_str().unwrap();
    assert!(
        text.contains("could not be read") && text.contains("calculator"),
        "{text}"
    );
    assert!(
        messages[2].get("tool_calls").is_none(),
        "the unreadable call is not in the history"
    );
    // It is in the record: a failed call, so that summaries count it.
    let q = toolgate::store::CallQuery {
        run_id: Some(run.id.clone()),
        ..Default::default()
    };
    let calls = s.runner.store.calls(&q).await.unwrap().calls;
    let bad = calls.iter().find(|c| c.record.call_id == "call_x").unwrap();
    assert_eq!(bad.record.tool, "calculator");
    assert_eq!(bad.record.status, toolgate::protocol::CallStatus::Failed);
    assert_eq!(
        bad.record
            .error_kind
            .map(toolgate::protocol::ErrorKind::as_str),
        Some("invalid_arguments")
    );
    assert_eq!(calls.len(), 2);
}

/// A local server with no tool parser: the model writes its call as fenced JSON in the
/// text. It runs, and goes back once, as a native call (not in the text as well); a
/// final answer cut by `finish_reason: length` is continued.
#[tokio::test]
async fn a_call_written_as_text_goes_back_once_as_a_native_call() {
    let call = "```json\n{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\"}}\n```";
    let server = FakeOpenAi::start(vec![
        text_reply(call, 7),
        Reply::Stream(vec![
            fake_openai::ev_role(),
            fake_openai::ev_text("It said h"),
            fake_openai::ev_finish("length"),
        ]),
        text_reply("i.", 3),
    ])
    .await;
    let (s, agent) = setup(&server, NATIVE, 2);
    let ws = s.dir.path().join("ws");
    let run = s.runner.start(start(agent, &ws, "Echo hi.")).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert_eq!(run.output.as_deref(), Some("It said hi."));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_results_follow_calls(messages);
    let said = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(said["tool_calls"][0]["function"]["name"], "echo", "{said}");
    let content = said["content"].as_str().unwrap_or_default();
    assert!(
        !content.contains("\"name\""),
        "the call was sent twice: {said}"
    );
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool["content"].to_string().contains("hi"), "{tool}");
    // The cut answer went back with the request to continue it.
    let last = requests[2]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert!(last["content"].to_string().contains("cut off"), "{last}");
}

/// `tool_choice: required` goes to the server in its form; a model that answers
/// without a call anyway is asked for it once more.
#[tokio::test]
async fn a_required_tool_choice_is_sent_and_asked_for_once_more() {
    let server = FakeOpenAi::start(vec![
        text_reply("No need for tools.", 5),
        calls_reply("", &[("call_1", "echo", json!({"text": "hi"}))]),
        text_reply("Done.", 5),
    ])
    .await;
    let yaml = format!("{NATIVE}tool_choice: required\n");
    let (s, agent) = setup(&server, &yaml, 2);
    let ws = s.dir.path().join("ws");
    let run = s.runner.start(start(agent, &ws, "Echo hi.")).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert_eq!(run.output.as_deref(), Some("Done."));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["tool_choice"], "required");
    let asked = requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        asked["content"].to_string().contains("must call"),
        "{asked}"
    );
}
