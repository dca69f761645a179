//! Spans exported over OTLP/HTTP, received by a small Python server that decodes them
//! with the official OpenTelemetry protobuf messages (tests/py/otlp_receiver.py): a run
//! started with the client's `traceparent`, paused for an approval and resumed by
//! another request is one trace under the client's span, its spans linked (run, then
//! turn, then chat and execute_tool) with the GenAI names and attributes, no argument or result
//! value in them, and the HTTP tool it called got a `traceparent` naming its span (an
//! MCP tool over HTTP too: in the header and in `_meta`). With `--trace-content`,
//! arguments are in, secret ones masked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use serving::{Server, Site};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// The Python OTLP receiver, killed when dropped.
struct Receiver {
    child: Child,
    url: String,
    spans: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        let python = serving::python("the OTLP test");
        let spans = dir.join("spans.jsonl");
        let mut child = Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/otlp_receiver.py"))
            .arg(&spans)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().expect("the receiver says its port");
        Receiver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            spans,
        }
    }

    /// Every span received so far.
    fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.spans)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// An HTTP endpoint for a tool, keeping the `traceparent` of each request.
async fn tool_target() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/ping",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let keep = Arc::clone(&keep);
            async move {
                let tp = headers
                    .get("traceparent")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                keep.lock().unwrap().push(tp);
                axum::Json(json!({"pong": "RESULT-MARKER"}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/ping", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// No argument or result value anywhere in `spans` (attributes and events).
fn carries_none_of(spans: &[Value], values: &[&str]) {
    for s in spans {
        let text = s.to_string();
        for v in values {
            assert!(!text.contains(v), "a span carries '{v}': {s}");
        }
    }
}

#[tokio::test]
async fn a_paused_and_resumed_run_is_one_trace_continuing_the_callers() {
    let site = Site::new();
    let receiver = Receiver::start(site.path());
    let (target, seen) = tool_target().await;
    std::fs::write(
        site.path().join("tools/ping.yaml"),
        format!(
            "name: ping\ndescription: Ping.\npermission: auto\nparameters:\n  type: object\n  properties:\n    note: {{type: string}}\n  required: [note]\nentry:\n  type: http\n  method: POST\n  url: \"{target}\"\n  allow_hosts: [127.0.0.1]\n  body: json\n"
        ),
    )
    .unwrap();
    std::fs::write(
        site.path().join("agents/traced.yaml"),
        "name: traced\nmodel: scripted:traced.replies.yaml\ninstructions: Check.\ntools: [ping, calculator]\npermissions: {calculator: confirm}\n",
    )
    .unwrap();
    std::fs::write(
        site.path().join("agents/traced.replies.yaml"),
        r#"replies:
  - content: Checking.
    tool_calls:
      - {id: c_ping, name: ping, arguments: {note: ARG-MARKER}}
      - {id: c_calc, name: calculator, arguments: {expression: "6*7"}}
    usage: {prompt_tokens: 11, completion_tokens: 4}
  - content: Forty-two.
    usage: {prompt_tokens: 13, completion_tokens: 2}
"#,
    )
    .unwrap();
    let mut server = Server::start(&site, None, &["--otlp-endpoint", &receiver.url]);
    let r = server
        .client
        .post(server.url("/v1/runs"))
        .header("traceparent", format!("00-{TRACE}-{CLIENT_SPAN}-01"))
        .json(&json!({"agent": "traced", "input": "check"}))
        .send()
        .await
        .unwrap();
    let run: Value = r.json().await.unwrap();
    assert_eq!(run["status"], "requires_action", "{run}");
    let id = run["id"].as_str().unwrap();
    // Decided by another request, with no trace of its own.
    let (status, done) = server
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "c_calc"}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    // The server sends what it still holds as it stops.
    assert!(server.terminate(Duration::from_secs(30)).success());
    let spans = receiver.spans();
    let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();

    // One trace: the client's.
    assert!(spans.iter().all(|s| s["trace_id"] == TRACE), "{names:?}");
    assert!(
        spans.iter().all(|s| s["service"] == "toolgate"),
        "{spans:?}"
    );
    assert!(
        spans
            .iter()
            .all(|s| s["content_type"] == "application/x-protobuf")
    );
    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap(), s))
        .collect();
    let parent_of = |s: &Value| by_id.get(s["parent_span_id"].as_str().unwrap()).copied();
    let named = |n: &str| -> Vec<&Value> { spans.iter().filter(|s| s["name"] == n).collect() };

    // The request that started the run continues the client's span (kind SERVER).
    let request = named("POST /v1/runs");
    assert_eq!(request.len(), 1, "{names:?}");
    assert_eq!(request[0]["parent_span_id"], CLIENT_SPAN);
    assert_eq!(request[0]["kind"], 2);
    // Two drives of the run: the first under the request, the resumed one under the
    // first (the trace kept with the run).
    let mut drives = named("invoke_agent traced");
    assert_eq!(drives.len(), 2, "{names:?}");
    drives.sort_by_key(|d| d["parent_span_id"] != request[0]["span_id"]);
    assert_eq!(drives[0]["parent_span_id"], request[0]["span_id"]);
    assert_eq!(drives[1]["parent_span_id"], drives[0]["span_id"]);
    for d in &drives {
        assert_eq!(attr(d, "gen_ai.operation.name"), "invoke_agent");
        assert_eq!(attr(d, "gen_ai.agent.name"), "traced");
        assert_eq!(attr(d, "gen_ai.conversation.id"), &run["conversation_id"]);
        assert_eq!(attr(d, "gen_ai.provider.name"), "toolgate.scripted");
    }
    // Turns under their drive; model calls and tool calls under their turn.
    let turns = named("turn");
    assert!(turns.len() >= 2, "{names:?}");
    for t in &turns {
        assert_eq!(parent_of(t).unwrap()["name"], "invoke_agent traced");
    }
    let chats = named("chat scripted");
    assert_eq!(chats.len(), 2, "{names:?}");
    let mut input_tokens = Vec::new();
    for c in &chats {
        assert_eq!(parent_of(c).unwrap()["name"], "turn");
        assert_eq!(c["kind"], 3, "a model call is a CLIENT span");
        assert_eq!(attr(c, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(c, "gen_ai.request.model"), "scripted");
        input_tokens.push(
            attr(c, "gen_ai.usage.input_tokens")
                .as_i64()
                .unwrap_or_else(|| panic!("{c}")),
        );
        assert!(attr(c, "gen_ai.usage.output_tokens").is_i64());
    }
    input_tokens.sort_unstable();
    assert_eq!(input_tokens, [11, 13]);
    let tools: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("execute_tool "))
        .collect();
    assert_eq!(tools.len(), 2, "{names:?}");
    let mut calls = Vec::new();
    for t in &tools {
        let turn = parent_of(t).unwrap();
        assert_eq!(turn["name"], "turn");
        assert_eq!(attr(t, "gen_ai.operation.name"), "execute_tool");
        assert_eq!(
            t["name"],
            format!(
                "execute_tool {}",
                attr(t, "gen_ai.tool.name").as_str().unwrap()
            )
        );
        assert!(attr(t, "gen_ai.tool.call.arguments").is_null(), "{t}");
        assert!(attr(t, "gen_ai.tool.call.result").is_null(), "{t}");
        // The ping ran in the first drive, the approved calculator in the resumed one.
        let drive = parent_of(turn).unwrap();
        calls.push((
            attr(t, "gen_ai.tool.name").as_str().unwrap(),
            attr(t, "gen_ai.tool.call.id").as_str().unwrap(),
            drive["span_id"] == drives[1]["span_id"],
        ));
    }
    calls.sort_unstable();
    assert_eq!(
        calls,
        [("calculator", "c_calc", true), ("ping", "c_ping", false)]
    );
    // Neither an argument nor a result went out.
    carries_none_of(&spans, &["ARG-MARKER", "6*7", "RESULT-MARKER"]);
    // The HTTP tool's request named its call's span.
    let ping = tools
        .iter()
        .find(|t| attr(t, "gen_ai.tool.name") == "ping")
        .unwrap();
    let sent = seen.lock().unwrap().clone();
    assert_eq!(
        sent,
        [Some(format!(
            "00-{TRACE}-{}-01",
            ping["span_id"].as_str().unwrap()
        ))]
    );
}

