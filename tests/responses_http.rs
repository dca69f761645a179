//! The Responses endpoint over HTTP, in process (reqwest against the router on a free
//! port): the raw stream's framing and numbering, text streamed while the model is
//! still answering, every refusal with its status and kind, a paused run decided partly
//! through the native run API and finished through the Responses endpoint (one store
//! path), and each call recorded once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolgate::model::{Model, ModelError, ModelReply, ModelRequest, ReplySink};
use toolgate::protocol::Usage;
use toolgate::run::Runner;
use toolgate::server::{Agents, AppState, Hub, router};
use toolgate::store::Store;

struct Api {
    url: String,
    client: reqwest::Client,
    workspace: PathBuf,
    _dir: tempfile::TempDir,
}

impl Api {
    async fn start() -> Api {
        Api::with_model(None).await
    }

    /// A server whose runs all use `model` (instead of their agents' own).
    async fn with_model(model: Option<Arc<dyn Model>>) -> Api {
        let dir = tempfile::tempdir().unwrap();
        let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/responses");
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        let store = Store::open(dir.path().join("t.db")).unwrap();
        let mut runner = Runner::new(store, toolgate::tool::sources::standard());
        runner.model = model;
        let state = Arc::new(AppState {
            runner,
            agents: Agents::new(fixtures.join("agents")),
            tools_dir: Some(fixtures.join("tools")),
            workspace: Some(workspace.clone()),
            api_key: None,
            mcp_approval_timeout: toolgate::mcp_gateway::DEFAULT_APPROVAL_TIMEOUT,
            jwt: None,
            rates: None,
            tenant_allows: Default::default(),
            allowed_hosts: Default::default(),
            public_origin: None,
            hub: Hub::default(),
            shutdown: CancellationToken::new(),
            drives: TaskTracker::new(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router(state)).await });
        Api {
            url,
            client: reqwest::Client::new(),
            workspace,
            _dir: dir,
        }
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let resp = self
            .client
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        (
            resp.status().as_u16(),
            resp.json().await.unwrap_or(Value::Null),
        )
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let resp = self
            .client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        (
            resp.status().as_u16(),
            resp.json().await.unwrap_or(Value::Null),
        )
    }

    /// A streamed response: (event name, data) pairs, read chunk by chunk.
    async fn stream(&self, body: Value) -> Vec<(String, Value)> {
        let mut resp = self
            .client
            .post(format!("{}/v1/responses", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut text = String::new();
        while let Some(chunk) = resp.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text.split("\n\n")
            .filter(|block| !block.trim().is_empty() && !block.starts_with(':'))
            .map(|block| {
                let mut name = String::new();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = n.to_string();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push_str(d);
                    }
                }
                (name, serde_json::from_str(&data).unwrap())
            })
            .collect()
    }
}

/// A model that says "Hello", then waits for the test before it says " world".
struct GatedModel {
    gate: Arc<Notify>,
}

#[async_trait::async_trait]
impl Model for GatedModel {
    fn name(&self) -> &str {
        "gated"
    }

    async fn complete(
        &self,
        _request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        sink.text("Hello");
        self.gate.notified().await;
        sink.text(" world");
        Ok(ModelReply {
            truncated: false,
            reasoning: Vec::new(),
            content: "Hello world".into(),
            native: Default::default(),
            usage: Usage::default(),
        })
    }
}

#[tokio::test]
async fn text_reaches_the_client_while_the_model_is_still_answering() {
    let gate = Arc::new(Notify::new());
    let api = Api::with_model(Some(Arc::new(GatedModel {
        gate: Arc::clone(&gate),
    })))
    .await;
    let mut resp = api
        .client
        .post(format!("{}/v1/responses", api.url))
        .json(&json!({"model": "agent:helper", "input": "hi", "stream": true}))
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    let first_delta = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(chunk) = resp.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains("\"delta\":\"Hello\"") {
                return;
            }
        }
        panic!("the stream ended before the first delta: {text}");
    })
    .await;
    assert!(
        first_delta.is_ok(),
        "no delta while the model answers: {text}"
    );
    assert!(!text.contains("response.completed"));
    gate.notify_one();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(text.contains("\"delta\":\" world\""), "{text}");
    assert!(text.contains("\"text\":\"Hello world\""), "{text}");
    assert!(
        text.trim_end()
            .lines()
            .any(|l| l == "event: response.completed"),
        "{text}"
    );
}

