//! Per-agent model settings and fallbacks against fake OpenAI servers: each setting of
//! `model: {...}` shows in the request the server received (body or headers), a bad
//! setting is a one-line load error, and `fallback:` answers when the primary keeps
//! failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::fake_openai;
use crate::launching;

use std::time::Duration;

use fake_openai::{FakeOpenAi, Reply, text_reply};
use serde_json::Value;
use toolgate::agent::Agent;
use toolgate::model::OpenAiConfig;
use toolgate::protocol::RunStatus;
use toolgate::run::{Runner, StartRun};
use toolgate::store::Store;

/// Runs `agent_yaml` once with "Hi" against a runner whose environment points at
/// `env_url`; returns the run's status and last error.
async fn run_once(agent_yaml: &str, env_url: &str, attempts: u32) -> (RunStatus, Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.yaml");
    std::fs::write(&file, agent_yaml).unwrap();
    let agent = Agent::load(&file).unwrap();
    let mut runner = Runner::new(
        Store::open(dir.path().join("t.db")).unwrap(),
        toolgate::tool::sources::standard(),
    );
    runner.model_config = OpenAiConfig {
        api_key: Some("sk-env".into()),
        base_url: Some(env_url.to_string()),
        attempts,
        backoff: Duration::from_millis(5),
        ..OpenAiConfig::default()
    };
    let run = runner
        .start(StartRun {
            priority: None,
            owner: None,
            agent,
            model: None,
            conversation: None,
            message: "Hi".into(),
            tools_dir: None,
            workspace: Some(dir.path().to_path_buf()),
        })
        .await
        .unwrap();
    (run.status, run.last_error)
}

