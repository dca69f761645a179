//! Conformance with the tool-parser test suites of vLLM, SGLang and SMG: their cases,
//! transcribed as data in tests/corpus/conformance/*.json (each names its source), run
//! whole and streamed at every split. Prints the pass count; fails below the floor.
//!
//! Run: `cargo test -p toolgate-parse --test all -- conformance:: --nocapture`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};
use toolgate_parse::{ParseOptions, ParsedTurn};

/// Cases that must pass; raise it when more pass.
const FLOOR: usize = 359;

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    /// `project file::test` the case was transcribed from.
    source: String,
    /// Where toolgate deliberately answers otherwise than the peer (toolgate's README,
    /// "Where the peers disagree"): the choice, and `expect` holds toolgate's answer.
    #[serde(default)]
    #[allow(dead_code)]
    choice: Option<String>,
    #[serde(default)]
    dialect: Option<String>,
    /// Tool name -> parameters schema, as the peer's test declared them.
    #[serde(default)]
    tools: BTreeMap<String, Value>,
    input: String,
    expect: Expect,
}

#[derive(Debug, Deserialize)]
struct Expect {
    /// Compared with surrounding whitespace trimmed (peers differ on it).
    #[serde(default)]
    text: Option<String>,
    /// When given, the reasoning blocks' texts in order.
    #[serde(default)]
    reasoning: Option<Vec<String>>,
    #[serde(default)]
    calls: Vec<Call>,
    /// When given, the problem kinds in order; `[any]` means at least one problem.
    #[serde(default)]
    problems: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct Call {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Map<String, Value>,
}

fn read_cases(sub: &str) -> Vec<(String, Case)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(sub);
    crate::common::read_files::<Case>(&dir)
        .into_iter()
        .flat_map(|(file, cases)| cases.into_iter().map(move |c| (file.clone(), c)))
        .collect()
}

fn options(case: &Case) -> ParseOptions {
    let schemas: HashMap<String, Value> = case
        .tools
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let dialect = case.dialect.as_deref().unwrap_or("auto").parse().unwrap();
    ParseOptions::default()
        .with_dialect(dialect)
        .with_schemas(Arc::new(schemas))
}

fn check(case: &Case, got: &ParsedTurn) -> Result<(), String> {
    let e = &case.expect;
    let mut errs = Vec::new();
    if let Some(text) = &e.text
        && got.text.trim() != text.trim()
    {
        errs.push(format!("text: expected {text:?}, got {:?}", got.text));
    }
    if let Some(reasoning) = &e.reasoning {
        let have: Vec<&str> = got.reasoning.iter().map(|r| r.text.as_str()).collect();
        if &have != reasoning {
            errs.push(format!("reasoning: expected {reasoning:?}, got {have:?}"));
        }
    }
    if got.calls.len() != e.calls.len() {
        errs.push(format!(
            "calls: expected {}, got {}",
            e.calls.len(),
            got.calls.len()
        ));
    }
    for (i, (want, have)) in e.calls.iter().zip(&got.calls).enumerate() {
        if let Some(id) = &want.id
            && id != &have.id
        {
            errs.push(format!("call {i}: expected id {id}, got {}", have.id));
        }
        if want.name != have.name || want.arguments != have.arguments {
            errs.push(format!(
                "call {i}: expected {} {}, got {} {}",
                want.name,
                Value::Object(want.arguments.clone()),
                have.name,
                Value::Object(have.arguments.clone())
            ));
        }
    }
    if let Some(kinds) = &e.problems {
        let got_kinds: Vec<String> = got
            .problems
            .iter()
            .map(|p| {
                serde_json::to_value(p.kind)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let ok = if kinds.len() == 1 && kinds[0] == "any" {
            !got_kinds.is_empty()
        } else {
            &got_kinds == kinds
        };
        if !ok {
            errs.push(format!(
                "problems: expected {kinds:?}, got {got_kinds:?} ({:?})",
                got.problems.iter().map(|p| &p.message).collect::<Vec<_>>()
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

/// The first split at which the streamed result differs from the whole one.
fn stream_mismatch(input: &str, opts: &ParseOptions, whole: &ParsedTurn) -> Option<usize> {
    let bytes = input.as_bytes();
    (0..=bytes.len())
        .find(|&cut| &common::split_at(bytes, &[cut], opts) != whole)
        .or_else(|| {
            (bytes.len() < 4096 && &common::chunked(bytes, 1, opts) != whole).then_some(usize::MAX)
        })
}

#[test]
fn peers_cases_pass_whole_and_streamed() {
    let passed = run("conformance");
    assert!(passed >= FLOOR, "{passed} pass, below the floor of {FLOOR}");
}

/// The dialects' own corpora (tests/corpus/dialects, built from the models' chat
/// templates and documentation): every case must pass.
#[test]
fn dialect_cases_pass_whole_and_streamed() {
    let total = read_cases("dialects").len();
    assert!(total >= 35, "only {total} dialect cases");
    let passed = run("dialects");
    assert_eq!(passed, total, "{} dialect case(s) failed", total - passed);
}

/// Runs the cases of one folder; prints failures and counts; returns how many passed.
fn run(sub: &str) -> usize {
    let cases = read_cases(sub);
    let mut names: Vec<&str> = cases.iter().map(|(_, c)| c.name.as_str()).collect();
    names.sort_unstable();
    let n = names.len();
    names.dedup();
    assert_eq!(n, names.len(), "case names must be unique");
    let mut failures = Vec::new();
    let mut per_file: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (file, case) in &cases {
        assert!(!case.source.trim().is_empty(), "{}: no source", case.name);
        let opts = options(case);
        let got = common::whole(&case.input, &opts);
        let mut result = check(case, &got);
        if result.is_ok()
            && let Some(cut) = stream_mismatch(&case.input, &opts, &got)
        {
            let streamed = if cut == usize::MAX {
                common::chunked(case.input.as_bytes(), 1, &opts)
            } else {
                common::split_at(case.input.as_bytes(), &[cut], &opts)
            };
            result = Err(format!(
                "streamed differs from whole (split at {cut}):\n  whole  {got:?}\n  stream {streamed:?}"
            ));
        }
        let entry = per_file.entry(file).or_default();
        entry.1 += 1;
        match result {
            Ok(()) => entry.0 += 1,
            Err(e) => failures.push(format!("{} ({file}; {}): {e}", case.name, case.source)),
        }
    }
    let passed = cases.len() - failures.len();
    for f in &failures {
        println!("FAIL {f}");
    }
    for (file, (p, t)) in &per_file {
        println!("{file}: {p} of {t}");
    }
    println!(
        "{sub}: {passed} of {} cases pass whole and streamed",
        cases.len()
    );
    passed
}