/// A model that calls the calculator, then waits for the test before its answer.
struct SlowSecondTurn {
    gate: Arc<Notify>,
}

#[async_trait::async_trait]
impl Model for SlowSecondTurn {
    fn name(&self) -> &str {
        "slow-second-turn"
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        let turn = request
            .messages
            .iter()
            .filter(|m| m.role == toolgate::model::MessageRole::Assistant)
            .count();
        let mut native = toolgate::parse::NativeCalls::default();
        if turn == 0 {
            native.delta(
                0,
                Some("call_c"),
                Some("calculator"),
                Some(r#"{"expression": "6*7"}"#),
                0,
            );
        } else {
            self.gate.notified().await;
            sink.text("42.");
        }
        Ok(ModelReply {
            truncated: false,
            reasoning: Vec::new(),
            content: if turn == 0 {
                String::new()
            } else {
                "42.".into()
            },
            native,
            usage: Usage::default(),
        })
    }
}

#[tokio::test]
async fn an_mcp_call_completes_before_the_model_answers_again() {
    let gate = Arc::new(Notify::new());
    let api = Api::with_model(Some(Arc::new(SlowSecondTurn {
        gate: Arc::clone(&gate),
    })))
    .await;
    let mut resp = api
        .client
        .post(format!("{}/v1/responses", api.url))
        .json(&json!({"model": "agent:helper", "input": "6*7?", "stream": true}))
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    let done = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(chunk) = resp.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains("event: response.mcp_call.completed")
                && text.contains("\"output\":\"42\"")
            {
                return;
            }
        }
        panic!("the stream ended first: {text}");
    })
    .await;
    assert!(
        done.is_ok(),
        "the mcp_call waited for the model's next turn: {text}"
    );
    gate.notify_one();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(text.contains("event: response.completed"), "{text}");
}

