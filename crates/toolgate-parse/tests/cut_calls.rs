//! The end of output is a boundary: one call per dialect, cut at every byte, never yields
//! a call other than the whole one (no call with partial arguments), lenient or strict,
//! whole or streamed; a cut inside the call's arguments reports a `truncated_call` (or
//! leaves it as text) instead of running it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolgate_parse::{Dialect, ParseOptions, ProblemKind, StreamParser, collect, parse_text};

/// One complete call per dialect, each writing `rm -rf /tmp/build` as `content`, and the
/// offset inside it where the content value starts (a cut past it is inside the value).
const CALLS: &[(Dialect, &str, &str)] = &[
    (
        Dialect::Xml,
        "<tool_call><name>write_file</name><params><path>a.md</path><content>",
        "rm -rf /tmp/build</content></params></tool_call>",
    ),
    (
        Dialect::Hermes,
        r#"<tool_call>{"name": "write_file", "arguments": {"path": "a.md", "content": ""#,
        r#"rm -rf /tmp/build"}}</tool_call>"#,
    ),
    (
        Dialect::Qwen3Coder,
        "<tool_call>\n<function=write_file>\n<parameter=path>\na.md\n</parameter>\n<parameter=content>\n",
        "rm -rf /tmp/build\n</parameter>\n</function>\n</tool_call>",
    ),
    (
        Dialect::Invoke,
        "<minimax:tool_call>\n<invoke name=\"write_file\">\n<parameter name=\"path\">a.md</parameter>\n<parameter name=\"content\">",
        "rm -rf /tmp/build</parameter>\n</invoke>\n</minimax:tool_call>",
    ),
    (
        Dialect::Glm,
        "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.md</arg_value>\n<arg_key>content</arg_key>\n<arg_value>",
        "rm -rf /tmp/build</arg_value>\n</tool_call>",
    ),
    (
        Dialect::KimiK2,
        r#"<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>{"path": "a.md", "content": ""#,
        r#"rm -rf /tmp/build"}<|tool_call_end|><|tool_calls_section_end|>"#,
    ),
    (
        Dialect::DeepSeek,
        r#"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>{"path": "a.md", "content": ""#,
        r#"rm -rf /tmp/build"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"#,
    ),
    (
        Dialect::Harmony,
        r#"<|start|>assistant<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>{"path": "a.md", "content": ""#,
        r#"rm -rf /tmp/build"}<|call|>"#,
    ),
    (
        Dialect::Mistral,
        r#"[TOOL_CALLS]write_file[ARGS]{"path": "a.md", "content": ""#,
        r#"rm -rf /tmp/build"}"#,
    ),
    (
        Dialect::Llama3,
        r#"<|python_tag|>{"name": "write_file", "parameters": {"path": "a.md", "content": ""#,
        r#"rm -rf /tmp/build"}}"#,
    ),
    (
        Dialect::Pythonic,
        r#"<|python_start|>[write_file(path="a.md", content=""#,
        r#"rm -rf /tmp/build")]<|python_end|>"#,
    ),
    (
        Dialect::DeepSeek,
        "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"write_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">a.md</｜DSML｜parameter>\n<｜DSML｜parameter name=\"content\" string=\"true\">",
        "rm -rf /tmp/build</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
    ),
    (
        Dialect::DeepSeek,
        "<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"write_file\">\n<｜DSML｜ parameter name=\"path\" string=\"true\">a.md</｜DSML｜ parameter>\n<｜DSML｜ parameter name=\"content\" string=\"true\">",
        "rm -rf /tmp/build</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>",
    ),
    (
        Dialect::KimiK3,
        r#"<|open|>tools<|sep|><|open|>call tool="write_file" index="1"<|sep|><|open|>argument key="path" type="string"<|sep|>a.md<|close|>argument<|sep|><|open|>argument key="content" type="string"<|sep|>"#,
        r#"rm -rf /tmp/build<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>"#,
    ),
    (
        Dialect::Lfm2,
        r#"<|tool_call_start|>[write_file(path="a.md", content=""#,
        r#"rm -rf /tmp/build")]<|tool_call_end|>"#,
    ),
    (
        Dialect::Granite,
        r#"<|tool_call|>[{"name": "write_file", "arguments": {"path": "a.md", "content": ""#,
        r#"rm -rf /tmp/build"}}]"#,
    ),
    (
        Dialect::Hunyuan,
        r#"<tool_calls>[{"name": "write_file", "arguments": {"path": "a.md", "content": ""#,
        r#"rm -rf /tmp/build"}}]</tool_calls>"#,
    ),
    (
        Dialect::Qwen3Coder,
        "<seed:tool_call>\n<function=write_file>\n<parameter=path>\na.md\n</parameter>\n<parameter=content>\n",
        "rm -rf /tmp/build\n</parameter>\n</function>\n</seed:tool_call>",
    ),
    (
        Dialect::Gemma4,
        r#"<|tool_call>call:write_file{path:<|"|>a.md<|"|>,content:<|"|>"#,
        r#"rm -rf /tmp/build<|"|>}<tool_call|>"#,
    ),
];

fn streamed(input: &str, cut: usize, opts: &ParseOptions) -> toolgate_parse::ParsedTurn {
    let mut p = StreamParser::new(opts.clone());
    let mut events = p.feed(&input[..cut]);
    events.extend(p.feed(&input[cut..]));
    events.extend(p.finish());
    let mut turn = toolgate_parse::ParsedTurn::default();
    collect(&mut turn, events);
    turn
}

#[test]
fn a_call_cut_at_any_byte_is_never_run_with_what_was_read() {
    for &(dialect, head, tail) in CALLS {
        let full = format!("{head}{tail}");
        for strict in [false, true] {
            for d in [dialect, Dialect::Auto] {
                let opts = ParseOptions::default().with_dialect(d).with_strict(strict);
                let whole = parse_text(&full, &opts);
                assert_eq!(whole.calls.len(), 1, "{d:?} whole: {whole:?}");
                assert_eq!(whole.calls[0].arguments["content"], "rm -rf /tmp/build");
                assert!(whole.problems.is_empty(), "{d:?} whole: {whole:?}");
                check_prefixes(&full, head.len(), &opts, &whole);
            }
        }
    }
}

fn check_prefixes(
    full: &str,
    value_start: usize,
    opts: &ParseOptions,
    whole: &toolgate_parse::ParsedTurn,
) {
    let value_end = value_start + "rm -rf /tmp/build".len();
    for end in (1..full.len()).filter(|&i| full.is_char_boundary(i)) {
        let prefix = &full[..end];
        let turn = parse_text(prefix, opts);
        for call in &turn.calls {
            assert_eq!(
                (&call.name, &call.arguments),
                (&whole.calls[0].name, &whole.calls[0].arguments),
                "{:?} cut at {end}: a call other than the whole one: {prefix:?}",
                opts.dialect
            );
        }
        if end > value_start && end <= value_end {
            assert!(
                turn.calls.is_empty(),
                "cut inside the value ran: {prefix:?}"
            );
            assert!(
                turn.problems
                    .iter()
                    .any(|p| p.kind == ProblemKind::TruncatedCall)
                    || turn.text == prefix,
                "{:?} cut at {end} neither reported nor kept as text: {turn:?}",
                opts.dialect
            );
        }
        let mut mid = end / 2;
        while !prefix.is_char_boundary(mid) {
            mid -= 1;
        }
        let split = streamed(prefix, mid, opts);
        assert_eq!(
            split.calls, turn.calls,
            "stream split at {mid} of {prefix:?}"
        );
    }
}
