//! The model servers' dialects (GLM, Kimi K2, DeepSeek, Harmony, Mistral, Llama 3 JSON,
//! pythonic) through the binary: `toolgate parse --dialect` and `auto`, and agent runs
//! in xml mode whose agent file sets `dialect:` (a scripted model answers in it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};
use toolgate_test_support::toolgate;

use serde_json::Value;

fn cli(args: &[&str], stdin: &[u8], dir: &Path) -> Output {
    let mut child = toolgate(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let written = child.stdin.take().unwrap().write_all(stdin);
    assert!(
        written.is_ok()
            || written
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    );
    child.wait_with_output().unwrap()
}

fn last_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// One sample per dialect: (dialect, in auto too, output).
const SAMPLES: &[(&str, bool, &str)] = &[
    (
        "glm",
        true,
        "<tool_call>echo\n<arg_key>text</arg_key>\n<arg_value>hi</arg_value>\n</tool_call>",
    ),
    (
        "kimi-k2",
        true,
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.echo:0<|tool_call_argument_begin|>{\"text\": \"hi\"}<|tool_call_end|><|tool_calls_section_end|>",
    ),
    (
        "deepseek",
        true,
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>echo<｜tool▁sep｜>{\"text\": \"hi\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    ),
    (
        "deepseek",
        true,
        "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"echo\">\n<｜DSML｜parameter name=\"text\" string=\"true\">hi</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    ),
    (
        "harmony",
        true,
        "<|channel|>commentary to=functions.echo <|constrain|>json<|message|>{\"text\": \"hi\"}<|call|>",
    ),
    (
        "mistral",
        true,
        "[TOOL_CALLS][{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\"}}]",
    ),
    ("mistral", true, "[TOOL_CALLS]echo[ARGS]{\"text\": \"hi\"}"),
    (
        "llama3",
        true,
        "<|python_tag|>{\"name\": \"echo\", \"parameters\": {\"text\": \"hi\"}}",
    ),
    (
        "llama3",
        false,
        "{\"name\": \"echo\", \"parameters\": {\"text\": \"hi\"}}",
    ),
    (
        "pythonic",
        true,
        "<|python_start|>[echo(text='hi')]<|python_end|>",
    ),
    ("pythonic", false, "[echo(text='hi')]"),
];

#[test]
fn parse_reads_every_dialect_by_name_and_special_tokens_in_auto() {
    let dir = tempfile::tempdir().unwrap();
    for (dialect, in_auto, output) in SAMPLES {
        let named = cli(
            &["parse", "--dialect", dialect],
            output.as_bytes(),
            dir.path(),
        );
        assert_eq!(named.status.code(), Some(0), "{dialect}: {named:?}");
        let v = last_json(&named);
        assert_eq!(v["calls"][0]["name"], "echo", "{dialect}: {v}");
        assert_eq!(v["calls"][0]["arguments"]["text"], "hi", "{dialect}: {v}");
        assert_eq!(v["text"], "", "{dialect}: {v}");
        let auto = last_json(&cli(&["parse"], output.as_bytes(), dir.path()));
        let calls = auto["calls"].as_array().unwrap().len();
        assert_eq!(calls, usize::from(*in_auto), "{dialect} under auto: {auto}");
        // Streamed one byte at a time: the same result.
        let one = last_json(&cli(
            &["parse", "--dialect", dialect, "--stream", "1"],
            output.as_bytes(),
            dir.path(),
        ));
        assert_eq!(one, v, "{dialect} streamed");
    }
}

#[test]
fn unknown_dialect_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(&["parse", "--dialect", "nope"], b"x", dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kimi-k2") && err.contains("pythonic"), "{err}");
}

#[test]
fn agent_runs_read_the_dialect_their_file_sets() {
    for (dialect, reply) in [
        (
            "kimi-k2",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.echo:0<|tool_call_argument_begin|>{\"text\": \"from kimi\"}<|tool_call_end|><|tool_calls_section_end|>",
        ),
        ("pythonic", "[echo(text='from kimi')]"),
        (
            "glm",
            "<tool_call>echo<arg_key>text</arg_key><arg_value>from kimi</arg_value></tool_call>",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(
            p.join("agent.yaml"),
            format!("name: a\nmode: xml\ndialect: {dialect}\nmodel: scripted:replies.yaml\ntools: [echo]\nworkspace: .\n"),
        )
        .unwrap();
        let replies = serde_json::json!({"replies": [{"content": reply}, {"content": "Done."}]});
        std::fs::write(p.join("replies.yaml"), replies.to_string()).unwrap();
        let out = cli(&["run", "--agent", "agent.yaml", "--json", "go"], b"", p);
        assert_eq!(out.status.code(), Some(0), "{dialect}: {out:?}");
        let events = String::from_utf8_lossy(&out.stdout).into_owned();
        let parsed: Vec<Value> = events
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect();
        let call = parsed
            .iter()
            .find(|e| e["type"] == "tool_call.parsed")
            .unwrap_or_else(|| panic!("{dialect}: no call parsed: {events}"));
        assert!(call.to_string().contains("from kimi"), "{dialect}: {call}");
        assert!(
            parsed.iter().any(|e| e["type"] == "tool.finished"),
            "{dialect}: {events}"
        );
        assert_eq!(
            last_json(&out)["status"],
            "completed",
            "{dialect}: {events}"
        );
    }
    // A bad dialect in the agent file is named with its field.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agent.yaml"),
        "name: a\nmode: xml\ndialect: klingon\nmodel: scripted:r.yaml\ntools: [echo]\n",
    )
    .unwrap();
    let out = cli(
        &["run", "--agent", "agent.yaml", "--json", "go"],
        b"",
        dir.path(),
    );
    assert_ne!(out.status.code(), Some(0));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("dialect"), "{all}");
}
