//! The parse API beyond the corpus: streaming latency (what is emitted when), problem
//! offsets, id prefixes, pathological nesting and large inputs fed byte by byte.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolgate_parse::{
    InputParser, ParseOptions, ProblemKind, StreamEvent, StreamParser, parse_input, parse_text,
};

fn texts(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn text_before_a_partial_tag_is_emitted_at_once() {
    let mut p = StreamParser::new(ParseOptions::default());
    let first = p.feed("Hello there <tool_c");
    assert_eq!(texts(&first), "Hello there ");
    let second = p.feed("all><name>echo</name><params><text>x</text></par");
    assert!(
        second.is_empty(),
        "nothing is decided inside an open call: {second:?}"
    );
    let third = p.feed("ams></tool_call> after");
    assert!(
        matches!(&third[0], StreamEvent::Call(c) if c.name == "echo" && c.arguments["text"] == "x")
    );
    assert_eq!(texts(&third), " after");
    assert!(p.finish().is_empty());
}

#[test]
fn lookalike_tag_is_released_as_soon_as_it_differs() {
    let mut p = StreamParser::new(ParseOptions::default());
    assert_eq!(texts(&p.feed("a <tool")), "a ");
    assert_eq!(texts(&p.feed("kit> b")), "<toolkit> b");
}

fn thoughts(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning(r) => Some(r.text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn reasoning_streams_while_the_block_is_open() {
    let mut p = StreamParser::new(ParseOptions::default());
    let first = p.feed("<think>step one, ");
    assert_eq!(texts(&first), "");
    assert_eq!(thoughts(&first), "step one, ");
    let second = p.feed("step two</thi");
    assert_eq!(
        thoughts(&second),
        "step two",
        "only a possible closer is held"
    );
    let third = p.feed("nk>ok");
    assert_eq!(thoughts(&third), "");
    assert_eq!(texts(&third), "ok");
    // The pieces carry their place in the input, and join into one block.
    let mut turn = toolgate_parse::ParsedTurn::default();
    toolgate_parse::collect(&mut turn, first.into_iter().chain(second).chain(third));
    assert_eq!(turn.reasoning.len(), 1);
    assert_eq!(turn.reasoning[0].text, "step one, step two");
    assert_eq!((turn.reasoning[0].start, turn.reasoning[0].end), (7, 25));
}

#[test]
fn a_native_answer_reasoning_content_is_reasoning() {
    let completion = r#"{"choices": [{"message": {"role": "assistant", "content": "Hi.",
        "reasoning_content": "The user greets; <tool_call>{\"name\": \"x\"}</tool_call> no."}}]}"#;
    let turn = parse_input(completion, &ParseOptions::default());
    assert_eq!(turn.text, "Hi.");
    assert!(turn.calls.is_empty());
    assert_eq!(
        turn.reasoning[0].text,
        "The user greets; <tool_call>{\"name\": \"x\"}</tool_call> no."
    );
    let sse = "data: {\"choices\":[{\"delta\":{\"reasoning\":\"Think \"}}]}\n\n\
               data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"more.\"}}]}\n\n\
               data: {\"choices\":[{\"delta\":{\"content\":\"Done.\"}}]}\n\n\
               data: [DONE]\n\n";
    let turn = parse_input(sse, &ParseOptions::default());
    assert_eq!(turn.text, "Done.");
    assert_eq!(turn.reasoning.len(), 1);
    assert_eq!(turn.reasoning[0].text, "Think more.");
    assert_eq!((turn.reasoning[0].start, turn.reasoning[0].end), (0, 11));
}

#[test]
fn fenced_calls_are_held_until_the_fence_closes() {
    let mut p = StreamParser::new(ParseOptions::default());
    let mut events = p.feed("Run:\n```xml\n<tool_call><name>echo</name></tool_call>\n");
    assert_eq!(texts(&events), "Run:\n");
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Call(_))));
    events = p.feed("```\n");
    assert!(matches!(&events[..], [StreamEvent::Call(c)] if c.name == "echo"));
}

#[test]
fn problem_offsets_point_into_the_input() {
    let input = "ab<tool_call><name>web_search</name><params><query>q<max_results>2</max_results></params></tool_call>";
    let turn = parse_text(input, &ParseOptions::default());
    let p = &turn.problems[0];
    assert_eq!(p.kind, ProblemKind::ImplicitClose);
    assert_eq!(&input[p.offset..p.offset + 13], "<max_results>");
    assert_eq!(p.call_id.as_deref(), Some("call_1"));
}

