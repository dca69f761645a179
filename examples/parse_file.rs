//! Parses a file of model outputs (separated by the byte 0x1E) many times: a target
//! for profilers (`perf record`, `valgrind --tool=callgrind`).
//!
//! Run: `cargo run --release --example parse_file -- FILE [ROUNDS]`
#![allow(clippy::too_many_lines, reason = "an example program reads best whole")]

use toolgate::parse::{ParseOptions, parse_input};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: parse_file FILE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(100);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    let outputs: Vec<&str> = text.split('\u{1e}').collect();
    let opts = ParseOptions::default();
    let mut calls = 0;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        for out in &outputs {
            calls += parse_input(out, &opts).calls.len();
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let mb = (text.len() * rounds) as f64 / 1e6;
    println!(
        "{calls} calls, {:.1} MB in {secs:.3} s: {:.0} MB/s",
        mb,
        mb / secs
    );
}
