//! The context budget end to end against a fake OpenAI server: a 300-turn run whose
//! tool returns 200 KB each turn completes with every request under the budget (counted
//! here, from what the server received, with the model's own tokenizer); cut results
//! carry a marker and `read_result` pages through them; compactions (summarize and
//! truncate) are recorded, shown in the timeline and counted in the usage; a model's
//! "context length exceeded" triggers one compaction and a retry, and only then fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fake_openai;
use crate::launching;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fake_openai::{FakeOpenAi, Reply, calls_reply, text_reply};
use serde_json::{Value, json};
use toolgate::agent::Agent;
use toolgate::model::OpenAiConfig;
use toolgate::protocol::{RunEvent, RunObject, RunStatus, events};
use toolgate::run::{Runner, StartRun};
use toolgate::store::Store;

/// The instructions toolgate sends with a summary request.
const SUMMARY_START: &str = "You compact the history of an agent's work";

/// 200 KB of numbered lines, so that every slice is recognisable.
fn big_text() -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 200_000 {
        text.push_str(&format!(
            "line {i}: the quick brown fox jumps over {} lazy dogs\n",
            i * 7
        ));
        i += 1;
    }
    text
}

struct World {
    dir: tempfile::TempDir,
    runner: Runner,
    events: tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
    agent: Agent,
}

fn world(server: &FakeOpenAi, agent_yaml: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), big_text()).unwrap();
    let file = dir.path().join("agent.yaml");
    std::fs::write(&file, agent_yaml).unwrap();
    let agent = Agent::load(&file).unwrap();
    let mut runner = Runner::new(
        Store::open(dir.path().join("t.db")).unwrap(),
        toolgate::tool::sources::standard(),
    );
    runner.model_config = OpenAiConfig {
        api_key: Some("sk-test".into()),
        base_url: Some(server.base_url.clone()),
        attempts: 1,
        backoff: Duration::from_millis(5),
        ..OpenAiConfig::default()
    };
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    runner.events = Some(tx);
    World {
        dir,
        runner,
        events,
        agent,
    }
}

async fn run(w: &World, message: &str) -> RunObject {
    w.runner
        .start(StartRun {
            priority: None,
            owner: None,
            agent: w.agent.clone(),
            model: None,
            conversation: None,
            message: message.into(),
            tools_dir: None,
            workspace: Some(w.dir.path().to_path_buf()),
        })
        .await
        .unwrap()
}

fn is_summary_request(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with(SUMMARY_START))
}

/// A request's prompt tokens, counted from the body the server received with the
/// model's tokenizer (o200k for gpt-4o-mini): every message's text and calls plus 4
/// tokens of framing each, and the tools array.
fn prompt_tokens(body: &Value) -> u64 {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let count = |s: &str| bpe.encode_ordinary(s).len() as u64;
    let mut total = 0;
    for m in body["messages"].as_array().unwrap() {
        total += 4 + count(m["content"].as_str().unwrap_or(""));
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            total += count(c["function"]["name"].as_str().unwrap());
            total += count(c["function"]["arguments"].as_str().unwrap());
        }
    }
    if let Some(tools) = body.get("tools") {
        total += count(&tools.to_string());
    }
    total
}