/// `toolgate run` in `dir` (exporting to `receiver`, with `flags`), of the agent file
/// `agent` with its `replies`, and one tool file `tool` (name, text); it must complete.
async fn cli_run(
    dir: &Path,
    receiver: &Receiver,
    tool: (&str, &str),
    agent: &str,
    replies: &str,
    flags: &[&str],
) {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join(format!("tools/{}.yaml", tool.0)), tool.1).unwrap();
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    std::fs::write(dir.join("replies.yaml"), replies).unwrap();
    let mut cmd = Command::new(serving::bin());
    cmd.current_dir(dir)
        .args(["--db", "t.db", "--otlp-endpoint", &receiver.url])
        .args(flags)
        .args([
            "run",
            "--agent",
            "agent.yaml",
            "--tools",
            "tools",
            "--json",
            "go",
        ])
        .env_remove("TOOLGATE_DB")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    // Off the runtime: a server of this test may have to answer the run.
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

#[tokio::test]
async fn trace_content_puts_arguments_in_with_secrets_masked() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(dir.path());
    cli_run(
        dir.path(),
        &receiver,
        ("send_note", "name: send_note\ndescription: Send a note, signed with a token.\npermission: auto\nparameters:\n  type: object\n  properties:\n    token: {type: string, secret: true}\n    text: {type: string}\n  required: [token, text]\nentry:\n  type: command\n  command: sh\n  args: [-c, \"echo sent-RESULT\"]\n"),
        "name: noter\nmodel: scripted:replies.yaml\ntools: [send_note]\n",
        "replies:\n  - content: Sending.\n    tool_calls: [{id: c_note, name: send_note, arguments: {token: TOKEN-SECRET-VALUE, text: NOTE-TEXT}}]\n  - content: Sent.\n",
        &["--trace-content"],
    )
    .await;
    let spans = receiver.spans();
    let tool = spans
        .iter()
        .find(|s| s["name"] == "execute_tool send_note")
        .expect("the tool call's span");
    let args: Value =
        serde_json::from_str(attr(tool, "gen_ai.tool.call.arguments").as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"token": "[secret]", "text": "NOTE-TEXT"}));
    assert!(
        attr(tool, "gen_ai.tool.call.result")
            .as_str()
            .unwrap()
            .contains("sent-RESULT")
    );
    carries_none_of(&spans, &["TOKEN-SECRET-VALUE"]);
    // A run from the command line starts a trace of its own.
    let drive = spans
        .iter()
        .find(|s| s["name"] == "invoke_agent noter")
        .unwrap();
    assert_eq!(drive["parent_span_id"], "");
    assert!(spans.iter().all(|s| s["trace_id"] == drive["trace_id"]));
}

