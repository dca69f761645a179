//! An agent with `knowledge: [docs]` (a scripted model) retrieves passages through its
//! `search_knowledge` tool and cites them: the call's recorded result carries the
//! passages with their source, section and position, and only the run's tenant's bases
//! are searched.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::databases::TestDb;
use crate::knowledge_corpus::write_corpus;

const AGENT: &str =
    "name: librarian\nmodel: scripted:replies.yaml\nknowledge: [docs]\nworkspace: .\n";

/// The same through a tool file of the user's naming.
const FILE_AGENT: &str =
    "name: filed\nmodel: scripted:filed.yaml\ntools: [manual_search]\nworkspace: .\n";

const TOOL_FILE: &str = "name: manual_search\ndescription: Searches the router manual.\nentry: {type: knowledge, bases: [docs], top_k: 2, threshold: 0.2, mode: fulltext}\n";

const FILED_REPLIES: &str = r#"replies:
  - content: Looking.
    tool_calls: [{id: call_f, name: manual_search, arguments: {query: "default admin password label"}}]
  - content: "It is on the label under the device [corpus/manual.pdf, page 1]."
"#;

const REPLIES: &str = r#"replies:
  - content: Let me look that up.
    tool_calls: [{id: call_kb, name: search_knowledge, arguments: {query: "How long do I hold the reset button of the router?", top_k: 3}}]
  - content: "Hold the reset button for ten seconds [corpus/manual.pdf, page 2]."
"#;

fn toolgate(db: &TestDb, dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(dir)
        .arg("--db")
        .arg(db.arg())
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "{:?}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The recorded result of the run's `search_knowledge` call, as JSON.
fn retrieved(db: &TestDb, dir: &Path) -> Value {
    let calls: Value =
        serde_json::from_slice(&ok(toolgate(db, dir, &["calls", "--json"])).stdout).unwrap();
    let call = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "search_knowledge")
        .unwrap_or_else(|| panic!("no search_knowledge call in {calls}"))
        .clone();
    assert_eq!(call["status"], "succeeded", "{call}");
    let result = &call["result"];
    let text = result
        .as_str()
        .map_or_else(|| result.to_string(), str::to_string);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn an_agent_retrieves_passages_with_their_place_and_cites_them() {
    for db in TestDb::both() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        write_corpus(p);
        std::fs::write(p.join("agent.yaml"), AGENT).unwrap();
        std::fs::write(p.join("replies.yaml"), REPLIES).unwrap();
        ok(toolgate(
            &db,
            p,
            &["kb", "create", "docs", "--chunk", "120", "--overlap", "30"],
        ));
        ok(toolgate(&db, p, &["kb", "add", "docs", "corpus"]));

        let run = ok(toolgate(
            &db,
            p,
            &["run", "--agent", "agent.yaml", "--json", "Router reset?"],
        ));
        let last: Value =
            serde_json::from_str(String::from_utf8_lossy(&run.stdout).lines().last().unwrap())
                .unwrap();
        assert_eq!(last["status"], "completed", "{}: {last}", db.name());

        let found = retrieved(&db, p);
        let passages = found["passages"].as_array().unwrap();
        assert!(!passages.is_empty() && passages.len() <= 3, "{found}");
        let top = &passages[0];
        assert_eq!(top["base"], "docs");
        assert_eq!(top["source"], "corpus/manual.pdf", "{}: {found}", db.name());
        assert_eq!(top["section"], "page 2");
        assert!(
            top["text"].as_str().unwrap().contains("ten seconds"),
            "{top}"
        );
        assert!(top["end"].as_i64().unwrap() > top["start"].as_i64().unwrap());
        assert!(top["chunk"].is_i64());

        // The same agent in another tenant finds no base of that name: an error result
        // for the model, not another tenant's passages.
        let other = toolgate(
            &db,
            p,
            &[
                "--tenant",
                "globex",
                "run",
                "--agent",
                "agent.yaml",
                "--json",
                "Router reset?",
            ],
        );
        let calls: Value = serde_json::from_slice(
            &ok(toolgate(&db, p, &["--tenant", "globex", "calls", "--json"])).stdout,
        )
        .unwrap();
        let call = calls["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["tool"] == "search_knowledge")
            .cloned();
        let call = call.unwrap_or_else(|| {
            panic!(
                "{}: {:?} {calls}",
                db.name(),
                String::from_utf8_lossy(&other.stderr)
            )
        });
        let result = call["result"].to_string();
        assert!(
            result.contains("there is no knowledge base 'docs'"),
            "{}: {call}",
            db.name()
        );
        assert!(!result.contains("ten seconds"), "{call}");
    }
}

#[test]
fn a_tool_file_of_type_knowledge_is_a_retrieval_tool() {
    let db = TestDb::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write_corpus(p);
    std::fs::create_dir(p.join("tools")).unwrap();
    std::fs::write(p.join("tools/manual_search.yaml"), TOOL_FILE).unwrap();
    std::fs::write(p.join("agent.yaml"), FILE_AGENT).unwrap();
    std::fs::write(p.join("filed.yaml"), FILED_REPLIES).unwrap();
    ok(toolgate(
        &db,
        p,
        &["kb", "create", "docs", "--chunk", "120", "--overlap", "30"],
    ));
    ok(toolgate(&db, p, &["kb", "add", "docs", "corpus"]));
    ok(toolgate(
        &db,
        p,
        &["run", "--agent", "agent.yaml", "--json", "Password?"],
    ));
    let calls: Value =
        serde_json::from_slice(&ok(toolgate(&db, p, &["calls", "--json"])).stdout).unwrap();
    let call = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "manual_search")
        .cloned()
        .unwrap();
    assert_eq!(call["status"], "succeeded", "{call}");
    let found: Value = serde_json::from_str(call["result"].as_str().unwrap()).unwrap();
    let passages = found["passages"].as_array().unwrap();
    assert!(passages.len() <= 2, "{found}");
    assert_eq!(passages[0]["source"], "corpus/manual.pdf", "{found}");
    assert!(
        passages[0]["text"]
            .as_str()
            .unwrap()
            .contains("label under the device"),
        "{found}"
    );
    assert!(
        passages.iter().all(|p| p["score"].as_f64().unwrap() >= 0.2),
        "{found}"
    );
}
