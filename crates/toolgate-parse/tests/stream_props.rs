//! Property tests of the streaming parser: for any split of any input, streamed equals
//! whole. Inputs are the corpus cases and outputs generated from fragments of every
//! dialect (tags, CDATA, fences, think blocks, JSON, broken pieces), so that the
//! parser meets combinations nobody wrote down.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use proptest::prelude::*;
use toolgate_parse::{Dialect, ParseOptions};

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
];

fn fragment_input() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|v| v.concat())
}

fn cuts_for(len: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..=len, 0..12).prop_map(|mut v| {
        v.sort_unstable();
        v
    })
}

fn dialect() -> impl Strategy<Value = Dialect> {
    prop::sample::select(vec![
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
    ])
}

proptest! {
    // PROPTEST_CASES=N runs longer searches (see README); 512 keeps CI quick.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    /// Random splits of every corpus case.
    #[test]
    fn corpus_random_splits_equal_whole(seed in any::<u64>()) {
        let all = cases();
        let case = &all[(seed as usize) % all.len()];
        let opts = options(case);
        let bytes = case.input.as_bytes();
        let expected = whole(&case.input, &opts);
        // A deterministic spread of cut points from the seed.
        let mut cuts: Vec<usize> = (0..8u64)
            .map(|i| (seed.rotate_left((i * 7) as u32) as usize) % (bytes.len() + 1))
            .collect();
        cuts.sort_unstable();
        prop_assert_eq!(split_at(bytes, &cuts, &opts), expected);
    }

    /// Generated outputs: never a panic, and any split gives the whole-message result.
    #[test]
    fn generated_outputs_split_anywhere(input in fragment_input(), cuts in cuts_for(400),
                                        strict in any::<bool>(), d in dialect()) {
        let opts = ParseOptions::default().with_dialect(d).with_strict(strict);
        let expected = whole(&input, &opts);
        prop_assert_eq!(split_at(input.as_bytes(), &cuts, &opts), expected.clone());
        // Every call id is unique and non-empty.
        let mut ids: Vec<&str> = expected.calls.iter().map(|c| c.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        prop_assert_eq!(ids.len(), expected.calls.len());
    }

    /// Arbitrary bytes, split anywhere (inside characters too).
    #[test]
    fn arbitrary_bytes_split_anywhere(bytes in prop::collection::vec(any::<u8>(), 0..300),
                                      cuts in cuts_for(300), d in dialect()) {
        let opts = ParseOptions::default().with_dialect(d);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let expected = whole(&text, &opts);
        prop_assert_eq!(split_at(&bytes, &cuts, &opts), expected);
    }

    /// Text that holds no `<`, no fence and no JSON/SSE start comes back unchanged.
    #[test]
    fn plain_prose_is_returned_verbatim(s in "[a-zA-Z0-9 .,;!?()\\n\\t'-]{0,200}") {
        prop_assume!(!s.contains("data:") && !s.contains("event:"));
        let got = whole(&s, &ParseOptions::default());
        prop_assert_eq!(got.text, s);
        prop_assert!(got.calls.is_empty());
    }
}
