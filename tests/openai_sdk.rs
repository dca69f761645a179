//! The Responses-compatible endpoint against the official `openai` Python package,
//! unmodified: tests/py/setup.sh makes its venv (this test fails, never skips, when it
//! cannot), `toolgate serve` runs on a free port with an API key, a fresh database and
//! the agents of tests/fixtures/responses/, and tests/py/test_responses.py drives it.
//! Then the server is killed and started again on the same database, and every response
//! the SDK saw is read back with `GET /v1/responses/{id}`. What a client brings itself
//! (function tools, images, files, `text.format`) is driven by
//! tests/py/test_responses_client.py against agents on the fake OpenAI server, whose
//! recorded requests show what the model was sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fake_openai;
use crate::serving;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

const KEY: &str = "sdk-test-key";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A running `toolgate serve`, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path) -> Server {
    let fixtures = root().join("tests/fixtures/responses");
    serve_from(dir, &fixtures.join("agents"), &fixtures.join("tools"))
}

fn serve_from(dir: &Path, agents: &Path, tools: &Path) -> Server {
    serve_with(dir, agents, tools, &[])
}

fn serve_with(dir: &Path, agents: &Path, tools: &Path, env: &[(&str, &str)]) -> Server {
    let mut cmd = Command::new(toolgate_test_support::bin());
    cmd.arg("serve")
        .args(["--addr", "127.0.0.1:0"])
        .arg("--agents")
        .arg(agents)
        .arg("--tools")
        .arg(tools)
        .arg("--db")
        .arg(dir.join("toolgate.db"))
        .arg("--workspace")
        .arg(dir.join("ws"))
        .env("TOOLGATE_API_KEY", KEY)
        .env_remove("TOOLGATE_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (child, url) = serving::listen(&mut cmd);
    Server { child, url }
}

fn get(rt: &tokio::runtime::Runtime, url: &str, key: Option<&str>) -> (u16, Value) {
    rt.block_on(async {
        let client = reqwest::Client::new();
        let mut req = client.get(url);
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    })
}

/// What a response is, whoever serialised it: status, chain, items by type and id.
fn gist(r: &Value) -> Value {
    let items: Vec<Value> = r["output"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|o| {
            serde_json::json!({
                "type": o["type"], "id": o["id"], "status": o.get("status").cloned().unwrap_or(Value::Null),
                "output": o.get("output").cloned().unwrap_or(Value::Null),
                "text": o["content"][0]["text"],
            })
        })
        .collect();
    serde_json::json!({
        "id": r["id"], "status": r["status"], "model": r["model"],
        "previous_response_id": r["previous_response_id"], "usage": r["usage"]["total_tokens"],
        "error": r["error"]["message"], "output": items,
    })
}

#[test]
fn the_openai_python_sdk_talks_to_agents_through_the_responses_endpoint() {
    let python = serving::python("the openai SDK test");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let seen_file = dir.path().join("seen.json");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    {
        let server = serve(dir.path());
        // The key is required, as for every /v1 route.
        let (status, body) = get(&rt, &format!("{}/v1/responses/resp_x", server.url), None);
        assert_eq!(status, 401, "{body}");
        let out = Command::new(&python)
            .arg(root().join("tests/py/test_responses.py"))
            .env("TOOLGATE_BASE_URL", format!("{}/v1", server.url))
            .env("TOOLGATE_API_KEY", KEY)
            .env("TOOLGATE_WORKSPACE", dir.path().join("ws"))
            .env("TOOLGATE_RESPONSES_OUT", &seen_file)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .expect("the venv's python runs");
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success(),
            "tests/py/test_responses.py failed:\n{report}"
        );
        assert!(report.contains("OK"), "{report}");
        // retrieve(stream=True), cancel, delete and the 405 body ran (issue 31).
        for name in [
            "test_retrieve_with_stream_replays_the_stored_response",
            "test_cancel_ends_a_paused_response_for_good",
            "test_delete_forgets_the_response",
            "test_a_method_a_route_does_not_take_is_a_json_error",
            "test_tool_progress_reaches_the_stream",
            "test_parse_gets_the_structured_answer_it_asked_for",
            "test_input_items_lists_what_the_request_sent",
        ] {
            assert!(
                report.contains(&format!("{name} ")),
                "{name} did not run:\n{report}"
            );
        }
        // `server` is killed here, mid-nothing: what was answered must be stored.
    }
    let seen: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&seen_file).unwrap()).unwrap();
    assert!(
        seen.len() >= 10,
        "the SDK test saw {} responses",
        seen.len()
    );
    let server = serve(dir.path());
    for (id, from_sdk) in &seen {
        let (status, stored) = get(&rt, &format!("{}/v1/responses/{id}", server.url), Some(KEY));
        assert_eq!(status, 200, "{id}: {stored}");
        assert_eq!(gist(&stored), gist(from_sdk), "{id} after a restart");
    }
    let (status, body) = get(
        &rt,
        &format!("{}/v1/responses/resp_missing", server.url),
        Some(KEY),
    );
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (404, Some("not_found"))
    );
}