/// The `offset N` a cut result's marker names.
fn marker_offset(text: &str) -> Option<usize> {
    let at = text.find("[result cut to fit the context")?;
    let rest = &text[at..];
    let o = rest.find("offset ")? + "offset ".len();
    rest[o..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

const TURNS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300_turn_run_of_200_kb_results_stays_under_the_budget() {
    let turn = Arc::new(AtomicUsize::new(0));
    let page_at = Arc::new(std::sync::Mutex::new(None::<usize>));
    let (t, p) = (Arc::clone(&turn), Arc::clone(&page_at));
    let server = FakeOpenAi::respond(move |body| {
        if is_summary_request(body) {
            return text_reply(
                "Summary: the agent has been reading big.txt again and again.",
                20,
            );
        }
        let n = t.fetch_add(1, Ordering::SeqCst) + 1;
        match n {
            // Turn 3 pages through turn 2's cut result, from where the marker says.
            3 => {
                let last = body["messages"].as_array().unwrap().last().unwrap().clone();
                let offset = marker_offset(last["content"].as_str().unwrap()).unwrap();
                *p.lock().unwrap() = Some(offset);
                calls_reply(
                    "",
                    &[(
                        "call_3",
                        "read_result",
                        json!({"call_id": "call_2", "offset": offset, "length": 500}),
                    )],
                )
            }
            n if n < TURNS => calls_reply(
                "",
                &[(
                    format!("call_{n}").as_str(),
                    "read_file",
                    json!({"path": "big.txt"}),
                )],
            ),
            _ => text_reply("Done reading.", 5),
        }
    })
    .await;
    let yaml = format!(
        "name: reader\nmodel: openai:gpt-4o-mini\ntools: [read_file]\nmax_iterations: {}\ncontext: {{max_tokens: 8000, result_tokens: 1000, strategy: summarize}}\n",
        TURNS + 10
    );
    let mut w = world(&server, &yaml);
    let run = run(&w, "Read big.txt over and over.").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    assert_eq!(run.iteration as usize, TURNS);
    assert_eq!(run.output.as_deref(), Some("Done reading."));

    let requests = server.requests();
    let summaries = requests.iter().filter(|b| is_summary_request(b)).count();
    assert!(summaries > 0, "no compaction was asked for");
    assert_eq!(requests.len(), TURNS + summaries);
    for (i, body) in requests.iter().enumerate() {
        let tokens = prompt_tokens(body);
        assert!(tokens <= 8000, "request {i} has {tokens} prompt tokens");
    }
    assert_eq!(run.usage.compactions as usize, summaries);
    assert_eq!(run.usage.model_calls as usize, TURNS + summaries);

    // Turn 2's result reached the model cut, with the marker.
    let turn_requests: Vec<&Value> = requests.iter().filter(|b| !is_summary_request(b)).collect();
    let second_result = turn_requests[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["tool_call_id"] == "call_2")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(second_result.contains("left out"), "{second_result}");
    assert!(second_result.len() < 10_000);
    // read_result gave the next 500 characters of the whole file.
    let offset = page_at.lock().unwrap().unwrap();
    let page = turn_requests[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["tool_call_id"] == "call_3")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    let text = big_text();
    let expected: String = text.chars().skip(offset).take(500).collect();
    assert!(page.starts_with(&expected), "{page}");
    assert!(
        page.contains(&format!("characters {offset}..{}", offset + 500)),
        "{page}"
    );

    // The record keeps the whole result.
    let store = Store::open(w.dir.path().join("t.db")).unwrap();
    let whole = store
        .call_result(&run.conversation_id, "call_2")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(whole.len(), text.len());
    assert!(whole == text, "the record differs from the file");

    // The compaction turns are in the timeline, with their prompt sizes; every model
    // turn records its prompt size.
    let timeline = store.run_timeline(&run.id).await.unwrap();
    let messages: Vec<Value> = timeline
        .messages
        .iter()
        .map(|(_, m)| serde_json::from_str(m).unwrap())
        .collect();
    let compactions: Vec<&Value> = messages
        .iter()
        .filter(|m| m.get("compaction").is_some())
        .collect();
    assert_eq!(compactions.len(), summaries);
    let first = compactions[0];
    assert_eq!(first["compaction"]["strategy"], "summarize");
    assert!(
        first["content"]
            .as_str()
            .unwrap()
            .contains("Summary: the agent")
    );
    assert!(first["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(
        first["compaction"]["tokens_after"].as_u64()
            < first["compaction"]["tokens_before"].as_u64()
    );
    let assistants: Vec<&Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistants.len(), TURNS);
    assert!(assistants.iter().all(|m| {
        m["prompt_tokens"]
            .as_u64()
            .is_some_and(|t| t > 0 && t <= 8000)
    }));

    let mut compacted_events = 0;
    while let Ok(e) = w.events.try_recv() {
        if let RunEvent::ContextCompacted(events::ContextCompacted { strategy, .. }) = &e {
            assert_eq!(strategy, "summarize");
            compacted_events += 1;
        }
    }
    assert_eq!(compacted_events, summaries);

    // `show` says so too.
    let out = launching::output(&["show", &run.id, "--db", "t.db"], w.dir.path());
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!("{summaries} compaction(s)")),
        "{shown}{}",
        launching::stderr(&out)
    );
}

/// A server that refuses, as OpenAI does, any request of more than `most` messages.
fn strict_window(most: usize, refused: Arc<AtomicUsize>) -> impl Fn(&Value) -> Reply {
    let turn = AtomicUsize::new(0);
    move |body: &Value| {
        if body["messages"].as_array().unwrap().len() > most {
            refused.fetch_add(1, Ordering::SeqCst);
            return Reply::Status(
                400,
                json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}).to_string(),
            );
        }
        let n = turn.fetch_add(1, Ordering::SeqCst) + 1;
        if n < 6 {
            calls_reply(
                "",
                &[(
                    format!("call_{n}").as_str(),
                    "read_file",
                    json!({"path": "big.txt", "max_bytes": 100}),
                )],
            )
        } else {
            text_reply("Finished.", 4)
        }
    }
}

