//! Arbitrary bytes, arbitrary splits: the parser never panics, and the streamed
//! result equals the whole-message result. The first byte picks the dialect and strict
//! mode, the next eight seed the cut points; the rest is the model output.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_parse::{Dialect, InputParser, ParseOptions, ParsedTurn, collect};

const DIALECTS: [Dialect; 18] = [
    Dialect::Auto,
    Dialect::Xml,
    Dialect::Hermes,
    Dialect::Qwen3Coder,
    Dialect::Invoke,
    Dialect::OpenAi,
    Dialect::Glm,
    Dialect::KimiK2,
    Dialect::KimiK3,
    Dialect::DeepSeek,
    Dialect::Harmony,
    Dialect::Mistral,
    Dialect::Gemma4,
    Dialect::Granite,
    Dialect::Hunyuan,
    Dialect::Lfm2,
    Dialect::Llama3,
    Dialect::Pythonic,
];

fn parse(data: &[u8], cuts: &[usize], opts: &ParseOptions) -> ParsedTurn {
    let mut p = InputParser::new(opts.clone());
    let mut turn = ParsedTurn::default();
    let mut from = 0;
    for &cut in cuts {
        let cut = cut.clamp(from, data.len());
        collect(&mut turn, p.feed_bytes(&data[from..cut]));
        from = cut;
    }
    collect(&mut turn, p.feed_bytes(&data[from..]));
    collect(&mut turn, p.finish());
    turn
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    if rest.len() < 8 {
        return;
    }
    let (seed, data) = rest.split_at(8);
    let mut seed = u64::from_le_bytes(seed.try_into().unwrap_or_default()) | 1;
    let opts = ParseOptions::default()
        .with_dialect(DIALECTS[mode as usize % DIALECTS.len()])
        .with_strict(mode & 0x80 != 0);
    let whole = parse(data, &[], &opts);
    let mut cuts: Vec<usize> = (0..(mode as usize % 7))
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed as usize) % (data.len() + 1)
        })
        .collect();
    cuts.sort_unstable();
    let streamed = parse(data, &cuts, &opts);
    assert_eq!(whole, streamed, "cuts {cuts:?}");
    // Every byte-at-a-time feed too, for short inputs.
    if data.len() <= 256 {
        let all: Vec<usize> = (1..data.len()).collect();
        assert_eq!(whole, parse(data, &all, &opts));
    }
});
