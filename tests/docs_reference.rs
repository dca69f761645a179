//! The book's generated reference (issue 39): the pages and JSON Schemas committed
//! under `docs/src/reference/` and `schemas/` are what `toolgate docs gen` makes from
//! the code now, and every example agent, tool, MCP and scripted-reply file in the
//! repository validates against the published schemas.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate_test_support::toolgate;

/// The repository's root (this package's folder).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn committed_reference_pages_and_schemas_are_what_the_code_generates() {
    let out = toolgate(root())
        .args(["docs", "gen", "--check", "--out", "."])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n(regenerate with `cargo run -- docs gen` and commit the result)",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_stale_page_is_named_by_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let generate = |extra: &[&str]| {
        let mut args = vec!["docs", "gen", "--out", "."];
        args.extend(extra);
        toolgate(dir.path()).args(&args).output().unwrap()
    };
    assert!(generate(&[]).status.success());
    assert!(
        generate(&["--check"]).status.success(),
        "a fresh copy checks clean"
    );
    let page = dir.path().join("docs/src/reference/exit-codes.md");
    std::fs::write(&page, "# Exit codes\n\nout of date\n").unwrap();
    std::fs::remove_file(dir.path().join("schemas/tool.schema.json")).unwrap();
    let out = generate(&["--check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("docs/src/reference/exit-codes.md"),
        "{stderr}"
    );
    assert!(stderr.contains("schemas/tool.schema.json"), "{stderr}");
    assert!(
        !stderr.contains("cli.md"),
        "only the stale files are named: {stderr}"
    );
}

/// The kinds of files that have a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Agent,
    Tool,
    Mcp,
    Replies,
}

impl Kind {
    fn schema(self) -> &'static str {
        match self {
            Kind::Agent => "agent.schema.json",
            Kind::Tool => "tool.schema.json",
            Kind::Mcp => "mcp-server.schema.json",
            Kind::Replies => "scripted-replies.schema.json",
        }
    }
}

/// Reads a YAML or JSON file as the loaders do.
fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What a file in the repository is, by where it lies and what its top level holds;
/// `None` for the files no schema covers (OpenAPI documents, Dify plugins).
fn kind_of(path: &Path, value: &Value) -> Option<Kind> {
    let name = path.file_name()?.to_str()?;
    let folder = path.parent()?.file_name()?.to_str()?;
    let top = value.as_object()?;
    if name.ends_with(".replies.yaml") || folder == "replies" {
        return Some(Kind::Replies);
    }
    if name == "mcp.json" || top.contains_key("mcp_server") || top.contains_key("mcpServers") {
        return Some(Kind::Mcp);
    }
    let foreign = [
        "openapi", "swagger", "identity", "provider", "version", "type",
    ];
    if foreign.iter().any(|k| top.contains_key(*k)) && !top.contains_key("entry") {
        return None;
    }
    let under_agents = path.components().any(|c| c.as_os_str() == "agents");
    if under_agents || name == "agent.yaml" {
        return Some(Kind::Agent);
    }
    (folder == "tools" && top.contains_key("name")).then_some(Kind::Tool)
}

/// Every YAML and JSON file under `dir`, recursively (`node_modules` left out).
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("node_modules") {
            files_under(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(path);
        }
    }
}

/// The published schema for `kind`, compiled.
fn validator(kind: Kind) -> jsonschema::Validator {
    let schema = read(&root().join("schemas").join(kind.schema()));
    jsonschema::validator_for(&schema).unwrap()
}

/// `value`'s faults against `v`, one line each.
fn faults(v: &jsonschema::Validator, value: &Value) -> Vec<String> {
    v.iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn every_example_file_validates_against_its_published_schema() {
    let mut files = Vec::new();
    for dir in ["examples", "tools", "tests/fixtures", "tests/corpus/tools"] {
        files_under(&root().join(dir), &mut files);
    }
    files.sort();
    let kinds = [Kind::Agent, Kind::Tool, Kind::Mcp, Kind::Replies];
    let validators: Vec<_> = kinds.iter().map(|k| (*k, validator(*k))).collect();
    let mut counts = [0usize; 4];
    let mut wrong = Vec::new();
    for path in &files {
        let value = read(path);
        let Some(kind) = kind_of(path, &value) else {
            continue;
        };
        let i = kinds.iter().position(|k| *k == kind).unwrap();
        counts[i] += 1;
        for f in faults(&validators[i].1, &value) {
            wrong.push(format!("{} ({kind:?}): {f}", path.display()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The walk found each kind (a moved folder must not empty the check).
    assert!(
        counts[0] >= 10 && counts[1] >= 8,
        "agents, tools: {counts:?}"
    );
    assert!(
        counts[2] >= 2 && counts[3] >= 10,
        "mcp, replies: {counts:?}"
    );
}

#[test]
fn files_with_mistakes_fail_their_schema() {
    let cases: [(Kind, &str); 7] = [
        (Kind::Agent, "name: a\nmode: nativ\n"),
        (Kind::Agent, "name: a\nknowledge: docs\n"),
        (Kind::Agent, "tools: [calculator]\n"),
        (
            Kind::Agent,
            "name: a\npermissions: {calculator: sometimes}\n",
        ),
        (Kind::Tool, "name: t\nentry: {type: command}\n"),
        (Kind::Mcp, "mcp_server: time\n"),
        (
            Kind::Replies,
            "replies:\n  - tool_calls: [{arguments: {}}]\n",
        ),
    ];
    for (kind, text) in cases {
        let value: Value = serde_saphyr::from_str(text).unwrap();
        assert!(
            !faults(&validator(kind), &value).is_empty(),
            "{kind:?} file accepted by its schema:\n{text}"
        );
    }
}