fn kinds(output: &Value) -> Vec<&str> {
    output
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_stream_is_framed_numbered_and_ends_with_the_stored_response() {
    let api = Api::start().await;
    let events = api
        .stream(json!({"model": "agent:helper", "input": "2+3*4?", "stream": true}))
        .await;
    for (i, (name, data)) in events.iter().enumerate() {
        assert_eq!(
            data["type"].as_str(),
            Some(name.as_str()),
            "event name = data.type"
        );
        assert_eq!(data["sequence_number"], i as u64);
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(names.last(), Some(&"response.completed"));
    let last = &events.last().unwrap().1["response"];
    assert_eq!(kinds(&last["output"]), ["message", "mcp_call", "message"]);
    // The stored response is the last event's.
    let id = last["id"].as_str().unwrap();
    let (status, stored) = api.get(&format!("/v1/responses/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(&stored, last);
}

#[tokio::test]
async fn refusals_have_their_status_and_kind() {
    let api = Api::start().await;
    let cases = [
        (
            json!({"model": "gpt-4o", "input": "hi"}),
            400,
            "bad_request",
        ),
        (
            json!({"model": "agent:nobody", "input": "hi"}),
            404,
            "not_found",
        ),
        (
            json!({"model": "agent:helper", "input": ""}),
            400,
            "bad_request",
        ),
        (
            json!({"model": "agent:helper", "input": 7}),
            400,
            "bad_request",
        ),
        (
            json!({"model": "agent:helper", "input": "hi", "instructions": "be terse"}),
            400,
            "bad_request",
        ),
        (
            json!({"model": "agent:helper", "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]}),
            400,
            "bad_request",
        ),
        (
            json!({"model": "agent:helper", "input": "hi", "previous_response_id": "resp_nope"}),
            404,
            "not_found",
        ),
        (json!({"input": "hi"}), 400, "bad_request"),
    ];
    for (body, status, kind) in cases {
        let (got, answer) = api.post("/v1/responses", body.clone()).await;
        assert_eq!(
            (got, answer["error"]["type"].as_str()),
            (status, Some(kind)),
            "{body}: {answer}"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
}

#[tokio::test]
async fn a_paused_run_is_decided_through_either_door_and_each_call_runs_once() {
    let api = Api::start().await;
    let (status, first) = api
        .post(
            "/v1/responses",
            json!({"model": "agent:writer", "input": "save it"}),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "completed");
    assert_eq!(
        kinds(&first["output"]),
        ["message", "mcp_approval_request", "function_call"]
    );
    let id = first["id"].as_str().unwrap();
    let run_id = first["metadata"]["toolgate_run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let continue_with =
        |input: Value| json!({"model": "agent:writer", "previous_response_id": id, "input": input});

    // While the run waits: no new message, no answer of the wrong kind or for no call,
    // no other agent.
    let refused = [
        (
            continue_with(json!("and another thing")),
            409,
            "still_waiting",
        ),
        (
            continue_with(
                json!([{"type": "function_call_output", "call_id": "call_write", "output": "x"}]),
            ),
            409,
            "decision_conflict",
        ),
        (
            continue_with(
                json!([{"type": "mcp_approval_response", "approval_request_id": "mcpr_call_ask", "approve": true}]),
            ),
            409,
            "decision_conflict",
        ),
        (
            continue_with(
                json!([{"type": "mcp_approval_response", "approval_request_id": "mcpr_nope", "approve": true}]),
            ),
            409,
            "decision_conflict",
        ),
        (
            json!({"model": "agent:helper", "previous_response_id": id, "input": "hi"}),
            400,
            "bad_request",
        ),
    ];
    for (body, status, kind) in refused {
        let (got, answer) = api.post("/v1/responses", body.clone()).await;
        assert_eq!(
            (got, answer["error"]["type"].as_str()),
            (status, Some(kind)),
            "{body}: {answer}"
        );
    }

    // The approval through the native API, only recorded; the client output through the
    // Responses endpoint, which then continues the run.
    let (status, run) = api
        .post(
            &format!("/v1/runs/{run_id}/approve"),
            json!({"call_id": "call_write", "resume": false}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    let (status, second) = api
        .post(
            "/v1/responses",
            continue_with(
                json!([{"type": "function_call_output", "call_id": "call_ask", "output": "blue"}]),
            ),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(kinds(&second["output"]), ["mcp_call", "message"]);
    assert_eq!(
        second["output"][0]["approval_request_id"],
        "mcpr_call_write"
    );
    assert_eq!(second["output"][0]["status"], "completed");
    assert_eq!(second["previous_response_id"], id);
    assert_eq!(second["usage"]["total_tokens"], 167);
    assert!(api.workspace.join("approved.txt").is_file());

    // Approving again changes nothing.
    let (status, again) = api
        .post(
            "/v1/responses",
            continue_with(json!([{"type": "mcp_approval_response", "approval_request_id": "mcpr_call_write", "approve": true}])),
        )
        .await;
    assert_eq!(
        (status, again["error"]["type"].as_str()),
        (409, Some("decision_conflict"))
    );
    let (_, calls) = api.get(&format!("/v1/calls?run_id={run_id}")).await;
    let mut recorded: Vec<&str> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["call_id"].as_str().unwrap())
        .collect();
    recorded.sort();
    assert_eq!(recorded, ["call_ask", "call_write"], "{calls}");
    let (_, run) = api.get(&format!("/v1/runs/{run_id}")).await;
    assert_eq!(run["status"], "completed");
}

/// A model that notes the `tool_choice` each request carries, and answers "Hi.".
struct ChoiceModel {
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl Model for ChoiceModel {
    fn name(&self) -> &str {
        "choice"
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        let label = request
            .tool_choice
            .map_or("absent", |c| c.label())
            .to_string();
        self.seen.lock().unwrap().push(label);
        sink.text("Hi.");
        Ok(ModelReply {
            truncated: false,
            reasoning: Vec::new(),
            content: "Hi.".into(),
            native: Default::default(),
            usage: Usage::default(),
        })
    }
}

#[tokio::test]
async fn tool_choice_of_a_request_reaches_the_model_and_is_echoed() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let api = Api::with_model(Some(Arc::new(ChoiceModel { seen: seen.clone() }))).await;
    let (status, response) = api
        .post(
            "/v1/responses",
            json!({"model": "agent:helper", "input": "Hello", "tool_choice": "none"}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["tool_choice"], "none");
    let (status, run) = api
        .post(
            "/v1/runs",
            json!({"agent": "helper", "input": "Hello", "tool_choice": {"name": "calculator"}}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    // The model answered without the call its choice requires: asked once more.
    assert_eq!(*seen.lock().unwrap(), ["none", "calculator", "calculator"]);
    for path in ["/v1/runs", "/v1/responses"] {
        let body = if path == "/v1/runs" {
            json!({"agent": "helper", "input": "Hello", "tool_choice": "sometimes"})
        } else {
            json!({"model": "agent:helper", "input": "Hello", "tool_choice": "sometimes"})
        };
        let (status, error) = api.post(path, body).await;
        assert_eq!(status, 400, "{path}: {error}");
        assert!(error.to_string().contains("tool_choice"), "{path}: {error}");
    }
}

/// A model that thinks aloud: the server's `reasoning_content` before its call, then a
/// `<think>` block in its text before the answer (with a call it only considered).
struct ThinkingModel;

#[async_trait::async_trait]
impl Model for ThinkingModel {
    fn name(&self) -> &str {
        "thinking"
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        let turn = request
            .messages
            .iter()
            .filter(|m| m.role == toolgate::model::MessageRole::Assistant)
            .count();
        let mut native = toolgate::parse::NativeCalls::default();
        let content = if turn == 0 {
            sink.reasoning("I need ");
            sink.reasoning("the product.");
            native.delta(
                0,
                Some("call_c"),
                Some("calculator"),
                Some(r#"{"expression": "6*7"}"#),
                0,
            );
            String::new()
        } else {
            let text = "<think>It is 42; no need for <tool_call>{\"name\": \"calculator\", \
                        \"arguments\": {\"expression\": \"1/0\"}}</tool_call>.</think>The answer is 42.";
            sink.text(text);
            text.to_string()
        };
        Ok(ModelReply {
            truncated: false,
            reasoning: Vec::new(),
            content,
            native,
            usage: Usage::default(),
        })
    }
}

#[tokio::test]
async fn reasoning_is_recorded_and_answered_as_reasoning_items() {
    let api = Api::with_model(Some(Arc::new(ThinkingModel))).await;
    let events = api
        .stream(json!({"model": "agent:helper", "input": "6*7?", "stream": true}))
        .await;
    let deltas: String = events
        .iter()
        .filter(|(n, _)| n == "response.reasoning_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        deltas,
        "I need the product.It is 42; no need for <tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1/0\"}}</tool_call>."
    );
    let last = &events.last().unwrap().1["response"];
    assert_eq!(
        kinds(&last["output"]),
        ["reasoning", "mcp_call", "reasoning", "message"]
    );
    let output = &last["output"];
    assert_eq!(output[0]["content"][0]["text"], "I need the product.");
    assert_eq!(output[0]["summary"], json!([]));
    assert!(
        output[2]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("It is 42")
    );
    assert_eq!(output[3]["content"][0]["text"], "The answer is 42.");
    // The call the model only considered never ran: one call, the product.
    assert_eq!(output[1]["output"], "42");
    // Unstreamed, the same items.
    let (status, whole) = api
        .post(
            "/v1/responses",
            json!({"model": "agent:helper", "input": "6*7?"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        kinds(&whole["output"]),
        ["reasoning", "mcp_call", "reasoning", "message"]
    );
    // The run recorded what the model thought beside each assistant message.
    let run = last["metadata"]["toolgate_run_id"].as_str().unwrap();
    let (status, timeline) = api.get(&format!("/v1/runs/{run}/timeline")).await;
    assert_eq!(status, 200);
    let thoughts: Vec<&Value> = timeline["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| &m["thinking"])
        .collect();
    assert_eq!(thoughts.len(), 2);
    assert_eq!(
        thoughts[0],
        &json!([{"text": "I need the product.", "start": 0, "end": 19}])
    );
    assert_eq!(thoughts[1][0]["start"], 7);
    assert!(
        thoughts[1][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("It is 42")
    );
    // The run's answer is the text without its reasoning.
    let (_, run_object) = api.get(&format!("/v1/runs/{run}")).await;
    assert_eq!(run_object["output"], "The answer is 42.");
}