/// The README's Python example (examples/serve/approve.py) against the README's agents.
#[test]
fn the_readme_python_example_approves_and_answers() {
    let python = serving::python("the openai SDK test");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let server = serve_from(
        dir.path(),
        &root().join("examples/serve/agents"),
        &root().join("tools"),
    );
    let out = Command::new(&python)
        .arg(root().join("examples/serve/approve.py"))
        .env("TOOLGATE_URL", format!("{}/v1", server.url))
        .env("TOOLGATE_API_KEY", KEY)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the venv's python runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
    assert!(report.contains("ran calculator"), "{report}");
    assert!(report.contains("approving write_file"), "{report}");
    assert!(report.contains("answering ask_user"), "{report}");
    assert!(
        report.trim_end().ends_with(
            "completed Done. 2+3*4 is 14, saved in result.txt, and I noted your colour."
        ),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/result.txt")).unwrap(),
        "2+3*4 = 14\n"
    );
}

/// The user's text of a chat request: its last user message, parts joined.
fn user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let Some(user) = messages.iter().rev().find(|m| m["role"] == "user") else {
        return String::new();
    };
    match &user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The fake model: echoes a tool result, calls `get_weather` when asked about the
/// weather and it has the tool, answers JSON when asked for JSON, else "Seen.".
fn fake_model(body: &Value) -> fake_openai::Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        let result = last["content"].as_str().unwrap_or_default();
        return fake_openai::text_reply(&format!("The tool said: {result}"), 7);
    }
    let text = user_text(body);
    if text.contains("SQL") && body["tools"].to_string().contains("\"run_sql\"") {
        return fake_openai::custom_call_reply("call_sql", "run_sql", "SELECT count(*) FROM pets");
    }
    if text.contains("JSON") {
        return fake_openai::text_reply(r#"{"expression": "2+3*4", "answer": 14}"#, 6);
    }
    if text.contains("eather") && body["tools"].to_string().contains("\"get_weather\"") {
        let city = if text.contains("Oslo") {
            "Oslo"
        } else {
            "Paris"
        };
        return fake_openai::calls_reply(
            "",
            &[(
                &format!("call_weather_{city}"),
                "get_weather",
                serde_json::json!({"city": city}),
            )],
        );
    }
    fake_openai::text_reply("Seen.", 3)
}

