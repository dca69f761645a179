//! One batch of `--jsonl` lines: the reused buffers that carry it through the pipeline
//! ([`Slot`]) and the per-worker state that parses it line by line ([`Worker`]).

use std::panic::{AssertUnwindSafe, catch_unwind};

use toolgate::parse::{ParsedTurn, parse_input};

use super::super::super::out::print_json;
use super::super::{parse_one, strip_bom};
use super::Settings;
use super::decode::{Decoded, Decoder};
use super::encode::write_turn;

/// Complete input lines and their results. Slots go round: reader, worker, writer,
/// back to the reader; their buffers keep their capacity.
#[derive(Default)]
pub(super) struct Slot {
    /// Which batch of the input this is, from 0.
    pub seq: u64,
    /// The number of the first line in `input`, from 1.
    pub first_line: usize,
    /// Whole lines, each ended by `\n` except perhaps the input's last.
    pub input: Vec<u8>,
    /// One result per non-blank line.
    pub out: Vec<u8>,
    /// The numbers of the lines that could not be read.
    pub bad: Vec<usize>,
}

impl Slot {
    /// Empties the slot for its next batch; a buffer grown far past a batch by a long
    /// line is given back, so the pool stays as small as the batches.
    pub fn recycle(&mut self, batch: usize) {
        for buf in [&mut self.input, &mut self.out] {
            buf.clear();
            if buf.capacity() > 4 * batch {
                buf.shrink_to(batch);
            }
        }
        self.bad.clear();
    }
}

/// A worker's state, reused from line to line.
pub(super) struct Worker<'a> {
    settings: Settings<'a>,
    decoder: Decoder,
}

impl<'a> Worker<'a> {
    pub fn new(settings: Settings<'a>) -> Self {
        Self {
            settings,
            decoder: Decoder::default(),
        }
    }

    /// Parses every line of the slot's input into its output.
    pub fn batch(&mut self, slot: &mut Slot) {
        let Slot {
            first_line,
            input,
            out,
            bad,
            ..
        } = slot;
        out.clear();
        out.reserve(input.len() + input.len() / 8);
        let mut from = 0;
        let mut line_no = *first_line;
        while from < input.len() {
            let to = memchr::memchr(b'\n', &input[from..]).map_or(input.len(), |i| from + i);
            self.line(&input[from..to], line_no, out, bad);
            from = to + 1;
            line_no += 1;
        }
    }

    fn line(&mut self, line: &[u8], line_no: usize, out: &mut Vec<u8>, bad: &mut Vec<usize>) {
        let line = strip_bom(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Settings {
            opts,
            stream,
            pretty,
        } = self.settings;
        let reason = match self.decoder.text_of(line) {
            Decoded::Text(text) => {
                let parse = || match stream {
                    // Already text: no second UTF-8 check.
                    None => parse_input(text, opts),
                    Some(_) => parse_one(text.as_bytes(), opts, stream),
                };
                match catch_unwind(AssertUnwindSafe(parse)) {
                    Ok(turn) => return write(out, &turn, pretty),
                    Err(_) => "the parser failed on this line".to_string(),
                }
            }
            Decoded::Bad(reason) => reason,
        };
        let err = serde_json::json!({"line": line_no, "error": reason});
        // Writing to a Vec cannot fail.
        let _ = print_json(out, &err, pretty);
        bad.push(line_no);
    }
}

fn write(out: &mut Vec<u8>, turn: &ParsedTurn, pretty: bool) {
    if pretty {
        // Writing to a Vec cannot fail.
        let _ = print_json(out, turn, true);
    } else {
        write_turn(out, turn);
    }
}
