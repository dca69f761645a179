//! Parser throughput: a generated corpus of realistic outputs (prose of 200 B to 8 KB
//! with 0 to 3 calls) per dialect, whole and streamed, and one output holding a 1 MB
//! CDATA value fed whole and in 1-byte, 16-byte and 4 KB chunks.
//!
//! Run: `cargo bench -p toolgate-parse --bench parse` (divan prints time per iteration and MB/s).
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use divan::Bencher;
use divan::counter::{BytesCount, ItemsCount};
use toolgate_parse::{InputParser, ParseOptions, ParsedTurn, StreamParser, collect, parse_input};

fn main() {
    divan::main();
}

/// A small deterministic generator, so every run measures the same corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "the",
    "model",
    "returns",
    "a",
    "result",
    "with",
    "several",
    "values",
    "and",
    "then",
    "we",
    "check",
    "whether",
    "x < 10",
    "holds,",
    "using",
    "Vec<u8>",
    "buffers",
    "in",
    "`code`",
    "spans.",
    "Tokio",
    "tasks",
    "run",
    "concurrently;",
    "données",
    "中文",
    "😀",
    "->",
    "&",
    "é",
];

fn prose(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(12) == 0 { '\n' } else { ' ' });
    }
    s
}

#[derive(Clone, Copy, Debug)]
enum Dialect {
    Xml,
    Hermes,
    Qwen,
    Invoke,
}

fn call(rng: &mut Rng, d: Dialect) -> String {
    let len = 20 + rng.below(60) as usize;
    let query = prose(rng, len).replace(['<', '&', '"', '\\', '\n'], " ");
    let n = rng.below(50);
    match d {
        Dialect::Xml => format!(
            "<tool_call>\n  <name>web_search</name>\n  <params>\n    <query><![CDATA[{query}]]></query>\n    <max_results><![CDATA[{n}]]></max_results>\n  </params>\n</tool_call>"
        ),
        Dialect::Hermes => format!(
            "<tool_call>\n{{\"name\": \"web_search\", \"arguments\": {{\"query\": \"{query}\", \"max_results\": {n}}}}}\n</tool_call>"
        ),
        Dialect::Qwen => format!(
            "<tool_call>\n<function=web_search>\n<parameter=query>\n{query}\n</parameter>\n<parameter=max_results>\n{n}\n</parameter>\n</function>\n</tool_call>"
        ),
        Dialect::Invoke => format!(
            "<invoke name=\"web_search\">\n<parameter name=\"query\">{query}</parameter>\n<parameter name=\"max_results\">{n}</parameter>\n</invoke>"
        ),
    }
}

/// 200 outputs: prose of 200 B to 8 KB around 0 to 3 calls.
fn corpus(d: Dialect) -> Vec<String> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ d as u64);
    (0..200)
        .map(|_| {
            let total = 200 + rng.below(8 * 1024 - 200) as usize;
            let calls = rng.below(4) as usize;
            let mut out = String::new();
            let pieces = calls + 1;
            for i in 0..pieces {
                out.push_str(&prose(&mut rng, total / pieces));
                if i < calls {
                    out.push('\n');
                    out.push_str(&call(&mut rng, d));
                    out.push('\n');
                }
            }
            out
        })
        .collect()
}

fn big_value() -> String {
    // Realistic code: markup-like text, quotes, brackets, but no `]]>` to end the CDATA.
    let line =
        "    let v: Vec<u8> = vec![1, 2]; if x < y && a > b { println!(\"<b>{v:?}</b>\"); }\n";
    let value = line.repeat(1024 * 1024 / line.len());
    format!(
        "Writing the file.\n<tool_call><name>write_file</name><params><path><![CDATA[big.rs]]></path><content><![CDATA[{value}]]></content></params></tool_call>\nDone."
    )
}

fn streamed(input: &str, chunk: usize, opts: &ParseOptions) -> ParsedTurn {
    let mut p = StreamParser::new(opts.clone());
    let mut turn = ParsedTurn::default();
    for piece in input.as_bytes().chunks(chunk) {
        collect(&mut turn, p.feed_bytes(piece));
    }
    collect(&mut turn, p.finish());
    turn
}

const DIALECTS: [Dialect; 4] = [
    Dialect::Xml,
    Dialect::Hermes,
    Dialect::Qwen,
    Dialect::Invoke,
];

/// Whole-message parse of the generated corpus (one iteration = 200 outputs).
#[divan::bench(args = DIALECTS)]
fn whole(bencher: Bencher, d: Dialect) {
    let corpus = corpus(d);
    let bytes: usize = corpus.iter().map(String::len).sum();
    let opts = ParseOptions::default();
    bencher
        .counter(BytesCount::new(bytes))
        .counter(ItemsCount::new(corpus.len()))
        .bench(|| {
            for out in &corpus {
                divan::black_box(parse_input(out, &opts));
            }
        });
}

/// The same corpus streamed in 16-byte chunks, about one token each.
#[divan::bench(args = DIALECTS)]
fn streamed_16b(bencher: Bencher, d: Dialect) {
    let corpus = corpus(d);
    let bytes: usize = corpus.iter().map(String::len).sum();
    let opts = ParseOptions::default();
    bencher
        .counter(BytesCount::new(bytes))
        .counter(ItemsCount::new(corpus.len()))
        .bench(|| {
            for out in &corpus {
                divan::black_box(streamed(out, 16, &opts));
            }
        });
}

/// One output holding a 1 MB CDATA value, whole.
#[divan::bench]
fn big_value_whole(bencher: Bencher) {
    let input = big_value();
    let opts = ParseOptions::default();
    bencher
        .counter(BytesCount::new(input.len()))
        .bench(|| divan::black_box(parse_input(&input, &opts)));
}

/// The 1 MB value fed in chunks of 1 B, 16 B and 4 KB: the cost stays linear.
#[divan::bench(args = [1, 16, 4096])]
fn big_value_streamed(bencher: Bencher, chunk: usize) {
    let input = big_value();
    let opts = ParseOptions::default();
    bencher
        .counter(BytesCount::new(input.len()))
        .bench(|| divan::black_box(streamed(&input, chunk, &opts)));
}

/// A recorded SSE stream of native tool-call deltas (OpenAI format), whole.
#[divan::bench]
fn openai_sse(bencher: Bencher) {
    let mut sse = String::new();
    for i in 0..200 {
        sse.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word {i} \"}}}}]}}\n\n"
        ));
    }
    sse.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"web_search\",\"arguments\":\"\"}}]}}]}\n\n");
    for _ in 0..50 {
        sse.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"q\\\": \\\"x\\\"}\"}}]}}]}\n\n");
    }
    sse.push_str("data: [DONE]\n\n");
    let opts = ParseOptions::default().with_dialect(toolgate_parse::Dialect::OpenAi);
    bencher.counter(BytesCount::new(sse.len())).bench(|| {
        let mut p = InputParser::new(opts.clone());
        let mut turn = ParsedTurn::default();
        collect(&mut turn, p.feed(&sse));
        collect(&mut turn, p.finish());
        divan::black_box(turn)
    });
}
