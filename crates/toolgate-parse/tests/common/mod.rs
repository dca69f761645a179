//! The case corpus shared by the parser tests: JSON files in tests/corpus/, the corpus
//! tools' parameter schemas in tests/corpus/schemas.json, and helpers to parse whole or
//! in chunks. The root package's CLI tests read the same cases through this module:
//! each test binary that includes it names the corpus folder as `crate::CORPUS`.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

pub mod planted;
pub mod rng;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use toolgate_parse::{InputParser, ParseOptions, ParsedTurn, Schemas, collect};

#[derive(Debug, Deserialize)]
pub struct Case {
    pub name: String,
    pub input: String,
    #[serde(default)]
    pub dialect: Option<String>,
    #[serde(default)]
    pub strict: bool,
    /// The prompt opened a `<think>` block (`ParseOptions::reasoning_opened`).
    #[serde(default)]
    pub reasoning_opened: bool,
    /// `${NAME}` in input and expectations becomes `text` repeated `times` times.
    #[serde(default)]
    pub vars: BTreeMap<String, Repeat>,
    pub expect: Expect,
    #[serde(skip)]
    pub file: String,
}

#[derive(Debug, Deserialize)]
pub struct Repeat {
    pub text: String,
    pub times: usize,
}

#[derive(Debug, Deserialize)]
pub struct Expect {
    pub text: String,
    /// The reasoning blocks' texts, in order.
    #[serde(default)]
    pub reasoning: Vec<String>,
    #[serde(default)]
    pub calls: Vec<ExpectCall>,
    /// Problem kinds, in order.
    #[serde(default)]
    pub problems: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct ExpectCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: serde_json::Map<String, Value>,
}

/// The corpus folder, from the package under test (`crate::CORPUS` is relative to it).
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(crate::CORPUS)
}

/// Every case of every corpus file, with variables expanded (read once).
pub fn cases() -> &'static [Case] {
    static CASES: std::sync::OnceLock<Vec<Case>> = std::sync::OnceLock::new();
    CASES.get_or_init(read_cases)
}

fn read_cases() -> Vec<Case> {
    let mut all = Vec::new();
    for (file, mut cases) in read_files::<Case>(&corpus_dir()) {
        for c in &mut cases {
            c.file.clone_from(&file);
            expand(c);
        }
        all.extend(cases);
    }
    all
}

/// One corpus file: what it holds, and its cases.
#[derive(Deserialize)]
struct CorpusFile<T> {
    #[allow(dead_code, reason = "read by people")]
    about: String,
    cases: Vec<T>,
}

/// The cases of every `*.json` corpus file in `dir` (not below it), by file name, in
/// name order.
pub fn read_files<T: serde::de::DeserializeOwned>(dir: &Path) -> Vec<(String, Vec<T>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| p.file_name().is_some_and(|n| n != "schemas.json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let doc: CorpusFile<T> =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            (name, doc.cases)
        })
        .collect()
}

fn expand(c: &mut Case) {
    for (name, rep) in &c.vars {
        let token = format!("${{{name}}}");
        let big = rep.text.repeat(rep.times);
        c.input = c.input.replace(&token, &big);
        c.expect.text = c.expect.text.replace(&token, &big);
        for r in &mut c.expect.reasoning {
            *r = r.replace(&token, &big);
        }
        for call in &mut c.expect.calls {
            for v in call.arguments.values_mut() {
                expand_value(v, &token, &big);
            }
        }
    }
}

fn expand_value(v: &mut Value, token: &str, big: &str) {
    match v {
        Value::String(s) => *s = s.replace(token, big),
        Value::Array(a) => a.iter_mut().for_each(|v| expand_value(v, token, big)),
        Value::Object(o) => o.values_mut().for_each(|v| expand_value(v, token, big)),
        _ => {}
    }
}

/// The corpus tools' parameter schemas (tests/corpus/schemas.json: tool name -> JSON
/// Schema, as toolgate loads them from its tool files), read once per test binary.
pub fn schemas() -> Arc<Schemas> {
    static SCHEMAS: std::sync::OnceLock<Arc<Schemas>> = std::sync::OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            let text = std::fs::read_to_string(corpus_dir().join("schemas.json")).unwrap();
            Arc::new(serde_json::from_str(&text).unwrap())
        })
        .clone()
}

/// The options a case asks for: its dialect, strict or not, the corpus schemas.
pub fn options(case: &Case) -> ParseOptions {
    let dialect = case.dialect.as_deref().unwrap_or("auto").parse().unwrap();
    ParseOptions::default()
        .with_dialect(dialect)
        .with_strict(case.strict)
        .with_reasoning_opened(case.reasoning_opened)
        .with_schemas(schemas())
}

pub fn whole(input: &str, opts: &ParseOptions) -> ParsedTurn {
    InputParser::parse(input, opts)
}

/// Parses `input` fed as bytes cut at `cuts` (sorted byte offsets).
pub fn split_at(input: &[u8], cuts: &[usize], opts: &ParseOptions) -> ParsedTurn {
    let mut p = InputParser::new(opts.clone());
    let mut turn = ParsedTurn::default();
    let mut from = 0;
    for &cut in cuts {
        let cut = cut.clamp(from, input.len());
        collect(&mut turn, p.feed_bytes(&input[from..cut]));
        from = cut;
    }
    collect(&mut turn, p.feed_bytes(&input[from..]));
    collect(&mut turn, p.finish());
    turn
}

/// Parses `input` in chunks of `size` bytes.
pub fn chunked(input: &[u8], size: usize, opts: &ParseOptions) -> ParsedTurn {
    let cuts: Vec<usize> = (1..=input.len() / size).map(|i| i * size).collect();
    split_at(input, &cuts, opts)
}
