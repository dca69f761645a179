//! One model output as it is recorded or streamed: plain text in a text dialect, a
//! chat.completion JSON, or an SSE stream of chunks. Detects which (for `auto`) from
//! the first bytes, then parses it chunk by chunk, whole or streamed alike.

use serde_json::Value;

use super::group::StreamEvent;
use super::native::NativeCalls;
use super::options::{Dialect, ParseOptions};
use super::sse::SseReader;
use super::stream::{StreamParser, collect};
use super::types::{ParsedTurn, Reasoning};
use super::utf8::Utf8Decoder;

enum Mode {
    /// Not enough input yet to tell the format.
    Undecided(String),
    Text,
    Sse(SseReader),
    /// A JSON document: read when complete.
    Json(String),
}

/// Parses one output in any format `toolgate parse` accepts.
///
/// Text calls and native calls share one id space and one event order: the text's
/// events first, native calls at the end (they arrive whole only when the stream ends).
///
/// ```
/// use toolgate_parse::{InputParser, ParseOptions, ParsedTurn, collect};
/// let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi \"}}]}\n\n\
///            data: {\"choices\":[{\"delta\":{\"content\":\"there.\"}}]}\n\n\
///            data: [DONE]\n\n";
/// let mut p = InputParser::new(ParseOptions::default());
/// let mut turn = ParsedTurn::default();
/// for chunk in sse.as_bytes().chunks(7) {
///     collect(&mut turn, p.feed_bytes(chunk));
/// }
/// collect(&mut turn, p.finish());
/// assert_eq!(turn.text, "Hi there.");
/// ```
pub struct InputParser {
    opts: ParseOptions,
    mode: Mode,
    text: StreamParser,
    calls: NativeCalls,
    utf8: Utf8Decoder,
    /// How much native reasoning (`reasoning_content`) was read: its pieces' offsets.
    reasoning_at: usize,
}

impl InputParser {
    pub fn new(opts: ParseOptions) -> Self {
        let text_opts = match opts.dialect {
            // Content inside native answers may still hold text calls of any dialect.
            Dialect::OpenAi => opts.clone().with_dialect(Dialect::Auto),
            _ => opts.clone(),
        };
        let mode = match opts.dialect {
            Dialect::Auto | Dialect::OpenAi => Mode::Undecided(String::new()),
            _ => Mode::Text,
        };
        Self {
            text: StreamParser::new(text_opts),
            opts,
            mode,
            calls: NativeCalls::default(),
            utf8: Utf8Decoder::default(),
            reasoning_at: 0,
        }
    }

    pub fn feed(&mut self, chunk: &str) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        self.feed_into(chunk, false, &mut events);
        events
    }

    /// Like [`InputParser::feed`] for bytes split anywhere (see [`StreamParser::feed_bytes`]).
    pub fn feed_bytes(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        let text = self.utf8.decode(chunk);
        self.feed(&text)
    }

    pub fn finish(mut self) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        let rest = self.utf8.finish();
        self.feed_into(rest, true, &mut events);
        match &mut self.mode {
            Mode::Sse(reader) => {
                let out = reader.finish(&mut self.calls);
                self.text_line(out, &mut events);
            }
            Mode::Json(doc) => {
                let doc = std::mem::take(doc);
                match serde_json::from_str::<Value>(&doc)
                    .ok()
                    .as_ref()
                    .and_then(super::native::read_completion)
                {
                    Some((content, calls, reasoning)) => {
                        self.native_reasoning(reasoning, &mut events);
                        events.extend(self.text.feed(&content));
                        self.calls = calls;
                    }
                    // Not a completion after all: the document is model text.
                    None => events.extend(self.text.feed(&doc)),
                }
            }
            Mode::Undecided(_) | Mode::Text => {}
        }
        let native = std::mem::take(&mut self.calls).finish(&self.opts);
        events.extend(self.text.finish_with(native));
        events
    }

    /// Parses a whole output.
    pub fn parse(input: &str, opts: &ParseOptions) -> ParsedTurn {
        let mut p = InputParser::new(opts.clone());
        let mut turn = ParsedTurn::default();
        collect(&mut turn, p.feed(input));
        collect(&mut turn, p.finish());
        turn
    }

    /// A native answer's reasoning, as one more piece of its one block.
    fn native_reasoning(&mut self, reasoning: Option<String>, events: &mut Vec<StreamEvent>) {
        if let Some(text) = reasoning {
            let piece = Reasoning::new(text, self.reasoning_at);
            self.reasoning_at = piece.end;
            events.push(StreamEvent::Reasoning(piece));
        }
    }

    fn text_line(&mut self, out: super::sse::LineOut, events: &mut Vec<StreamEvent>) {
        self.native_reasoning(out.reasoning, events);
        if !out.content.is_empty() {
            events.extend(self.text.feed(&out.content));
        }
        if let Some(p) = out.problem {
            events.push(StreamEvent::Problem(p));
        }
    }

    fn feed_into(&mut self, chunk: &str, eof: bool, events: &mut Vec<StreamEvent>) {
        if let Mode::Undecided(seen) = &mut self.mode {
            if seen.is_empty() {
                // The usual case: the first chunk tells; no need to copy it.
                if let Some(mode) = decide(chunk, eof, self.opts.dialect) {
                    self.mode = mode;
                    return self.feed_into(chunk, eof, events);
                }
            }
            seen.push_str(chunk);
            let Some(mode) = decide(seen, eof, self.opts.dialect) else {
                return;
            };
            let seen = std::mem::take(seen);
            self.mode = mode;
            return self.feed_into(&seen, eof, events);
        }
        match &mut self.mode {
            Mode::Text => events.extend(self.text.feed(chunk)),
            Mode::Json(doc) => doc.push_str(chunk),
            Mode::Sse(reader) => {
                let mut lines = Vec::new();
                reader.feed(chunk, &mut self.calls, |out| lines.push(out));
                for out in lines {
                    self.text_line(out, events);
                }
            }
            Mode::Undecided(_) => {}
        }
    }
}

/// Tells the format from the first lines, once there is enough to tell: a JSON
/// document starts with `{`; an SSE stream's first line that is not blank or a comment
/// (`: keep-alive`) starts with `data:` or `event:`; anything else is model text.
fn decide(seen: &str, eof: bool, dialect: Dialect) -> Option<Mode> {
    let native_only = dialect == Dialect::OpenAi;
    let fallback = || {
        if native_only {
            Mode::Sse(SseReader::default())
        } else {
            Mode::Text
        }
    };
    let mut rest = seen.strip_prefix('\u{feff}').unwrap_or(seen);
    loop {
        let (line, complete) = match rest.find('\n') {
            Some(nl) => (&rest[..nl], true),
            None => (rest, false),
        };
        let l = line.trim_start_matches([' ', '\t', '\r']);
        if l.starts_with('{') {
            return Some(Mode::Json(String::new()));
        }
        let sse = ["data:", "event:"];
        if sse.iter().any(|p| l.starts_with(p)) {
            return Some(Mode::Sse(SseReader::default()));
        }
        let blank_or_comment = l.trim_end().is_empty() || l.starts_with(':');
        if complete && blank_or_comment {
            rest = &rest[line.len() + 1..];
            continue;
        }
        if eof {
            return Some(fallback());
        }
        let undecided = blank_or_comment || sse.iter().any(|p| p.starts_with(l));
        return if undecided { None } else { Some(fallback()) };
    }
}
