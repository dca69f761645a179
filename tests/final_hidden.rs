//! Final and hidden tools, end to end through the binary: a `final: true` tool's output
//! is the run's answer and no model turn follows (a failed one ends nothing); a
//! `hidden: true` tool's call is recorded and its result reaches the model, but neither
//! `run --json` nor the human output shows it, and the server's SSE leaves it out too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use serving::{Server, Site, bin};

const REPORT: &str = "name: report\ndescription: Writes the report.\nfinal: true\nparameters:\n  type: object\n  properties:\n    fail: {type: boolean, default: false}\nentry:\n  type: command\n  command: python3\n  args: [-c, \"import json,sys; a=json.load(sys.stdin); sys.exit('cannot write it') if a['fail'] else print('Report: all good')\"]\n";

const PEEK: &str = "name: peek\ndescription: Looks quietly.\nhidden: true\nentry:\n  type: command\n  command: sh\n  args: [-c, \"echo peeking; echo 42\"]\n";

fn setup(dir: &Path, replies: &str) {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/report.yaml"), REPORT).unwrap();
    std::fs::write(dir.join("tools/peek.yaml"), PEEK).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        "name: writer\nmodel: scripted:replies.yaml\ntools: [peek, report]\n",
    )
    .unwrap();
    std::fs::write(dir.join("replies.yaml"), replies).unwrap();
}

fn run(dir: &Path, json: bool) -> Output {
    let mut cmd = Command::new(bin());
    cmd.current_dir(dir)
        .arg("--db")
        .arg(dir.join("t.db"))
        .args(["run", "--agent", "agent.yaml", "--tools", "tools"]);
    if json {
        cmd.arg("--json");
    }
    cmd.arg("write it").output().unwrap()
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn calls(dir: &Path) -> Vec<Value> {
    let out = Command::new(bin())
        .arg("--db")
        .arg(dir.join("t.db"))
        .args(["calls", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["calls"].as_array().unwrap().clone()
}

const PEEK_THEN_REPORT: &str = "replies:\n  - content: Let me look.\n    tool_calls: [{id: call_peek, name: peek, arguments: {}}]\n  - content: Now the report.\n    tool_calls: [{id: call_report, name: report, arguments: {}}]\n  - content: THE MODEL WAS ASKED AGAIN\n";

#[test]
fn a_final_tools_output_is_the_answer_and_no_model_turn_follows() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), PEEK_THEN_REPORT);
    let out = run(dir.path(), true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut events = events(&out);
    let run = events.pop().unwrap();
    assert_eq!(run["status"], "completed");
    assert_eq!(run["output"], "Report: all good");
    assert_eq!(run["iteration"], 2, "no third model turn: {run}");
    assert_eq!(run["usage"]["model_calls"], 2);
    // Whoever follows the text sees the answer.
    let last_text = events
        .iter()
        .rev()
        .find(|e| e["type"] == "text.delta")
        .unwrap();
    assert_eq!(last_text["text"], "Report: all good");
    assert!(!events.iter().any(|e| e.to_string().contains("ASKED AGAIN")));
}

#[test]
fn a_final_tool_that_fails_goes_back_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    setup(
        dir.path(),
        "replies:\n  - tool_calls: [{id: call_report, name: report, arguments: {fail: true}}]\n  - content: It failed, sorry.\n",
    );
    let out = run(dir.path(), true);
    let run = events(&out).pop().unwrap();
    assert_eq!(run["status"], "completed");
    assert_eq!(run["output"], "It failed, sorry.");
    assert_eq!(run["iteration"], 2);
}

#[test]
fn a_hidden_call_is_recorded_and_answered_but_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), PEEK_THEN_REPORT);
    let out = run(dir.path(), true);
    assert!(out.status.success());
    let events = events(&out);
    assert!(
        !events
            .iter()
            .any(|e| e["call_id"] == "call_peek" || e["tool"] == "peek"),
        "{events:?}"
    );
    // The visible call is shown as usual.
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool.finished" && e["call_id"] == "call_report")
    );
    // Recorded, with its result, which the model got in the conversation.
    let recorded = calls(dir.path());
    let peek = recorded.iter().find(|c| c["tool"] == "peek").unwrap();
    assert_eq!(peek["status"], "succeeded");
    assert_eq!(peek["result"], "peeking\n42");
    let conversation = events.last().unwrap()["conversation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let db = dir.path().join("t.db");
    let sqlite = stored_messages(&db, &conversation);
    assert!(sqlite.contains("peeking\\n42"), "{sqlite}");
    // The human output has no trace of it either.
    let human = run(dir.path(), false);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&human.stdout),
        String::from_utf8_lossy(&human.stderr)
    );
    assert!(!all.contains("peek"), "{all}");
    assert!(all.contains("report │ Report: all good"), "{all}");
}

/// The conversation's stored messages (what the model is sent), as one text.
fn stored_messages(db: &Path, conversation: &str) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT message FROM messages WHERE conversation_id = ?1 ORDER BY seq")
        .unwrap();
    let rows = stmt
        .query_map([conversation], |r| r.get::<_, String>(0))
        .unwrap();
    rows.map(Result::unwrap).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn the_servers_sse_leaves_a_hidden_call_out() {
    let site = Site::new();
    setup(site.path(), PEEK_THEN_REPORT);
    std::fs::rename(
        site.path().join("agent.yaml"),
        site.path().join("agents/writer.yaml"),
    )
    .unwrap();
    std::fs::rename(
        site.path().join("replies.yaml"),
        site.path().join("agents/replies.yaml"),
    )
    .unwrap();
    let server = Server::start(&site, None, &[]);
    let events = server
        .post_sse(
            "/v1/runs",
            json!({"agent": "writer", "input": "go", "stream": true}),
        )
        .await;
    let (last, run) = events.last().unwrap();
    assert_eq!(last, "run");
    assert_eq!(run["output"], "Report: all good");
    assert!(
        !events
            .iter()
            .any(|(_, e)| e["call_id"] == "call_peek" || e["tool"] == "peek"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|(n, e)| n == "tool.output" && e["call_id"] == "call_report")
    );
}
