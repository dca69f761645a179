//! Tool library costs: validating and coercing a typical 5-parameter call, and loading
//! a folder of 1,000 tool files (YAML and JSON, both parameter forms).
//!
//! Run: `cargo bench --bench tools`
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use divan::Bencher;
use divan::counter::ItemsCount;
use serde_json::{Map, Value, json};
use toolgate::tool::{Schema, ToolLibrary};

fn main() {
    divan::main();
}

fn schema() -> Schema {
    Schema::compile(&json!({"type": "object", "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 500},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "lang": {"type": "string", "enum": ["en", "fr", "de", "ja"]},
        "site": {"type": "string", "pattern": "^[a-z0-9.-]+$"},
        "safe": {"type": "boolean", "default": true}
    }, "required": ["query"], "additionalProperties": false}))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Five parameters already typed (native calls).
#[divan::bench]
fn validate_typed(bencher: Bencher) {
    let schema = schema();
    let call = args(
        json!({"query": "rust async runtime", "max_results": 5, "lang": "en", "site": "docs.rs", "safe": false}),
    );
    bencher
        .with_inputs(|| call.clone())
        .bench_values(|a| divan::black_box(schema.check(a)));
}

/// Five parameters written as text (XML calls): coercion included.
#[divan::bench]
fn validate_and_coerce_text(bencher: Bencher) {
    let schema = schema();
    let call = args(
        json!({"query": "rust async runtime", "max_results": "5", "lang": "en", "site": "docs.rs", "safe": "false"}),
    );
    bencher
        .with_inputs(|| call.clone())
        .bench_values(|a| divan::black_box(schema.check(a)));
}

/// Loading a folder of 1,000 tool files, built-ins included.
#[divan::bench(sample_count = 20)]
fn load_1000_files(bencher: Bencher) {
    let dir = std::env::temp_dir().join(format!("toolgate-bench-tools-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..1000 {
        let (name, text) = match i % 3 {
            0 => (
                format!("t{i}.yaml"),
                format!(
                    "name: tool_{i}\ndescription: Tool number {i}.\npermission: auto\ncategory: c{}\nparameters:\n  type: object\n  properties:\n    query: {{type: string, minLength: 1}}\n    limit: {{type: integer, minimum: 1, maximum: 50, default: 10}}\n    site: {{type: string, pattern: \"^[a-z0-9.-]+$\"}}\n  required: [query]\nentry: {{type: client}}\n",
                    i % 7
                ),
            ),
            1 => (
                format!("t{i}.yaml"),
                format!(
                    "name: tool_{i}\ndescription: Tool number {i}.\nparameters:\n  - {{name: url, type: string, required: true, validation: {{pattern: \"^https?://\"}}}}\n  - {{name: timeout, type: number, default: 30, validation: {{min: 1, max: 300}}}}\nentry: {{type: command, command: /bin/true}}\n"
                ),
            ),
            _ => (
                format!("t{i}.json"),
                format!(
                    "{{\"name\": \"tool_{i}\", \"description\": \"Tool {i}.\", \"parameters\": {{\"type\": \"object\", \"properties\": {{\"a\": {{\"type\": \"string\"}}, \"b\": {{\"type\": \"boolean\"}}}}}}, \"entry\": {{\"type\": \"http\", \"url\": \"https://example.com/{{a}}\"}}}}"
                ),
            ),
        };
        std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("{e}"));
    }
    bencher.counter(ItemsCount::new(1000usize)).bench(|| {
        let lib = ToolLibrary::load(&dir, &toolgate::tool::sources::standard())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(lib.errors().is_empty(), "{:?}", lib.errors().first());
        divan::black_box(lib)
    });
    let _ = std::fs::remove_dir_all(&dir);
}