#[tokio::test]
async fn context_length_exceeded_compacts_once_and_retries() {
    let refused = Arc::new(AtomicUsize::new(0));
    let server = FakeOpenAi::respond(strict_window(8, Arc::clone(&refused))).await;
    let yaml = "name: reader\nmodel: openai:gpt-4o-mini\ntools: [read_file]\ncontext: {strategy: truncate}\n";
    let mut w = world(&server, yaml);
    let run = run(&w, "Read a little, several times.").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    assert!(refused.load(Ordering::SeqCst) >= 1);
    assert!(run.usage.compactions >= 1);
    // Every refused request was followed by a shorter one that was answered.
    let requests = server.requests();
    for pair in requests.windows(2) {
        if pair[0]["messages"].as_array().unwrap().len() > 8 {
            assert!(pair[1]["messages"].as_array().unwrap().len() <= 8);
        }
    }
    let truncations: Vec<RunEvent> = std::iter::from_fn(|| w.events.try_recv().ok())
        .filter(|e| matches!(e, RunEvent::ContextCompacted(_)))
        .collect();
    assert_eq!(truncations.len() as u64, run.usage.compactions);
    // A truncation asks the model nothing: one model call per turn.
    assert_eq!(run.usage.model_calls, run.iteration as u64);
    // The first user message stays, first, in every request (the agent has no
    // instructions: no system message).
    for body in &requests {
        assert_eq!(
            body["messages"][0]["content"],
            "Read a little, several times."
        );
    }
}

#[tokio::test]
async fn a_request_still_too_long_after_the_compaction_fails_the_run() {
    let refused = Arc::new(AtomicUsize::new(0));
    // Nothing of more than one message is accepted: even compacted, the request is
    // too long.
    let server = FakeOpenAi::respond(strict_window(1, Arc::clone(&refused))).await;
    let yaml = "name: reader\nmodel: openai:gpt-4o-mini\ntools: [read_file]\ncontext: {strategy: truncate}\n";
    let w = world(&server, yaml);
    let run = run(&w, "Anything.").await;
    assert_eq!(run.status, RunStatus::Failed);
    let error = run.last_error.unwrap();
    assert!(error.contains("context window"), "{error}");
    // Asked once, compacted (nothing to compact in a first turn), asked once more.
    assert_eq!(refused.load(Ordering::SeqCst), 2);
}

#[test]
fn a_bad_context_block_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    for (yaml, says) in [
        ("name: a\ncontext: {max_tokens: 10}\n", "max_tokens"),
        (
            "name: a\ncontext: {max_tokens: 4000, result_tokens: 3000}\n",
            "half",
        ),
        ("name: a\ncontext: {strategy: forget}\n", "summarize"),
        ("name: a\ncontext: {window: 5}\n", "window"),
    ] {
        std::fs::write(dir.path().join("agent.yaml"), yaml).unwrap();
        let out = launching::output(&["run", "--agent", "agent.yaml", "Hi"], dir.path());
        assert_eq!(out.status.code(), Some(2), "{yaml}");
        let err = launching::stderr(&out);
        assert!(
            err.contains(says) && err.contains("context"),
            "{yaml}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// An agent without a `context:` block still has the model's default budget: a result
/// over it reaches the model cut, and the marker does not send the model to
/// `read_result`, a tool it was never offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_context_block_a_cut_result_names_no_tool_it_lacks() {
    let turn = Arc::new(AtomicUsize::new(0));
    let t = Arc::clone(&turn);
    let server = FakeOpenAi::respond(move |_| match t.fetch_add(1, Ordering::SeqCst) {
        0 => calls_reply("", &[("call_1", "read_file", json!({"path": "big.txt"}))]),
        _ => text_reply("Read it.", 5),
    })
    .await;
    let w = world(
        &server,
        "name: reader\nmodel: openai:gpt-4o-mini\ntools: [read_file]\nmax_iterations: 4\n",
    );
    let run = run(&w, "Read big.txt.").await;
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.last_error);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let offered: Vec<&str> = requests[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["read_file"]);
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "call_1")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.len() < 200_000, "the result was not cut");
    assert!(
        result.contains("[result cut to fit the context"),
        "{}",
        &result[result.len().saturating_sub(300)..]
    );
    assert!(
        !result.contains("read_result"),
        "{}",
        &result[result.len() - 300..]
    );
}