struct FieldCase {
    name: &'static str,
    setting: &'static str,
    /// The request body's field and value.
    body: Option<(&'static str, Value)>,
    /// A line the request head carries.
    head: Option<&'static str>,
}

#[tokio::test]
async fn each_setting_reaches_the_request() {
    let cases = [
        FieldCase {
            name: "temperature",
            setting: "temperature: 0.25",
            body: Some(("temperature", serde_json::json!(0.25))),
            head: None,
        },
        FieldCase {
            name: "top_p",
            setting: "top_p: 0.5",
            body: Some(("top_p", serde_json::json!(0.5))),
            head: None,
        },
        FieldCase {
            name: "max_tokens",
            setting: "max_tokens: 321",
            body: Some(("max_tokens", serde_json::json!(321))),
            head: None,
        },
        FieldCase {
            name: "reasoning_effort",
            setting: "reasoning_effort: high",
            body: Some(("reasoning_effort", serde_json::json!("high"))),
            head: None,
        },
        FieldCase {
            name: "headers",
            setting: "headers: {X-Team: blue, OpenAI-Organization: org-7}",
            body: None,
            head: Some("x-team: blue"),
        },
        FieldCase {
            name: "name (the model field of the body)",
            setting: "temperature: 1",
            body: Some(("model", serde_json::json!("gpt-settings"))),
            head: None,
        },
    ];
    let mut failures = Vec::new();
    for case in &cases {
        let server = FakeOpenAi::start(vec![text_reply("Hello.", 3)]).await;
        let yaml = format!(
            "name: tuned\nmodel:\n  name: openai:gpt-settings\n  {}\n",
            case.setting
        );
        let (status, error) = run_once(&yaml, &server.base_url, 1).await;
        if status != RunStatus::Completed {
            failures.push(format!("{}: {status:?} {error:?}", case.name));
            continue;
        }
        let request = &server.requests()[0];
        if let Some((field, value)) = &case.body
            && &request[*field] != value
        {
            failures.push(format!("{}: body {field} = {}", case.name, request[*field]));
        }
        if let Some(line) = case.head
            && !server.heads()[0].contains(line)
        {
            failures.push(format!("{}: head lacks {line}", case.name));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn without_settings_the_request_carries_none_of_them() {
    let server = FakeOpenAi::start(vec![text_reply("Hello.", 3)]).await;
    let (status, _) = run_once(
        "name: plain\nmodel: openai:gpt-plain\n",
        &server.base_url,
        1,
    )
    .await;
    assert_eq!(status, RunStatus::Completed);
    let request = &server.requests()[0];
    for field in ["temperature", "top_p", "max_tokens", "reasoning_effort"] {
        assert!(request.get(field).is_none(), "{field} sent: {request}");
    }
}

#[tokio::test]
async fn base_url_sends_the_agent_to_its_own_server() {
    let env_server = FakeOpenAi::start(vec![]).await;
    let own = FakeOpenAi::start(vec![text_reply("From my own server.", 4)]).await;
    let yaml = format!(
        "name: own\nmodel:\n  name: openai:gpt-own\n  base_url: {}\n",
        own.base_url
    );
    let (status, error) = run_once(&yaml, &env_server.base_url, 1).await;
    assert_eq!(status, RunStatus::Completed, "{error:?}");
    assert_eq!(own.requests().len(), 1);
    assert!(env_server.requests().is_empty());
}

#[tokio::test]
async fn timeout_ends_a_silent_stream() {
    // The server sends its head and then nothing for a minute; a 0.3 s timeout ends
    // the wait and, with one attempt, the run fails saying so.
    let server = FakeOpenAi::start(vec![Reply::Stall(Duration::from_secs(60))]).await;
    let yaml = "name: impatient\nmodel:\n  name: openai:gpt-slow\n  timeout: 0.3\n";
    let (status, error) = run_once(yaml, &server.base_url, 1).await;
    assert_eq!(status, RunStatus::Failed);
    let error = error.unwrap();
    assert!(error.contains("failed 1 time"), "{error}");
}

#[tokio::test]
async fn fallback_answers_when_the_primary_keeps_failing() {
    let primary = FakeOpenAi::start(vec![
        Reply::Status(500, "{\"error\":{\"message\":\"boom\"}}".into()),
        Reply::Status(500, "{\"error\":{\"message\":\"boom\"}}".into()),
    ])
    .await;
    let secondary = FakeOpenAi::start(vec![text_reply("The fallback answered.", 5)]).await;
    let yaml = format!(
        "name: sturdy\nmodel: openai:gpt-primary\nfallback:\n  - name: openai:gpt-secondary\n    base_url: {}\n    temperature: 0.1\n",
        secondary.base_url
    );
    let (status, error) = run_once(&yaml, &primary.base_url, 2).await;
    assert_eq!(status, RunStatus::Completed, "{error:?}");
    assert_eq!(primary.requests().len(), 2, "the primary is retried first");
    let asked = secondary.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["model"], "gpt-secondary");
    assert_eq!(asked[0]["temperature"], 0.1);
}

#[tokio::test]
async fn a_primary_that_answers_leaves_the_fallback_alone() {
    let primary = FakeOpenAi::start(vec![text_reply("Primary here.", 5)]).await;
    let secondary = FakeOpenAi::start(vec![]).await;
    let yaml = format!(
        "name: sturdy\nmodel: openai:gpt-primary\nfallback: [{{name: openai:gpt-secondary, base_url: '{}'}}]\n",
        secondary.base_url
    );
    let (status, _) = run_once(&yaml, &primary.base_url, 2).await;
    assert_eq!(status, RunStatus::Completed);
    assert!(secondary.requests().is_empty());
}

/// `api_key_env` through the binary: the key comes from the variable it names.
#[test]
fn api_key_env_names_the_variable_holding_the_key() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(FakeOpenAi::start(vec![text_reply("Keyed.", 3)]));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agent.yaml"),
        format!(
            "name: keyed\nmodel:\n  name: openai:gpt-key\n  base_url: {}\n  api_key_env: TEAM_KEY\n",
            server.base_url
        ),
    )
    .unwrap();
    let out = launching::command(&["run", "--agent", "agent.yaml", "Hi"], dir.path(), "0")
        .env("TEAM_KEY", "sk-team-123")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", launching::stderr(&out));
    let heads = server.heads();
    assert!(
        heads[0].contains("authorization: bearer sk-team-123"),
        "{}",
        heads[0]
    );
    // Unset, the variable is named in a one-line error.
    let out = launching::command(&["run", "--agent", "agent.yaml", "Hi"], dir.path(), "0")
        .env_remove("TEAM_KEY")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = launching::stderr(&out);
    assert!(err.contains("TEAM_KEY"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A bad setting stops the agent file from loading, with the field and line.
#[test]
fn a_bad_setting_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    for (yaml, says) in [
        (
            "name: hot\nmodel:\n  name: openai:x\n  temperature: 7\n",
            "temperature",
        ),
        (
            "name: odd\nmodel: {name: openai:x, colour: red}\n",
            "colour",
        ),
        (
            "name: fb\nmodel: openai:x\nfallback: [nothing]\n",
            "fallback",
        ),
    ] {
        std::fs::write(dir.path().join("agent.yaml"), yaml).unwrap();
        let out = launching::output(&["run", "--agent", "agent.yaml", "Hi"], dir.path());
        assert_eq!(out.status.code(), Some(2), "{yaml}");
        let err = launching::stderr(&out);
        assert!(err.contains(says), "{yaml}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
