//! Property tests of the streaming parser: for any split of any input, streamed equals
//! whole. Inputs are the corpus cases and outputs generated from fragments of every
//! dialect (tags, CDATA, fences, think blocks, JSON, broken pieces), so that the
//! parser meets combinations nobody wrote down. The generator is a seeded xorshift (no
//! property-testing crate, so the parser's tests build light): every run tries the same
//! cases, `STREAM_CASES=N` runs more, and a failure names its seed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use toolgate_parse::{Dialect, InputParser, ParseOptions, StreamEvent};

use common::rng::Rng;
use common::{cases, options, split_at, whole};

/// Pieces that, glued at random, make outputs full of near-misses.
const FRAGMENTS: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<name>",
    "</name>",
    "echo",
    "web_search",
    "<params>",
    "</params>",
    "<text>",
    "</text>",
    "<query>",
    "</query>",
    "<![CDATA[",
    "]]>",
    "]]]]><![CDATA[>",
    "<max_results>",
    "</max_results>",
    "10",
    "ten",
    "<think>",
    "</think>",
    "```",
    "```xml\n",
    "~~~\n",
    "\n",
    "\r\n",
    " ",
    "  ",
    "x < 10",
    "Vec<u8>",
    "&amp;",
    "&",
    "&#x41;",
    "<",
    ">",
    "/>",
    "<b/>",
    "{\"name\": \"echo\", \"arguments\": {\"text\": \"j\"}}",
    "{",
    "}",
    "\"",
    "\\",
    "<function=run>",
    "<parameter=cmd>",
    "</parameter>",
    "</function>",
    "<invoke name=\"echo\">",
    "<parameter name=\"text\">",
    "</invoke>",
    "<function_calls>",
    "</function_calls>",
    "<tool_calls>",
    "</tool_calls>",
    "<!--",
    "-->",
    "中文",
    "😀",
    "\u{feff}",
    "\0",
    "prose ",
    "data: ",
    "[DONE]",
    ": c\n",
    // The special-token dialects (framed.rs) and GLM.
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "functions.echo:0",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "function",
    "<｜tool▁sep｜>",
    "```json\n",
    "<｜tool▁call▁end｜>",
    "<｜tool▁calls▁end｜>",
    "<｜DSML｜function_calls>",
    "<｜DSML｜invoke name=\"echo\">",
    "<｜DSML｜parameter name=\"text\" string=\"true\">",
    "</｜DSML｜parameter>",
    "</｜DSML｜invoke>",
    "</｜DSML｜function_calls>",
    "<|channel|>",
    "commentary to=functions.echo ",
    "<|constrain|>json",
    "<|message|>",
    "<|call|>",
    "<|end|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[",
    "]",
    "<|python_tag|>",
    "<|python_start|>",
    "<|python_end|>",
    "echo(text='a')",
    ";",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    // The second round of peer tests: Harmony's recipient in the role header (or at the
    // start of the output), GLM names in any script and values left unclosed, and the
    // CDATA end written `]>` before the element's close.
    "<|start|>",
    "assistant",
    "assistant to=functions.echo",
    " to=functions.echo",
    "to=",
    "翻译",
    "text",
    "]>",
    "]></text>",
    "]]></text>",
    // The families added with issue 40: Gemma 4, Kimi K3, DSML V4 / V4.1, LFM2,
    // Granite, Hunyuan, Seed-OSS, and the markup that leaves the text.
    "<|tool_call>",
    "call:echo{",
    "text:",
    "<|\"|>",
    "}",
    "<tool_call|>",
    "<|open|>tools<|sep|>",
    "<|open|>call tool=\"echo\"<|sep|>",
    "<|open|>argument key=\"text\" type=\"string\"<|sep|>",
    "<|close|>argument<|sep|>",
    "<|close|>call<|sep|>",
    "<|close|>tools<|sep|>",
    "<|close|>response<|sep|>",
    "<｜DSML｜tool_calls>",
    "<｜DSML｜ invoke name=\"echo\">",
    "<｜DSML｜parameter name=\"text\" string=\"true\">",
    "</｜DSML｜parameter>",
    "</｜DSML｜ invoke>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<|tool_call|>",
    "<tool_calls>",
    "</tool_calls>",
    "{\"name\": \"echo\", \"arguments\": {\"text\": \"a\"}}",
    "<seed:tool_call>",
    "</seed:tool_call>",
    "<function=echo>",
    "<parameter=text>",
    "</parameter>",
    "</function>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    // Reasoning: Mistral's [THINK], Harmony's analysis channel, a prompt-opened think.
    "[THINK]",
    "[/THINK]",
    "<|channel|>analysis<|message|>",
    "analysis",
    "<|start|>assistant<|channel|>analysis<|message|>",
    "</thi",
    "[TH",
    "◁think▷",
    "◁/think▷",
    "—",
    "“",
];

