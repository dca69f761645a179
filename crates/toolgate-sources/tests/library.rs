//! The standard sources together with the library: a program's own source asked before
//! them, and a tools folder edited while it is in use.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::json;
use toolgate_sources::standard;
use toolgate_tool::{
    Claim, Entry, Found, Permission, Schema, ToolDef, ToolLibrary, ToolSource, ToolSpec, load_dir,
};

/// A source of its own: `note: NAME` files bring one client tool each.
struct Notes;

impl ToolSource for Notes {
    fn name(&self) -> &'static str {
        "notes"
    }

    fn claims(&self, _path: &Path, text: &str) -> Claim {
        if text.starts_with("note:") {
            Claim::Tools
        } else {
            Claim::Not
        }
    }

    fn load(&self, path: &Path, text: &str) -> Found {
        let name = text.trim_start_matches("note:").trim().to_string();
        let parameters = json!({"type": "object", "properties": {}});
        let spec = ToolSpec {
            name,
            description: "a note".into(),
            parameters: parameters.clone(),
            permission: Permission::Auto,
            entry: Entry::Client,
            category: None,
            timeout: None,
            tags: Vec::new(),
            version: None,
            read_only: true,
            output: None,
            credentials: Default::default(),
            is_final: false,
            hidden: false,
            sandbox: None,
            display: Default::default(),
        };
        let schema = Schema::compile(&parameters).unwrap();
        Found {
            tools: vec![ToolDef::new(spec, schema, path, "notes", None)],
            errors: Vec::new(),
        }
    }
}

#[test]
fn a_source_registered_beside_the_others_takes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), "note: remember\n").unwrap();
    std::fs::write(
        dir.path().join("b.yaml"),
        "name: plain\nentry: {type: client}\n",
    )
    .unwrap();
    let standard = standard();
    let sources = standard.with_first(Notes);
    let loaded = load_dir(dir.path(), &sources).unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let found: Vec<(&str, &str)> = loaded
        .tools
        .iter()
        .map(|t| (t.spec.name.as_str(), t.source))
        .collect();
    assert_eq!(found, [("remember", "notes"), ("plain", "file")]);
    // Without it, the note is a broken tool file.
    let plain = load_dir(dir.path(), &standard).unwrap();
    assert_eq!(plain.tools.len(), 1);
    assert!(plain.errors[0].path.ends_with("a.yaml"));
}

const GOOD: &str = "name: t\ndescription: first\nentry: {type: client}\n";

#[test]
fn a_broken_edit_keeps_the_last_good_version_and_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.yaml");
    std::fs::write(&file, GOOD).unwrap();
    let mut first = ToolLibrary::load(dir.path(), &standard()).unwrap();
    assert!(first.keep_last_good(&ToolLibrary::default()).is_empty());
    std::fs::write(&file, "name: t\ndescription: [unclosed\n").unwrap();
    let mut second = ToolLibrary::load(dir.path(), &standard()).unwrap();
    let lines = second.keep_last_good(&first);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("t.yaml") && lines[0].ends_with("(keeping the last good version)"));
    assert_eq!(second.get("t").unwrap().spec.description, "first");
    // Still broken, unchanged: nothing more to say, and still the old version.
    let mut third = ToolLibrary::load(dir.path(), &standard()).unwrap();
    assert!(third.keep_last_good(&second).is_empty());
    assert!(third.get("t").is_some());
    // Removed: gone.
    std::fs::remove_file(&file).unwrap();
    let mut fourth = ToolLibrary::load(dir.path(), &standard()).unwrap();
    assert!(fourth.keep_last_good(&third).is_empty());
    assert!(fourth.get("t").is_none());
}

#[test]
fn a_new_broken_file_is_skipped_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.yaml"), "name: [\n").unwrap();
    let mut lib = ToolLibrary::load(dir.path(), &standard()).unwrap();
    let lines = lib.keep_last_good(&ToolLibrary::default());
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("bad.yaml") && lines[0].ends_with("(skipped)"));
}