/// What a tiny MCP server over streamable HTTP saw of each `tools/call`: the
/// `traceparent` header and `params._meta.traceparent`.
type McpSeen = Arc<Mutex<Vec<(Option<String>, Option<String>)>>>;

/// A minimal MCP server (JSON-RPC over streamable HTTP, JSON answers) with one tool,
/// `probe`; its URL.
async fn mcp_server() -> (String, McpSeen) {
    let seen: McpSeen = Arc::default();
    let keep = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
                let keep = Arc::clone(&keep);
                async move {
                    use axum::response::IntoResponse;
                    let id = body["id"].clone();
                    let result = match body["method"].as_str().unwrap_or("") {
                        "initialize" => json!({
                            "protocolVersion": body["params"]["protocolVersion"],
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "probe", "version": "1"}
                        }),
                        "tools/list" => json!({"tools": [{
                            "name": "probe", "description": "Probe.",
                            "inputSchema": {"type": "object", "properties": {}}
                        }]}),
                        "tools/call" => {
                            let header = headers
                                .get("traceparent")
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_string);
                            let meta = body["params"]["_meta"]["traceparent"]
                                .as_str()
                                .map(str::to_string);
                            keep.lock().unwrap().push((header, meta));
                            json!({"content": [{"type": "text", "text": "probed"}]})
                        }
                        // Notifications: taken, nothing to answer.
                        _ if id.is_null() => {
                            return axum::http::StatusCode::ACCEPTED.into_response();
                        }
                        _ => json!({}),
                    };
                    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
                        .into_response()
                }
            },
        )
        .get(|| async { axum::http::StatusCode::METHOD_NOT_ALLOWED }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

#[tokio::test]
async fn an_mcp_tool_over_http_carries_the_calls_trace() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(dir.path());
    let (url, seen) = mcp_server().await;
    cli_run(
        dir.path(),
        &receiver,
        ("probe", &format!("mcp_server: remote\nurl: {url}\n")),
        "name: prober\nmodel: scripted:replies.yaml\ntools: [remote__probe]\npermissions: {remote__probe: auto}\n",
        "replies:\n  - content: Probing.\n    tool_calls: [{id: c_probe, name: remote__probe, arguments: {}}]\n  - content: Probed.\n",
        &[],
    )
    .await;
    let spans = receiver.spans();
    let tool = spans
        .iter()
        .find(|s| s["name"] == "execute_tool remote__probe")
        .expect("the MCP call's span");
    let want = format!(
        "00-{}-{}-01",
        tool["trace_id"].as_str().unwrap(),
        tool["span_id"].as_str().unwrap()
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, [(Some(want.clone()), Some(want))]);
}