#[test]
fn client_function_tools_attachments_and_formats_reach_an_openai_model() {
    let python = serving::python("the openai SDK test");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let model = rt.block_on(fake_openai::FakeOpenAi::respond(fake_model));
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let agents = dir.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    for (name, mode, model) in [
        ("client_tools", "native", "gpt-4o"),
        ("client_tools_xml", "xml", "gpt-4o"),
        ("client_tools_text", "native", "gpt-3.5-turbo"),
    ] {
        std::fs::write(
            agents.join(format!("{name}.yaml")),
            format!(
                "name: {name}\nmodel: openai:{model}\nmode: {mode}\ninstructions: You help.\ntools: [calculator]\nmax_iterations: 4\n"
            ),
        )
        .unwrap();
    }
    let server = serve_with(
        dir.path(),
        &agents,
        &root().join("tests/fixtures/responses/tools"),
        &[
            ("OPENAI_BASE_URL", &model.base_url),
            ("OPENAI_API_KEY", "sk-test"),
            ("TOOLGATE_MODEL_BACKOFF_MS", "5"),
        ],
    );
    let out = Command::new(&python)
        .arg(root().join("tests/py/test_responses_client.py"))
        .env("TOOLGATE_BASE_URL", format!("{}/v1", server.url))
        .env("TOOLGATE_API_KEY", KEY)
        .env("TOOLGATE_WORKSPACE", &ws)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the venv's python runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "tests/py/test_responses_client.py failed:\n{report}"
    );
    for name in [
        "test_a_declared_tool_is_called_answered_and_used",
        "test_the_stream_accumulator_takes_the_function_call",
        "test_an_xml_agent_is_told_of_the_declared_tool",
        "test_tools_toolgate_cannot_take_are_400s",
        "test_a_custom_tool_call_is_handed_over_and_answered",
        "test_a_custom_tool_call_streams_its_input",
        "test_an_image_goes_to_the_model",
        "test_a_text_only_model_is_told_of_the_image_instead",
        "test_a_file_lands_in_the_workspace",
        "test_bad_attachments_are_400s_and_nothing_is_written",
        "test_parse_asks_an_openai_model_natively",
    ] {
        assert!(
            report.contains(&format!("{name} ")) && report.contains("OK"),
            "{name} did not run:\n{report}"
        );
    }
    // A call of a declared tool, answered after a restart: the run's state kept the tool.
    let half = |what: &str, url: &str| {
        let out = Command::new(&python)
            .arg(root().join("tests/py/test_responses_client.py"))
            .args([what, dir.path().join("asked.json").to_str().unwrap()])
            .env("TOOLGATE_BASE_URL", format!("{url}/v1"))
            .env("TOOLGATE_API_KEY", KEY)
            .env("TOOLGATE_WORKSPACE", &ws)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .expect("the venv's python runs");
        serving::ran(&format!("test_responses_client.py {what}"), out)
    };
    half("declare", &server.url);
    drop(server);
    let server = serve_with(
        dir.path(),
        &agents,
        &root().join("tests/fixtures/responses/tools"),
        &[
            ("OPENAI_BASE_URL", &model.base_url),
            ("OPENAI_API_KEY", "sk-test"),
        ],
    );
    let text = half("answer", &server.url);
    assert!(
        text.contains("The tool said: rain after the restart"),
        "{text}"
    );
    drop(server);
    let requests = model.requests();
    let after = requests.last().unwrap();
    assert!(
        after["tools"].to_string().contains("\"get_weather\""),
        "the restarted server's run lost the declared tool: {after}"
    );
    // Native mode: the declared tool is in `tools`, after the agent's.
    let native = requests
        .iter()
        .find(|r| user_text(r).contains("weather in Paris"))
        .expect("the weather question reached the model");
    let names: Vec<&str> = native["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["calculator", "get_weather"], "{native}");
    // The client's output reached the model as the call's result.
    assert!(
        requests.iter().any(|r| r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool"
                && m["content"].as_str().unwrap_or("").contains("sunny, 21 C"))),
        "no tool message carried the client's output"
    );
    // A custom tool went to the model as one (its grammar with it), and its call came
    // back in the history as a custom call with its freeform input.
    let custom = requests
        .iter()
        .find(|r| user_text(r).contains("SQL"))
        .expect("the SQL question reached the model");
    let offered = custom["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "custom")
        .unwrap_or_else(|| panic!("no custom tool offered: {custom}"));
    assert_eq!(offered["custom"]["name"], "run_sql");
    assert_eq!(offered["custom"]["format"]["syntax"], "regex", "{offered}");
    let replayed = requests
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap().clone())
        .find(|m| m["tool_calls"][0]["type"] == "custom")
        .expect("the custom call went back to the model");
    assert_eq!(
        replayed["tool_calls"][0]["custom"],
        serde_json::json!({"name": "run_sql", "input": "SELECT count(*) FROM pets"})
    );
    // Xml mode: the instructions describe it.
    let xml = requests
        .iter()
        .find(|r| user_text(r).contains("(xml)"))
        .expect("the xml agent asked the model");
    let system = xml["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("get_weather") && system.contains("calculator"),
        "{system}"
    );
    // The image is an image part of the user's message, as sent.
    let image_url = requests
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap().clone())
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|p| p["type"] == "image_url")
        .expect("an image part reached the model");
    let png = [
        b"\x89PNG\r\n\x1a\n".as_slice(),
        &(0u8..64).collect::<Vec<_>>(),
    ]
    .concat();
    use base64::Engine;
    assert_eq!(
        image_url["image_url"]["url"],
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(png)
        )
    );
    // A model known to read text only gets a line in the image's place.
    let text_only = requests
        .iter()
        .find(|r| r["model"] == "gpt-3.5-turbo")
        .expect("the text-only agent asked its model");
    assert!(!text_only.to_string().contains("image_url"), "{text_only}");
    assert!(
        user_text(text_only)
            .contains("[image image/png, 72 bytes: not shown, the model reads text only]"),
        "{text_only}"
    );
    // The file's path is in the message; its bytes are in the workspace.
    assert!(
        requests
            .iter()
            .any(|r| user_text(r).contains("saved in your workspace as uploads/notes.txt")),
        "no request named the saved file"
    );
    assert_eq!(
        std::fs::read(ws.join("uploads/notes.txt")).unwrap(),
        b"first line\n"
    );
    assert!(!dir.path().join("x").exists() && !ws.join("x").exists());
    // text.format json_schema went out as OpenAI's response_format.
    let structured = requests
        .iter()
        .find(|r| r.get("response_format").is_some())
        .expect("a request asked for the format natively");
    let format = &structured["response_format"];
    assert_eq!(format["type"], "json_schema", "{format}");
    assert_eq!(
        format["json_schema"]["schema"]["properties"]["answer"]["type"], "integer",
        "{format}"
    );
}
