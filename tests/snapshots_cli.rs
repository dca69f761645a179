//! Snapshots (insta) of what people read: the CLI's human rendering of a scripted run
//! (`show`, `stats`, `runs`, `tools list`), the xml-mode system prompts built from
//! prompts/, and the server's whole OpenAPI document (`serve --openapi`). What varies
//! from one run to the next (ids, times, durations, temporary paths) is replaced before
//! the comparison.
//!
//! The snapshots live in tests/snapshots/. A change in the rendering fails these tests;
//! when the change is meant, review it with `cargo insta review` (cargo-insta), or
//! rewrite the files with `INSTA_UPDATE=always cargo test --test all -- snapshots_cli::`
//! and read the diff before committing. CI runs with `INSTA_UPDATE=no` (.ci/run): a
//! mismatch or a missing snapshot fails, and no `.snap.new` file is written.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use toolgate_test_support::{toolgate, workspace_root};

/// What varies between runs, and what it becomes in a snapshot (as wide as what it
/// replaces, so that the tables stay aligned).
const FILTERS: &[(&str, &str)] = &[
    (r"\brun_[0-9a-f]{16}\b", "run_XXXXXXXXXXXXXXXX"),
    (r"\bconv_[0-9a-f]{16}\b", "conv_XXXXXXXXXXXXXXXX"),
    (
        r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\b",
        "YYYY-MM-DD hh:mm:ss.mmm",
    ),
    (r"\b\d+(\.\d+)? ms\b", "[N] ms"),
];

/// Asserts `text` matches the snapshot `name`, with `tmp` (a temporary folder) written
/// as `[TMP]`, then [`FILTERS`].
fn assert_text(name: &str, text: &str, tmp: &Path) {
    let text = text.replace(&tmp.display().to_string(), "[TMP]");
    let mut settings = insta::Settings::clone_current();
    for (re, to) in FILTERS {
        settings.add_filter(re, *to);
    }
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// `toolgate --db DB ARGS` in the workspace root (where examples/ and tools/ are).
fn cli(db: &Path, args: &[&str]) -> Output {
    toolgate(workspace_root())
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(what: &str, out: &Output, code: i32) -> String {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: stdout {}\nstderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The README's demo run (examples/demo.sh) with the scripted model: it pauses on the
/// write and the question, the write is approved, the question answered, and it
/// completes. Returns the run's id and its conversation's.
fn demo_run(tmp: &Path, db: &Path) -> (String, String) {
    let ws = tmp.to_str().unwrap();
    let out = cli(
        db,
        &[
            "run",
            "--agent",
            "examples/agents/assistant.yaml",
            "--model",
            "scripted:examples/agents/assistant.replies.yaml",
            "--workspace",
            ws,
            "Work out 2+3*4, save the result to result.txt, and ask me my favourite colour.",
        ],
    );
    stdout("run", &out, 3);
    let runs: Value =
        serde_json::from_str(&stdout("runs", &cli(db, &["runs", "--json"]), 0)).unwrap();
    let run = &runs[0];
    let id = run["id"].as_str().unwrap().to_string();
    let conversation = run["conversation_id"].as_str().unwrap().to_string();
    let approve = cli(db, &["approve", &id, "--call", "call_write"]);
    stdout("approve", &approve, 3);
    let submit = cli(
        db,
        &["submit", &id, "--call", "call_ask", "--output", "blue"],
    );
    stdout("submit", &submit, 0);
    (id, conversation)
}

#[test]
fn the_human_rendering_of_a_scripted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("toolgate.db");
    let (run, conversation) = demo_run(tmp.path(), &db);
    let show = stdout("show", &cli(&db, &["show", &run]), 0);
    assert_text("cli_show", &show, tmp.path());
    let stats = stdout(
        "stats",
        &cli(&db, &["stats", "--conversation", &conversation]),
        0,
    );
    assert_text("cli_stats_conversation", &stats, tmp.path());
    let runs = stdout("runs", &cli(&db, &["runs"]), 0);
    assert_text("cli_runs", &runs, tmp.path());
}

#[test]
fn the_tools_list_of_the_example_library() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("toolgate.db");
    let list = stdout("tools list", &cli(&db, &["tools", "list"]), 0);
    assert_text("cli_tools_list", &list, tmp.path());
}

#[test]
fn the_xml_system_prompt_of_an_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("toolgate.db");
    let out = cli(
        &db,
        &["prompt", "--agent", "examples/agents/xml_assistant.yaml"],
    );
    assert_text(
        "prompt_xml_assistant",
        &stdout("prompt", &out, 0),
        tmp.path(),
    );
}

#[test]
fn the_xml_prompt_of_builtin_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("toolgate.db");
    let out = cli(&db, &["prompt", "calculator", "write_file", "shell"]);
    assert_text(
        "prompt_builtin_tools",
        &stdout("prompt", &out, 0),
        tmp.path(),
    );
}

#[test]
fn the_openapi_document() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("toolgate.db");
    let out = cli(&db, &["serve", "--openapi"]);
    let mut doc: Value = serde_json::from_str(&stdout("serve --openapi", &out, 0)).unwrap();
    // The package version changes with each release, not with the API.
    doc["info"]["version"] = Value::String("[version]".to_string());
    // Some schemas' keys (`if`/`then` of a conditional) come in an order that varies
    // from one process to the next: the snapshot has every object's keys sorted.
    let mut settings = insta::Settings::clone_current();
    settings.set_sort_maps(true);
    settings.bind(|| insta::assert_json_snapshot!("openapi", doc));
}
