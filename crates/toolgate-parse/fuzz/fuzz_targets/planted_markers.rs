//! Markers planted inside string values are content: the fuzzer's bytes seed the
//! generator of tests/common/planted.rs (a dialect, one or two calls, other dialects'
//! markers in the values); the parse gives back exactly the planted values and no
//! other call, named and under `auto`, whole and streamed at a fuzzed cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_parse::{Dialect, InputParser, ParseOptions, ParsedTurn, collect, parse_text};

#[path = "../../tests/common/planted.rs"]
mod planted;

fn streamed(input: &str, cut: usize, opts: &ParseOptions) -> ParsedTurn {
    let bytes = input.as_bytes();
    let cut = cut.min(bytes.len());
    let mut p = InputParser::new(opts.clone());
    let mut turn = ParsedTurn::default();
    collect(&mut turn, p.feed_bytes(&bytes[..cut]));
    collect(&mut turn, p.feed_bytes(&bytes[cut..]));
    collect(&mut turn, p.finish());
    turn
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 10 {
        return;
    }
    let seed = u64::from_le_bytes(input[..8].try_into().unwrap_or_default());
    let cut = u16::from_le_bytes([input[8], input[9]]) as usize;
    let p = planted::planted(seed);
    for dialect in [p.dialect, Dialect::Auto] {
        let opts = ParseOptions::default().with_dialect(dialect);
        let whole = parse_text(&p.input, &opts);
        if let Err(e) = planted::check(&p, &whole) {
            panic!("seed {seed} ({dialect:?}): {e}\n  input {:?}", p.input);
        }
        assert_eq!(
            streamed(&p.input, cut, &opts),
            whole,
            "seed {seed} cut {cut}"
        );
    }
});
