//! Images from tools to models: an MCP server's image content (npm
//! `@modelcontextprotocol/server-everything`, `get-tiny-image`) reaches the fake OpenAI
//! server as an image part in a user message right after the tool results, while the
//! record keeps a reference and the size; `read_file` of a PNG reaches the fake
//! Anthropic server as an image block inside the `tool_result`; a text-only model (known,
//! or `vision: false`) gets a line of text instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fake_anthropic;
use crate::fake_openai;
use crate::launching;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine;
use serde_json::{Value, json};

/// The server-everything entry point, installed by tests/mcp/setup.sh.
fn everything() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("tests/mcp/setup.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cannot run tests/mcp/setup.sh");
    assert!(out.status.success(), "tests/mcp/setup.sh failed");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("everything="))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("tests/mcp/setup.sh printed no everything=: {text}"))
}

/// A small PNG: the signature, then arbitrary bytes (the model never decodes it here).
fn png() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..200u8).collect::<Vec<_>>());
    bytes
}

fn run_cli(dir: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = launching::command(
        &["run", "--agent", "agent.yaml", "--json", "Look"],
        dir,
        "0",
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.env("TOOLGATE_MODEL_BACKOFF_MS", "5").output().unwrap()
}

#[test]
fn an_mcp_image_reaches_openai_as_an_image_part() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(fake_openai::FakeOpenAi::start(vec![
        fake_openai::calls_reply("", &[("call_img", "everything__get-tiny-image", json!({}))]),
        fake_openai::text_reply("A tiny logo.", 4),
    ]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/mcp.json"),
        json!({"mcpServers": {"everything": {"command": "node", "args": [everything()]}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agent.yaml"),
        "name: looker\nmodel: openai:gpt-4o\ntools: [everything__get-tiny-image]\npermissions: {everything__get-tiny-image: auto}\n",
    )
    .unwrap();
    let out = run_cli(
        dir.path(),
        &[
            ("OPENAI_BASE_URL", &server.base_url),
            ("OPENAI_API_KEY", "sk-test"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", launching::stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1]["messages"].as_array().unwrap();
    let tool_at = messages.iter().position(|m| m["role"] == "tool").unwrap();
    let tool_text = messages[tool_at]["content"].as_str().unwrap();
    assert!(tool_text.contains("[image image/png, "), "{tool_text}");
    // Right after the results: a user message with the image as a data URL.
    let next = &messages[tool_at + 1];
    assert_eq!(next["role"], "user");
    let parts = next["content"].as_array().unwrap();
    let image = parts.iter().find(|p| p["type"] == "image_url").unwrap();
    let url = image["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{}",
        &url[..40]
    );
    // The record keeps the reference and the size, not the data.
    let calls = launching::output(&["calls", "--json"], dir.path());
    let page: Value = serde_json::from_slice(&calls.stdout).unwrap();
    let result = page["calls"][0]["result"].as_str().unwrap();
    assert!(
        result.contains("[image image/png, ") && result.contains("sha256:"),
        "{result}"
    );
    assert!(!result.contains("iVBORw0KGgo"), "{result}");
}

#[tokio::test]
async fn read_file_of_a_png_reaches_anthropic_inside_the_tool_result() {
    let server = fake_anthropic::FakeAnthropic::start(vec![
        fake_anthropic::tools_reply(
            "",
            &[("toolu_img", "read_file", json!({"path": "logo.png"}))],
        ),
        fake_anthropic::text_reply("Seen."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("logo.png"), png()).unwrap();
    let file = dir.path().join("agent.yaml");
    std::fs::write(
        &file,
        format!(
            "name: eyes\nmodel: {{name: anthropic:claude-test, base_url: '{}'}}\ntools: [read_file]\n",
            server.base_url
        ),
    )
    .unwrap();
    let run = start(&file, dir.path()).await;
    assert_eq!(
        run.status,
        toolgate::protocol::RunStatus::Completed,
        "{:?}",
        run.last_error
    );
    let requests = server.requests();
    let user = requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let result = &user["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_img");
    let blocks = result["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "text");
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["source"]["media_type"], "image/png");
    let data = blocks[1]["source"]["data"].as_str().unwrap();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap(),
        png()
    );
}

/// A command tool whose file declares an image output: its stdout goes to the model as
/// an image.
#[tokio::test]
async fn a_command_tools_declared_image_output_reaches_the_model() {
    let server = fake_openai::FakeOpenAi::start(vec![
        fake_openai::calls_reply("", &[("call_shot", "screenshot", json!({}))]),
        fake_openai::text_reply("Nice screen.", 4),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shot.png"), png()).unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/screenshot.yaml"),
        format!(
            "name: screenshot\ndescription: Takes a screenshot.\npermission: auto\nparameters: {{type: object, properties: {{}}}}\noutput: {{type: string, contentMediaType: image/png}}\nentry: {{type: command, command: cat, args: ['{}']}}\n",
            dir.path().join("shot.png").display()
        ),
    )
    .unwrap();
    let file = dir.path().join("agent.yaml");
    std::fs::write(
        &file,
        format!(
            "name: viewer\nmodel: {{name: openai:gpt-4o, base_url: '{}'}}\ntools: [screenshot]\n",
            server.base_url
        ),
    )
    .unwrap();
    let run = start_with(&file, dir.path(), Some(dir.path().join("tools"))).await;
    assert_eq!(
        run.status,
        toolgate::protocol::RunStatus::Completed,
        "{:?}",
        run.last_error
    );
    let messages = server.requests()[1]["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    let url = last["content"][2]["image_url"]["url"].as_str().unwrap();
    let data = url.strip_prefix("data:image/png;base64,").unwrap();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap(),
        png()
    );
}

async fn start(agent_file: &Path, dir: &Path) -> toolgate::protocol::RunObject {
    start_with(agent_file, dir, None).await
}

async fn start_with(
    agent_file: &Path,
    dir: &Path,
    tools_dir: Option<PathBuf>,
) -> toolgate::protocol::RunObject {
    let agent = toolgate::agent::Agent::load(agent_file).unwrap();
    let mut runner = toolgate::run::Runner::new(
        toolgate::store::Store::open(dir.join("t.db")).unwrap(),
        toolgate::tool::sources::standard(),
    );
    runner.model_config = toolgate::model::OpenAiConfig {
        attempts: 1,
        ..toolgate::model::OpenAiConfig::default()
    };
    runner
        .start(toolgate::run::StartRun {
            priority: None,
            owner: None,
            agent,
            model: None,
            conversation: None,
            message: "Look at logo.png".into(),
            tools_dir,
            workspace: Some(dir.to_path_buf()),
        })
        .await
        .unwrap()
}

/// A text-only model gets a line instead of the image: known by name, or marked with
/// `vision: false`.
#[tokio::test]
async fn a_text_only_model_gets_text_instead() {
    for (model, settings) in [
        ("openai:gpt-3.5-turbo", ""),
        ("openai:gpt-4o", ", vision: false"),
    ] {
        let server = fake_openai::FakeOpenAi::start(vec![
            fake_openai::calls_reply(
                "",
                &[("call_img", "read_file", json!({"path": "logo.png"}))],
            ),
            fake_openai::text_reply("Noted.", 4),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("logo.png"), png()).unwrap();
        let file = dir.path().join("agent.yaml");
        std::fs::write(
            &file,
            format!(
                "name: blind\nmodel: {{name: {model}, base_url: '{}'{settings}}}\ntools: [read_file]\n",
                server.base_url
            ),
        )
        .unwrap();
        let run = start(&file, dir.path()).await;
        assert_eq!(
            run.status,
            toolgate::protocol::RunStatus::Completed,
            "{model}: {:?}",
            run.last_error
        );
        let messages = server.requests()[1]["messages"].as_array().unwrap().clone();
        let last = messages.last().unwrap();
        assert_eq!(
            last["role"], "tool",
            "{model}: no image message after the results"
        );
        let text = last["content"].as_str().unwrap();
        assert!(
            text.contains("[image image/png, 208 bytes: not shown, the model reads text only]"),
            "{model}: {text}"
        );
    }
}
