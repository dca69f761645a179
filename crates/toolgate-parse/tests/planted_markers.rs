//! Markers planted inside string values never open, close or end anything: for each
//! dialect, generated calls whose values hold other dialects' openers and closers (and
//! the dialect's own where its rules make them content) parse back to exactly the
//! planted values, with no extra call, named or under `auto`, whole and streamed. The
//! generator is tests/common/planted.rs (the fuzz target `planted_markers` drives it
//! with the fuzzer's seeds); here a bounded number of seeds, more with `PLANTED_CASES`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::planted::{WRITERS, check, planted};
use crate::common::split_at;
use toolgate_parse::{Dialect, ParseOptions, parse_text};

fn case_count() -> u64 {
    std::env::var("PLANTED_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000)
}

#[test]
fn planted_markers_are_content_in_every_dialect() {
    let mut failures = Vec::new();
    for seed in 0..case_count() {
        let p = planted(seed);
        for dialect in [p.dialect, Dialect::Auto] {
            let opts = ParseOptions::default().with_dialect(dialect);
            let whole = parse_text(&p.input, &opts);
            if let Err(e) = check(&p, &whole) {
                failures.push(format!(
                    "seed {seed} ({dialect:?}): {e}\n  input {:?}",
                    p.input
                ));
                continue;
            }
            let cut = (seed as usize * 7919) % (p.input.len() + 1);
            let streamed = split_at(p.input.as_bytes(), &[cut], &opts);
            if streamed != whole {
                failures.push(format!(
                    "seed {seed} ({dialect:?}): split at {cut} differs from whole\n  input {:?}",
                    p.input
                ));
            }
        }
        if failures.len() >= 10 {
            break;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_writer_is_generated() {
    let mut seen: Vec<&str> = (0..500).map(|s| planted(s).writer).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), WRITERS.len());
}
