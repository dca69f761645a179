//! Agent runs in the model servers' dialects, end to end through the binary: a
//! scripted model answers in each special-token family (DeepSeek V3.1 and V3.2 DSML,
//! gpt-oss Harmony, Mistral both forms, Llama 3 `<|python_tag|>`, Llama 4
//! `<|python_start|>`), read with the agent file's `dialect:` and with no `dialect:`
//! (auto); bare JSON and bare pythonic lists in prose never become calls under auto.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn run(dir: &Path) -> Output {
    toolgate_test_support::toolgate(dir)
        .args(["run", "--agent", "agent.yaml", "--json", "go"])
        .output()
        .unwrap()
}

/// Runs an xml-mode agent (with `dialect`, or none) whose scripted model first says
/// `reply`, then "Done."; returns the run's JSON events.
fn agent_run(dialect: Option<&str>, reply: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let line = dialect
        .map(|d| format!("dialect: {d}\n"))
        .unwrap_or_default();
    std::fs::write(
        p.join("agent.yaml"),
        format!(
            "name: a\nmode: xml\n{line}model: scripted:replies.yaml\ntools: [echo]\nworkspace: .\n"
        ),
    )
    .unwrap();
    let replies = serde_json::json!({"replies": [{"content": reply}, {"content": "Done."}]});
    std::fs::write(p.join("replies.yaml"), replies.to_string()).unwrap();
    let out = run(p);
    assert_eq!(out.status.code(), Some(0), "{dialect:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// The special-token form of each family: (dialect name, the model's reply).
const FAMILIES: &[(&str, &str)] = &[
    (
        "deepseek",
        "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>echo<｜tool▁sep｜>{\"text\": \"via run\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    ),
    (
        "deepseek",
        "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"echo\">\n<｜DSML｜parameter name=\"text\" string=\"true\">via run</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    ),
    (
        "harmony",
        "<|channel|>commentary to=functions.echo <|constrain|>json<|message|>{\"text\": \"via run\"}<|call|>",
    ),
    (
        "mistral",
        "[TOOL_CALLS][{\"name\": \"echo\", \"arguments\": {\"text\": \"via run\"}}]",
    ),
    ("mistral", "[TOOL_CALLS]echo[ARGS]{\"text\": \"via run\"}"),
    (
        "llama3",
        "<|python_tag|>{\"name\": \"echo\", \"parameters\": {\"text\": \"via run\"}}",
    ),
    (
        "pythonic",
        "<|python_start|>[echo(text='via run')]<|python_end|>",
    ),
    (
        "kimi-k2",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.echo:0<|tool_call_argument_begin|>{\"text\": \"via run\"}<|tool_call_end|><|tool_calls_section_end|>",
    ),
    (
        "glm",
        "<tool_call>echo<arg_key>text</arg_key><arg_value>via run</arg_value></tool_call>",
    ),
];

fn assert_called(events: &[Value], what: &str) {
    let all: Vec<String> = events.iter().map(Value::to_string).collect();
    let parsed = events
        .iter()
        .find(|e| e["type"] == "tool_call.parsed")
        .unwrap_or_else(|| panic!("{what}: no call parsed: {all:?}"));
    assert!(parsed.to_string().contains("via run"), "{what}: {parsed}");
    assert!(
        events.iter().any(|e| e["type"] == "tool.finished"),
        "{what}: the call did not run: {all:?}"
    );
    assert_eq!(
        events.last().unwrap()["status"],
        "completed",
        "{what}: {all:?}"
    );
}

#[test]
fn every_special_token_family_runs_with_its_dialect_set() {
    for (dialect, reply) in FAMILIES {
        assert_called(&agent_run(Some(dialect), reply), dialect);
    }
}

#[test]
fn special_token_families_run_under_auto() {
    for (dialect, reply) in FAMILIES {
        assert_called(&agent_run(None, reply), &format!("{dialect} under auto"));
    }
}

#[test]
fn bare_json_and_pythonic_in_prose_are_no_calls_under_auto() {
    for reply in [
        "Call it like this:\n[echo(text='via run')]\nthen read the answer.",
        "The payload is\n{\"name\": \"echo\", \"parameters\": {\"text\": \"via run\"}}\nas JSON.",
    ] {
        let events = agent_run(None, reply);
        let all: Vec<String> = events.iter().map(Value::to_string).collect();
        assert!(
            !events.iter().any(|e| e["type"] == "tool_call.parsed"),
            "prose became a call: {all:?}"
        );
        assert_eq!(events.last().unwrap()["status"], "completed", "{all:?}");
        assert!(
            all.iter().any(|e| e.contains("via run")),
            "the prose is kept as the answer: {all:?}"
        );
    }
    // The same bare list is a call when the agent asks for the dialect by name.
    assert_called(
        &agent_run(Some("pythonic"), "[echo(text='via run')]"),
        "bare pythonic by name",
    );
}