#[test]
fn id_prefix_is_used_for_generated_ids() {
    let opts = ParseOptions::default().with_id_prefix("run7_it3_");
    let turn = parse_text(
        "<tool_call><name>a</name></tool_call><tool_call><name>b</name></tool_call>",
        &opts,
    );
    let ids: Vec<_> = turn.calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["run7_it3_1", "run7_it3_2"]);
}

#[test]
fn deep_nesting_neither_overflows_nor_loses_the_call() {
    let depth = 100_000;
    let input = format!(
        "<tool_call><name>deep</name><params>{}x{}</params></tool_call>",
        "<a>".repeat(depth),
        "</a>".repeat(depth)
    );
    let turn = parse_text(&input, &ParseOptions::default());
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].name, "deep");
    // Nesting is bounded: the value stays a small tree and the rest is kept as text.
    let mut v = &turn.calls[0].arguments["a"];
    let mut levels = 1;
    while let Some(inner) = v.get("a") {
        v = inner;
        levels += 1;
    }
    assert!(levels < 40, "{levels} levels");
    assert!(v.as_str().is_some_and(|s| s.contains('x')));
}

#[test]
fn large_value_fed_one_byte_at_a_time() {
    let value = "0123456789abcdef]] <tool_call> ".repeat(8 * 1024);
    let input = format!(
        "Saving.<tool_call><name>write_file</name><params><content><![CDATA[{value}]]></content></params></tool_call>Done."
    );
    let mut p = StreamParser::new(ParseOptions::default());
    let mut events = Vec::new();
    for b in input.as_bytes() {
        events.extend(p.feed_bytes(std::slice::from_ref(b)));
    }
    events.extend(p.finish());
    assert_eq!(texts(&events), "Saving.Done.");
    let call = events.iter().find_map(|e| match e {
        StreamEvent::Call(c) => Some(c),
        _ => None,
    });
    assert_eq!(call.unwrap().arguments["content"], json!(value));
}

#[test]
fn large_prose_fed_one_byte_at_a_time_is_emitted_as_it_comes() {
    let prose = "Line with x < y and a `code` span.\n".repeat(4096);
    let mut p = StreamParser::new(ParseOptions::default());
    let mut emitted = 0;
    for (i, b) in prose.as_bytes().iter().enumerate() {
        emitted += texts(&p.feed_bytes(std::slice::from_ref(b))).len();
        // Only a possible tag start (`<`, `< `) or fence start may be held back.
        assert!(
            i + 1 - emitted <= 3,
            "held back {} bytes at {i}",
            i + 1 - emitted
        );
    }
    emitted += texts(&p.finish()).len();
    assert_eq!(emitted, prose.len());
}

#[test]
fn native_and_text_calls_share_one_id_space() {
    let input = r#"{"choices":[{"message":{"content":"<tool_call><name>a</name></tool_call>","tool_calls":[{"id":"call_1","type":"function","function":{"name":"b","arguments":"{}"}}]}}]}"#;
    let turn = parse_input(input, &ParseOptions::default());
    assert_eq!(turn.calls.len(), 2);
    assert_ne!(turn.calls[0].id, turn.calls[1].id);
    assert_eq!(turn.problems[0].kind, ProblemKind::DuplicateId);
}

#[test]
fn input_parser_streams_sse_content() {
    let mut p = InputParser::new(ParseOptions::default());
    let first = p.feed("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n");
    assert_eq!(texts(&first), "Hel");
    let second = p
        .feed("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\ndata: [DONE]\n");
    assert_eq!(texts(&second), "lo");
    assert!(p.finish().is_empty());
}

#[test]
fn many_parameters_with_repeats() {
    let mut params = String::new();
    for i in 0..40 {
        params.push_str(&format!("<tag>t{i}</tag><p{i}>{i}</p{i}>"));
    }
    let input = format!("<tool_call><name>bulk</name><params>{params}</params></tool_call>");
    let turn = parse_text(&input, &ParseOptions::default());
    let args = &turn.calls[0].arguments;
    assert_eq!(args.len(), 41);
    let tags = args["tag"].as_array().unwrap();
    assert_eq!(tags.len(), 40);
    assert_eq!(tags[39], "t39");
    assert_eq!(args["p7"], 7);
    assert!(turn.problems.is_empty(), "{:?}", turn.problems);
}