/// How many cases each property tries: `STREAM_CASES`, else 512 (quick in CI).
fn case_count() -> u64 {
    std::env::var("STREAM_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(512)
}

fn fragment_input(rng: &mut Rng) -> String {
    let n = rng.below(40);
    (0..n).map(|_| *rng.pick(FRAGMENTS)).collect()
}

/// Up to 11 sorted cut points in `0..=len`.
fn cuts_for(rng: &mut Rng, len: usize) -> Vec<usize> {
    let n = rng.below(12);
    let mut v: Vec<usize> = (0..n).map(|_| rng.below(len + 1)).collect();
    v.sort_unstable();
    v
}

const DIALECTS: &[Dialect] = &[
    Dialect::Auto,
    Dialect::Xml,
    Dialect::Hermes,
    Dialect::Qwen3Coder,
    Dialect::Invoke,
    Dialect::OpenAi,
    Dialect::Glm,
    Dialect::KimiK2,
    Dialect::DeepSeek,
    Dialect::Harmony,
    Dialect::Mistral,
    Dialect::Llama3,
    Dialect::Pythonic,
    Dialect::Gemma4,
    Dialect::KimiK3,
    Dialect::Granite,
    Dialect::Hunyuan,
    Dialect::Lfm2,
];

/// Streamed equals whole for `input` cut at `cuts`, and call ids are unique.
fn check_generated(input: &str, cuts: &[usize], opts: &ParseOptions, seed: u64) {
    let expected = whole(input, opts);
    assert_eq!(
        split_at(input.as_bytes(), cuts, opts),
        expected,
        "seed {seed}: {input:?} cut at {cuts:?}"
    );
    let mut ids: Vec<&str> = expected.calls.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(
        ids.len(),
        expected.calls.len(),
        "seed {seed}: duplicate ids"
    );
}

/// Random splits of every corpus case (each case at least once).
#[test]
fn corpus_random_splits_equal_whole() {
    let all = cases();
    for seed in 0..case_count().max(all.len() as u64) {
        let case = &all[(seed as usize) % all.len()];
        let opts = options(case);
        let bytes = case.input.as_bytes();
        let mut rng = Rng::new(seed);
        let mut cuts: Vec<usize> = (0..8).map(|_| rng.below(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        assert_eq!(
            split_at(bytes, &cuts, &opts),
            whole(&case.input, &opts),
            "case {} cut at {cuts:?}",
            case.name
        );
    }
}

/// Generated outputs: never a panic, and any split gives the whole-message result.
#[test]
fn generated_outputs_split_anywhere() {
    for seed in 0..case_count() {
        let mut rng = Rng::new(seed);
        let input = fragment_input(&mut rng);
        let cuts = cuts_for(&mut rng, input.len());
        let d = *rng.pick(DIALECTS);
        let opts = ParseOptions::default()
            .with_dialect(d)
            .with_strict(rng.next() & 1 == 1)
            .with_reasoning_opened(rng.below(8) == 0);
        check_generated(&input, &cuts, &opts, seed);
        check_reasoning_deltas(&input, &cuts, &opts, seed);
    }
}

/// The reasoning pieces a stream hands out, cut at `cuts`, joined in order, equal the
/// whole parse's reasoning joined; each piece follows the last one of its block, and
/// each whole block's span holds its text.
fn check_reasoning_deltas(input: &str, cuts: &[usize], opts: &ParseOptions, seed: u64) {
    let whole_turn = whole(input, opts);
    let mut p = InputParser::new(opts.clone());
    let mut pieces = Vec::new();
    let bytes = input.as_bytes();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let cut = cut.clamp(from, bytes.len());
        pieces.extend(p.feed_bytes(&bytes[from..cut]));
        from = cut;
    }
    pieces.extend(p.finish());
    let streamed: String = pieces
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning(r) => {
                assert!(!r.text.is_empty(), "seed {seed}: an empty reasoning piece");
                assert_eq!(r.end - r.start, r.text.len(), "seed {seed}: piece span");
                Some(r.text.as_str())
            }
            _ => None,
        })
        .collect();
    let joined: String = whole_turn
        .reasoning
        .iter()
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(streamed, joined, "seed {seed}: {input:?} cut at {cuts:?}");
    if !input.starts_with("data:") && !input.trim_start().starts_with(['{', '\u{feff}']) {
        for r in &whole_turn.reasoning {
            assert_eq!(
                input.get(r.start..r.end),
                Some(r.text.as_str()),
                "seed {seed}: span of {r:?} in {input:?}"
            );
        }
    }
}

