//! `toolgate parse --jsonl`: one model output per input line, streamed with bounded
//! memory (lines found with memchr in a reused buffer, the `text` field decoded
//! borrowed when it has no escapes), lines parsed on two cores in batches, results
//! written in input order.

use std::borrow::Cow;
use std::io::{Read, Write};

use serde::Deserialize;
use serde_json::Value;
use toolgate::parse::ParseOptions;

use super::super::Failure;
use super::super::out::{self, print_json};
use super::{parse_one, strip_bom};

/// Bytes of complete lines handed to the workers at once.
const BATCH: usize = 1 << 20;
/// Bytes read from the input at once.
const READ: usize = 256 << 10;

/// What one batch gave: its output and the numbers of its unreadable lines.
#[derive(Default)]
struct Done {
    out: Vec<u8>,
    bad: Vec<usize>,
}

/// Parses every line of `input`, writing one result per line to `out`; returns the
/// numbers of the lines that could not be read.
pub(super) fn run(
    mut input: impl Read,
    out: &mut impl Write,
    opts: &ParseOptions,
    stream: Option<usize>,
    pretty: bool,
) -> Result<Vec<usize>, Failure> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let mut buf: Vec<u8> = Vec::with_capacity(BATCH + READ);
    let mut bad = Vec::new();
    let mut line_no = 0usize;
    let mut eof = false;
    while !eof {
        // Fill up to a batch of complete lines (more when one line is longer).
        while buf.len() < BATCH {
            let at = buf.len();
            buf.resize(at + READ, 0);
            let n = match input.read(&mut buf[at..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    buf.truncate(at);
                    continue;
                }
                Err(e) => {
                    return Err(Failure::bad_input(format!("cannot read the input: {e}")));
                }
            };
            buf.truncate(at + n);
            if n == 0 {
                eof = true;
                break;
            }
        }
        let end = if eof {
            buf.len()
        } else {
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => i + 1,
                // One line longer than a batch: read on until it ends.
                None => {
                    let at = buf.len();
                    buf.resize(at * 2, 0);
                    let n = input
                        .read(&mut buf[at..])
                        .map_err(|e| Failure::bad_input(format!("cannot read the input: {e}")))?;
                    buf.truncate(at + n);
                    eof = n == 0;
                    continue;
                }
            }
        };
        let mut lines: Vec<&[u8]> = Vec::new();
        let mut from = 0;
        for nl in memchr::memchr_iter(b'\n', &buf[..end]) {
            lines.push(&buf[from..nl]);
            from = nl + 1;
        }
        if from < end {
            lines.push(&buf[from..end]);
        }
        let first = line_no + 1;
        line_no += lines.len();
        let parts = split_even(&lines, workers);
        let mut next = first;
        let mut results = Vec::with_capacity(parts.len());
        std::thread::scope(|s| {
            let mut handles = Vec::new();
            let mut starts = Vec::new();
            for part in &parts {
                starts.push(next);
                next += part.len();
            }
            for (part, start) in parts.iter().zip(&starts).skip(1) {
                let (part, start) = (*part, *start);
                handles.push(s.spawn(move || batch(part, start, opts, stream, pretty)));
            }
            results.push(batch(parts[0], starts[0], opts, stream, pretty));
            for h in handles {
                results.push(
                    h.join()
                        .unwrap_or_else(|_| Err(Failure::bad_input("a parser thread failed"))),
                );
            }
        });
        for r in results {
            let d = r?;
            out.write_all(&d.out).map_err(out::write_failure)?;
            bad.extend(d.bad);
        }
        buf.drain(..end);
        if out::stdout_closed() {
            break;
        }
    }
    Ok(bad)
}

/// `lines` in `n` runs of about equal bytes.
fn split_even<'a>(lines: &'a [&'a [u8]], n: usize) -> Vec<&'a [&'a [u8]]> {
    if n <= 1 || lines.len() < 2 {
        return vec![lines];
    }
    let total: usize = lines.iter().map(|l| l.len() + 1).sum();
    let mut acc = 0;
    let cut = lines
        .iter()
        .position(|l| {
            acc += l.len() + 1;
            acc * 2 >= total
        })
        .map_or(lines.len(), |i| i + 1)
        .min(lines.len());
    vec![&lines[..cut], &lines[cut..]]
}

/// One run of lines, numbered from `first`.
fn batch(
    lines: &[&[u8]],
    first: usize,
    opts: &ParseOptions,
    stream: Option<usize>,
    pretty: bool,
) -> Result<Done, Failure> {
    let mut done = Done {
        out: Vec::with_capacity(lines.iter().map(|l| l.len()).sum::<usize>() + 64),
        bad: Vec::new(),
    };
    for (i, line) in lines.iter().enumerate() {
        let line = strip_bom(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match text_of(line) {
            Ok(text) => {
                let turn = parse_one(text.as_bytes(), opts, stream);
                print_json(&mut done.out, &turn, pretty)?;
            }
            Err(reason) => {
                let line_no = first + i;
                let err = serde_json::json!({"line": line_no, "error": reason});
                print_json(&mut done.out, &err, pretty)?;
                done.bad.push(line_no);
            }
        }
    }
    Ok(done)
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// The `text` field of one line: borrowed from the line when it has no escapes.
fn text_of(line: &[u8]) -> Result<Cow<'_, str>, String> {
    if let Ok(l) = serde_json::from_slice::<Line>(line) {
        return Ok(l.text);
    }
    // The slow path says why.
    let value: Value =
        serde_json::from_slice(line).map_err(|e| format!("not a JSON object: {e}"))?;
    match value.get("text") {
        Some(Value::String(s)) => Ok(Cow::Owned(s.clone())),
        Some(_) => Err("the \"text\" field is not a string".to_string()),
        None => Err("no \"text\" field".to_string()),
    }
}
