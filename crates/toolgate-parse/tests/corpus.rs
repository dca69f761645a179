//! Every case of the corpus (tests/corpus/*.json): the whole-message parse gives the
//! expected text, calls and problems, and the streaming parser gives exactly the same
//! result for fixed chunk sizes and for every split into two chunks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Case, cases, chunked, options, split_at, whole};
use toolgate_parse::ParsedTurn;

fn check_expected(case: &Case, got: &ParsedTurn) -> Result<(), String> {
    let e = &case.expect;
    let mut errs = Vec::new();
    if got.text != e.text {
        errs.push(format!(
            "text: expected {:?}\n      got      {:?}",
            short(&e.text),
            short(&got.text)
        ));
    }
    let reasoning: Vec<&str> = got.reasoning.iter().map(|r| r.text.as_str()).collect();
    if reasoning != e.reasoning {
        errs.push(format!(
            "reasoning: expected {:?}\n      got      {:?}",
            e.reasoning, reasoning
        ));
    }
    // A text input's reasoning spans point at the reasoning itself.
    if !case.input.starts_with("data:") && !case.input.trim_start().starts_with('{') {
        for r in &got.reasoning {
            if case.input.get(r.start..r.end) != Some(r.text.as_str()) {
                errs.push(format!(
                    "reasoning span {}..{} is not its text",
                    r.start, r.end
                ));
            }
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
        if want.name != have.name || want.arguments != have.arguments {
            errs.push(format!(
                "call {i}: expected {} {}\n        got      {} {}",
                want.name,
                short(&serde_json::Value::Object(want.arguments.clone()).to_string()),
                have.name,
                short(&serde_json::Value::Object(have.arguments.clone()).to_string())
            ));
        }
        if let Some(id) = &want.id
            && id != &have.id
        {
            errs.push(format!("call {i}: expected id {id}, got {}", have.id));
        }
    }
    let kinds: Vec<String> = got
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
    if kinds != e.problems {
        errs.push(format!(
            "problems: expected {:?}, got {:?} ({:?})",
            e.problems,
            kinds,
            got.problems.iter().map(|p| &p.message).collect::<Vec<_>>()
        ));
    }
    let mut ids: Vec<&str> = got.calls.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != got.calls.len() || ids.iter().any(|i| i.is_empty()) {
        errs.push("call ids are not unique and non-empty".into());
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n  "))
    }
}

fn short(s: &str) -> String {
    if s.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}… ({} bytes)", &s[..cut], s.len())
    } else {
        s.to_string()
    }
}

#[test]
fn corpus_has_enough_cases() {
    let cases = cases();
    assert!(cases.len() >= 80, "only {} cases", cases.len());
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "case names must be unique");
}

#[test]
fn whole_message_parse_matches_expectations() {
    let mut failures = Vec::new();
    for case in cases() {
        let got = whole(&case.input, &options(case));
        if let Err(e) = check_expected(case, &got) {
            failures.push(format!("{} ({}):\n  {e}", case.name, case.file));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn fixed_chunk_sizes_equal_whole() {
    let mut failures = Vec::new();
    for case in cases() {
        let opts = options(case);
        let expected = whole(&case.input, &opts);
        let sizes: &[usize] = if case.input.len() > 100_000 {
            &[4096, 65_536]
        } else {
            &[1, 2, 3, 5, 16, 4096]
        };
        for &size in sizes {
            let got = chunked(case.input.as_bytes(), size, &opts);
            if got != expected {
                failures.push(format!(
                    "{}: chunks of {size} differ:\n  whole  {:?}\n  stream {:?}",
                    case.name,
                    short(&format!("{expected:?}")),
                    short(&format!("{got:?}"))
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_two_chunk_split_equals_whole() {
    let mut failures = Vec::new();
    for case in cases().iter().filter(|c| c.input.len() <= 4096) {
        let opts = options(case);
        let expected = whole(&case.input, &opts);
        let bytes = case.input.as_bytes();
        for cut in 0..=bytes.len() {
            let got = split_at(bytes, &[cut], &opts);
            if got != expected {
                failures.push(format!(
                    "{}: split at byte {cut} differs:\n  whole  {:?}\n  stream {:?}",
                    case.name,
                    short(&format!("{expected:?}")),
                    short(&format!("{got:?}"))
                ));
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A problem message names what it is about: never an empty tag or name (`" was never
/// closed"`, `'' does not name a tool`).
#[test]
fn problem_messages_never_name_an_empty_tag() {
    let mut failures = Vec::new();
    for case in cases() {
        for p in whole(&case.input, &options(case)).problems {
            let m = &p.message;
            if m.starts_with(' ') || m.contains("''") || m.contains("<>") || m.is_empty() {
                failures.push(format!("{}: {m:?}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