/// Corpus cases with reasoning: every single cut hands out the same reasoning.
#[test]
fn reasoning_pieces_join_to_the_whole_at_every_cut() {
    for case in cases().iter().filter(|c| !c.expect.reasoning.is_empty()) {
        let opts = options(case);
        for cut in 0..=case.input.len() {
            check_reasoning_deltas(&case.input, &[cut], &opts, cut as u64);
        }
        check_reasoning_deltas(
            &case.input,
            &(1..case.input.len()).collect::<Vec<_>>(),
            &opts,
            0,
        );
    }
}

/// Inputs that once failed (found by the earlier proptest search), kept as cases.
#[test]
fn past_failures_split_anywhere() {
    let input = "<invoke name=\"echo\"><｜tool▁call▁end｜><function=run><invoke name=\"echo\"><|tool_calls_section_begin|><|tool_calls_section_end|><|call|><|tool_calls_section_begin|>~~~\n<parameter name=\"text\">";
    let opts = ParseOptions::default().with_dialect(Dialect::Invoke);
    check_generated(input, &[184], &opts, 0);
    // And every single cut of it, in every dialect.
    for d in DIALECTS {
        let opts = ParseOptions::default().with_dialect(*d);
        for cut in 0..=input.len() {
            check_generated(input, &[cut], &opts, 0);
        }
    }
}

/// Arbitrary bytes, split anywhere (inside characters too).
#[test]
fn arbitrary_bytes_split_anywhere() {
    for seed in 0..case_count() {
        let mut rng = Rng::new(seed);
        let n = rng.below(300);
        let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        let cuts = cuts_for(&mut rng, bytes.len());
        let opts = ParseOptions::default().with_dialect(*rng.pick(DIALECTS));
        let text = String::from_utf8_lossy(&bytes).into_owned();
        assert_eq!(
            split_at(&bytes, &cuts, &opts),
            whole(&text, &opts),
            "seed {seed}: {bytes:?} cut at {cuts:?}"
        );
    }
}

/// Text that holds no `<`, no fence and no JSON/SSE start comes back unchanged.
#[test]
fn plain_prose_is_returned_verbatim() {
    const PROSE: &[u8] =
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;!?()\n\t'-";
    for seed in 0..case_count() {
        let mut rng = Rng::new(seed);
        let n = rng.below(201);
        let s: String = (0..n).map(|_| char::from(*rng.pick(PROSE))).collect();
        if s.contains("data:") || s.contains("event:") {
            continue;
        }
        let got = whole(&s, &ParseOptions::default());
        assert_eq!(got.text, s, "seed {seed}");
        assert!(got.calls.is_empty(), "seed {seed}: {s:?}");
    }
}
