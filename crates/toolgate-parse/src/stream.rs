//! `StreamParser`: chunks of model text in, text deltas and complete calls out. The
//! whole-message parse is this parser fed one chunk, so the two agree by construction;
//! what the parser must guarantee is that the split never matters. It looks at each
//! byte a bounded number of times: prose is skipped with memchr, a call block is
//! scanned for its end once (the scanner keeps its place between chunks) and parsed
//! once when complete, a reasoning block is searched only for its closer, and only a
//! suffix that could still open a tag is held back.

use std::sync::LazyLock;

use memchr::{memchr, memmem};

use super::block::{Ending, parse_block};
use super::block_end::{BlockScan, ScanResult};
use super::group::{Emitter, StreamEvent};
use super::native::Finished;
use super::opener::{
    FenceStart, Match, Opener, TRIANGLE, fence_line, fence_start, match_bracket, match_lead,
    match_opener, match_triangle,
};
use super::options::{Dialect, ParseOptions};
use super::reasoning::{BlockEnd, Form, Lead};
use super::types::{ParsedTurn, Reasoning};
use super::utf8::Utf8Decoder;

static TICKS: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"```"));
static TILDES: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"~~~"));

/// Where a scan of prose stopped.
enum Stop {
    /// A line from `line` that may be a code fence; its end is searched from `scan`.
    Fence {
        line: usize,
        scan: usize,
    },
    Opener(usize, Opener),
    /// A `<` that may still open something once more input arrives.
    Hold(usize),
    /// Nothing up to the end of the input so far.
    End,
}

#[derive(Debug)]
enum State {
    /// Prose. `buf[start..scan]` is plain text not yet handed on; `fence_checked`
    /// says the line start at `scan` was already ruled out as a fence.
    Text { scan: usize, fence_checked: bool },
    /// A line (from `start`) that begins like a code fence; `scan` is where the search
    /// for its end continues.
    FenceLine { scan: usize },
    /// Inside a reasoning block: reasoning up to its closer, never a call.
    Reasoning { form: Form, scan: usize },
    /// The start of an output whose prompt may have opened `<think>`: held until a
    /// `</think>` (what came before is reasoning) or a `<think>` (it is not) decides.
    Lead { scan: usize },
    /// A call block from `start`.
    Block(BlockScan),
}

/// The incremental parser. Feed it `&str` chunks of any size (or bytes with
/// [`StreamParser::feed_bytes`]), then call [`StreamParser::finish`].
///
/// ```
/// use toolgate_parse::{ParseOptions, StreamParser, StreamEvent};
/// let mut p = StreamParser::new(ParseOptions::default());
/// let mut events = Vec::new();
/// for chunk in ["Sure.<tool_call><name>echo</name><par", "ams><text><![CDATA[hi]]></text></params></tool_call>"] {
///     events.extend(p.feed(chunk));
/// }
/// events.extend(p.finish());
/// assert!(matches!(&events[1], StreamEvent::Call(c) if c.name == "echo"));
/// ```
pub struct StreamParser {
    opts: ParseOptions,
    buf: String,
    /// `buf[..start]` is done with.
    start: usize,
    /// Absolute input offset of `buf[0]`.
    base: usize,
    /// `buf[start]` begins a line.
    start_of_line: bool,
    state: State,
    emitter: Emitter,
    /// Incomplete UTF-8 at the end of the bytes fed so far.
    utf8: Utf8Decoder,
    /// The next run of three fence characters found in `buf`, if any.
    fence_next: Option<usize>,
    /// `buf[..fence_searched]` holds no run of fence characters not yet looked at.
    fence_searched: usize,
}

impl StreamParser {
    pub fn new(opts: ParseOptions) -> Self {
        let emitter = Emitter::new(opts.strict, opts.id_prefix.clone());
        let state = if opts.reasoning_opened {
            State::Reasoning {
                form: Form::Think,
                scan: 0,
            }
        } else if opts.dialect.prompts_think() {
            State::Lead { scan: 0 }
        } else {
            State::Text {
                scan: 0,
                fence_checked: false,
            }
        };
        Self {
            opts,
            buf: String::new(),
            start: 0,
            base: 0,
            start_of_line: true,
            state,
            emitter,
            utf8: Utf8Decoder::default(),
            fence_next: None,
            fence_searched: 0,
        }
    }

    /// Parses one chunk; returns what is decided so far.
    pub fn feed(&mut self, chunk: &str) -> Vec<StreamEvent> {
        self.buf.push_str(chunk);
        self.run(false);
        self.compact();
        self.emitter.drain().collect()
    }

    /// Like [`StreamParser::feed`] for bytes split anywhere, even inside a character.
    /// Invalid UTF-8 becomes U+FFFD, exactly as `String::from_utf8_lossy` does on the
    /// whole input.
    pub fn feed_bytes(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        let text = self.utf8.decode(chunk);
        self.feed(&text)
    }

    /// Ends the input: open blocks and groups are closed as they stand.
    pub fn finish(self) -> Vec<StreamEvent> {
        self.finish_with(Vec::new())
    }

    /// Ends the input, then emits the native calls of the same answer (their deltas
    /// merged by index), after the text's calls and in the same id space.
    pub fn finish_native(self, native: super::NativeCalls) -> Vec<StreamEvent> {
        let finished = native.finish(&self.opts);
        self.finish_with(finished)
    }

    /// Ends the input, then emits native calls found beside the text, so that they
    /// share the text calls' id space.
    pub(crate) fn finish_with(mut self, native: Vec<Finished>) -> Vec<StreamEvent> {
        let rest = self.utf8.finish();
        self.buf.push_str(rest);
        self.run(true);
        self.emitter.finish(self.base + self.buf.len());
        for (call, problems) in native {
            match call {
                Some(call) => self.emitter.call(call, "", problems),
                None => problems.into_iter().for_each(|p| self.emitter.problem(p)),
            }
        }
        self.emitter.drain().collect()
    }

    /// Parses a whole message at once.
    pub fn parse(input: &str, opts: &ParseOptions) -> ParsedTurn {
        let mut p = StreamParser::new(opts.clone());
        let mut turn = ParsedTurn::default();
        collect(&mut turn, p.feed(input));
        collect(&mut turn, p.finish());
        turn
    }

    fn line_start_at(&self, pos: usize) -> bool {
        if pos == self.start {
            self.start_of_line
        } else {
            self.buf.as_bytes()[pos - 1] == b'\n'
        }
    }

    /// Marks `buf[..to]` done.
    fn consume(&mut self, to: usize) {
        if to > self.start {
            self.start_of_line = self.buf.as_bytes()[to - 1] == b'\n';
            self.start = to;
        }
    }

    /// Hands `buf[start..to]` on as text.
    fn flush_text(&mut self, to: usize) {
        if to > self.start {
            self.emitter.text(&self.buf[self.start..to]);
            self.consume(to);
        }
    }

    /// Hands `buf[start..to]` of a block of `form` on: as text for the final channel,
    /// else as reasoning.
    fn flush_block(&mut self, form: Form, to: usize) {
        if form.is_text() {
            self.flush_text(to);
        } else {
            self.flush_reasoning(to);
        }
    }

    /// Hands `buf[start..to]` on as reasoning.
    fn flush_reasoning(&mut self, to: usize) {
        if to > self.start {
            let piece = Reasoning::new(&self.buf[self.start..to], self.base + self.start);
            self.emitter.reasoning(piece);
            self.consume(to);
        }
    }

    fn compact(&mut self) {
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            let n = self.start;
            self.buf.drain(..n);
            self.base += n;
            self.start = 0;
            self.fence_next = self.fence_next.and_then(|f| f.checked_sub(n));
            self.fence_searched = self.fence_searched.saturating_sub(n);
            match &mut self.state {
                State::Text { scan, .. }
                | State::FenceLine { scan }
                | State::Reasoning { scan, .. }
                | State::Lead { scan } => *scan -= n,
                State::Block(_) => {}
            }
        }
    }

    fn run(&mut self, eof: bool) {
        while self.step(eof) {}
    }

    /// One decision. Returns false when more input is needed (or all is done).
    fn step(&mut self, eof: bool) -> bool {
        match std::mem::replace(
            &mut self.state,
            State::Text {
                scan: self.start,
                fence_checked: false,
            },
        ) {
            State::Text {
                scan,
                fence_checked,
            } => self.step_text(scan, fence_checked, eof),
            State::FenceLine { scan } => self.step_fence_line(scan, eof),
            State::Reasoning { form, scan } => self.step_reasoning(form, scan, eof),
            State::Lead { scan } => self.step_lead(scan, eof),
            State::Block(scan) => self.step_block(scan, eof),
        }
    }

    fn hold(&mut self, state: State) -> bool {
        self.state = state;
        false
    }

    fn step_text(&mut self, i: usize, fence_checked: bool, eof: bool) -> bool {
        // The very start of the output may open a call no tag announces.
        if self.base + i == 0 {
            match match_lead(self.buf.as_bytes(), self.opts.dialect, eof) {
                Match::NeedMore => {
                    return self.hold(State::Text {
                        scan: i,
                        fence_checked,
                    });
                }
                Match::Yes(opener) => {
                    self.open(opener);
                    return true;
                }
                Match::No => {}
            }
        }
        // The line start at `i` was ruled out as a fence already.
        let checked_line = fence_checked.then_some(i);
        match self.next_stop(i, checked_line, eof) {
            Stop::Fence { line, scan } => {
                self.flush_text(line);
                self.state = State::FenceLine { scan };
                true
            }
            Stop::Opener(p, opener) => {
                self.flush_text(p);
                self.open(opener);
                true
            }
            Stop::Hold(p) => {
                self.flush_text(p);
                self.hold(State::Text {
                    scan: p,
                    fence_checked: true,
                })
            }
            Stop::End => {
                let end = self.buf.len();
                let keep = if eof { end } else { self.fence_tail(end) };
                self.flush_text(keep);
                self.hold(State::Text {
                    scan: keep,
                    fence_checked: false,
                })
            }
        }
    }

    /// The next place in prose from `i` where something may start: a `<`, or a run
    /// of three fence characters (a fence only counts at a line start). Inline code
    /// spans and single `~` never stop the scan.
    fn next_stop(&mut self, mut i: usize, checked_line: Option<usize>, eof: bool) -> Stop {
        loop {
            let fence = self.next_fence_run(i);
            let bytes = self.buf.as_bytes();
            let limit = fence.unwrap_or(bytes.len());
            let dialect = self.opts.dialect;
            let hay = &bytes[i..limit];
            // `<` always; `[` and `{` where bracket forms count; the first byte of
            // Kimi's `◁think▷` where it counts.
            let triangle = dialect.allows_special(Dialect::KimiK2);
            let stop = if dialect.scans_brackets() {
                let third = match dialect {
                    Dialect::Llama3 => b'{',
                    _ if triangle => TRIANGLE,
                    _ => b'<',
                };
                self.first_stop(i, memchr::memchr3_iter(b'<', b'[', third, hay), eof)
            } else if triangle {
                self.first_stop(i, memchr::memchr2_iter(b'<', TRIANGLE, hay), eof)
            } else {
                self.first_stop(i, memchr::memchr_iter(b'<', hay), eof)
            };
            if let Some(stop) = stop {
                return stop;
            }
            let Some(f) = fence else { return Stop::End };
            match self.fence_line_start(f) {
                Some(line) if Some(line) != checked_line => {
                    return Stop::Fence { line, scan: f };
                }
                _ => i = f + bytes[f..].iter().take_while(|&&b| b == bytes[f]).count(),
            }
        }
    }

    /// The first of the candidate places `hits` (offsets from `i`) that opens something,
    /// or may once more input comes.
    fn first_stop(&self, i: usize, hits: impl Iterator<Item = usize>, eof: bool) -> Option<Stop> {
        let bytes = self.buf.as_bytes();
        let dialect = self.opts.dialect;
        for k in hits {
            let p = i + k;
            let found = match bytes[p] {
                b'<' => match_opener(&bytes[p..], dialect),
                TRIANGLE => match_triangle(&bytes[p..], dialect),
                _ => match_bracket(&bytes[p..], dialect, self.line_start_at(p)),
            };
            match found {
                Match::NeedMore if !eof => return Some(Stop::Hold(p)),
                Match::Yes(opener) => return Some(Stop::Opener(p, opener)),
                _ => {}
            }
        }
        None
    }

    /// Where the next run of three backticks or tildes at or after `from` starts. The
    /// search result is kept, and a failed search remembers how far it looked, so the
    /// buffer is searched once however often the scan stops.
    fn next_fence_run(&mut self, from: usize) -> Option<usize> {
        if let Some(f) = self.fence_next.filter(|&f| f >= from) {
            return Some(f);
        }
        let start = from.max(self.fence_searched);
        let bytes = self.buf.as_bytes();
        let found = [&*TICKS, &*TILDES]
            .iter()
            .filter_map(|finder| finder.find(&bytes[start..]))
            .min()
            .map(|k| start + k);
        // A run may straddle the end of the input so far: look at the last two bytes again.
        self.fence_searched = match found {
            Some(f) => f,
            None => bytes.len().saturating_sub(2).max(start),
        };
        self.fence_next = found;
        found
    }

    /// When the fence character at `p` opens a line that may be a fence (up to three
    /// spaces before it, three or more fence characters), the line's start.
    fn fence_line_start(&self, p: usize) -> Option<usize> {
        let bytes = self.buf.as_bytes();
        let mut q = p;
        while q > self.start && p - q < 3 && bytes[q - 1] == b' ' {
            q -= 1;
        }
        if !self.line_start_at(q) {
            return None;
        }
        (fence_start(&bytes[q..]) != FenceStart::No).then_some(q)
    }

    /// Where to stop emitting at the end of the input so far: before a last line that
    /// could still become a fence (`\n` then up to three spaces and up to two fence
    /// characters).
    fn fence_tail(&self, end: usize) -> usize {
        let bytes = self.buf.as_bytes();
        let from = end.saturating_sub(6).max(self.start);
        let line = match bytes[from..end].iter().rposition(|&b| b == b'\n') {
            Some(k) => from + k + 1,
            None if from == self.start && self.start_of_line => from,
            None => return end,
        };
        if fence_start(&bytes[line..end]) == FenceStart::NeedMore {
            line
        } else {
            end
        }
    }

    /// Acts on an opener found at `start`.
    fn open(&mut self, opener: Opener) {
        let at = self.base + self.start;
        let tag_end = self.start + opener.tag_len();
        self.state = match opener {
            // A reasoning marker shown in a code fence is an example: text.
            Opener::Reasoning(_) if self.emitter.in_fence() => {
                self.flush_text(tag_end);
                State::Text {
                    scan: tag_end,
                    fence_checked: false,
                }
            }
            Opener::Reasoning(form) => {
                self.consume(tag_end);
                State::Reasoning {
                    form,
                    scan: tag_end,
                }
            }
            Opener::ToolCall => State::Block(BlockScan::tool_call()),
            Opener::Function => State::Block(BlockScan::function()),
            Opener::Invoke => State::Block(BlockScan::invoke()),
            Opener::Framed(f) => State::Block(BlockScan::framed(f)),
            Opener::StrayClose => {
                self.emitter.stray_close(&self.buf[self.start..tag_end]);
                self.consume(tag_end);
                State::Text {
                    scan: tag_end,
                    fence_checked: false,
                }
            }
            Opener::Markup(_) => {
                self.emitter.markup(&self.buf[self.start..tag_end], true);
                self.consume(tag_end);
                State::Text {
                    scan: tag_end,
                    fence_checked: false,
                }
            }
            Opener::WrapperOpen(w) => {
                self.emitter
                    .wrapper_open(&self.buf[self.start..tag_end], w, at);
                self.consume(tag_end);
                State::Text {
                    scan: tag_end,
                    fence_checked: false,
                }
            }
            Opener::WrapperClose(w) => {
                self.emitter
                    .wrapper_close(&self.buf[self.start..tag_end], w, at);
                self.consume(tag_end);
                State::Text {
                    scan: tag_end,
                    fence_checked: false,
                }
            }
        };
    }

    fn step_fence_line(&mut self, scan: usize, eof: bool) -> bool {
        let bytes = self.buf.as_bytes();
        let end = match memchr(b'\n', &bytes[scan..]) {
            Some(k) => scan + k + 1,
            None if eof => bytes.len(),
            None => {
                let len = bytes.len();
                return self.hold(State::FenceLine { scan: len });
            }
        };
        let line = &self.buf[self.start..end];
        let body = line.trim_end_matches(['\n', '\r']);
        match fence_line(body) {
            Some(fence) => {
                let at = self.base + self.start;
                self.emitter.fence_line(line, fence, at);
                self.consume(end);
                self.state = State::Text {
                    scan: end,
                    fence_checked: false,
                };
            }
            None => {
                // Not a fence after all: an ordinary line, scanned as prose.
                self.state = State::Text {
                    scan: self.start,
                    fence_checked: true,
                };
            }
        }
        true
    }

    fn step_reasoning(&mut self, form: Form, scan: usize, eof: bool) -> bool {
        match super::reasoning::block_end(form, self.buf.as_bytes(), scan, eof) {
            BlockEnd::Closed { text_end, end } => {
                self.flush_block(form, text_end);
                self.consume(end);
                self.state = State::Text {
                    scan: end,
                    fence_checked: false,
                };
                true
            }
            BlockEnd::Open { keep } => {
                self.flush_block(form, keep);
                self.hold(State::Reasoning { form, scan: keep })
            }
        }
    }

    fn step_lead(&mut self, scan: usize, eof: bool) -> bool {
        match super::reasoning::lead(self.buf.as_bytes(), scan, eof, self.opts.dialect) {
            Lead::Reasoning { text_end, end } => {
                self.flush_reasoning(text_end);
                self.consume(end);
                self.state = State::Text {
                    scan: end,
                    fence_checked: false,
                };
                true
            }
            Lead::Text => {
                self.state = State::Text {
                    scan: self.start,
                    fence_checked: false,
                };
                true
            }
            Lead::NeedMore { scan } => self.hold(State::Lead { scan }),
        }
    }

    fn step_block(&mut self, mut scan: BlockScan, eof: bool) -> bool {
        let block = &self.buf.as_bytes()[self.start..];
        match scan.advance(block, eof, &self.opts) {
            ScanResult::NeedMore => self.hold(State::Block(scan)),
            ScanResult::NotACall => {
                let end = (self.start + scan.opener_len()).min(self.buf.len());
                self.flush_text(end);
                self.state = State::Text {
                    scan: end,
                    fence_checked: false,
                };
                true
            }
            ScanResult::End { len, closed } => {
                let ending = if closed {
                    Ending::Closed
                } else {
                    Ending::Unclosed
                };
                self.end_block(scan, len, ending)
            }
            ScanResult::Cut { len } => self.end_block(scan, len, Ending::Cut),
        }
    }

    /// Parses the block `buf[start..start + len]` and hands on its call or its text.
    fn end_block(&mut self, scan: BlockScan, len: usize, ending: Ending) -> bool {
        let end = self.start + len;
        let at = self.base + self.start;
        let raw = &self.buf[self.start..end];
        let Some(kind) = scan.kind() else {
            self.flush_text(end);
            return true;
        };
        let outcome = parse_block(kind, raw, ending, scan.into_walk(), &self.opts);
        let problems = outcome
            .problems
            .into_iter()
            .map(|mut p| {
                p.offset += at;
                p
            })
            .collect::<Vec<_>>();
        match outcome.call {
            Some(call) => {
                self.emitter.call(call, raw, problems);
                for more in outcome.more {
                    self.emitter.call(more, "", Vec::new());
                }
                self.consume(end);
            }
            None => {
                self.flush_text(end);
                for p in problems {
                    self.emitter.problem(p);
                }
            }
        }
        self.state = State::Text {
            scan: end,
            fence_checked: false,
        };
        true
    }
}

/// Adds events to a turn being assembled.
pub fn collect(turn: &mut ParsedTurn, events: impl IntoIterator<Item = StreamEvent>) {
    for e in events {
        match e {
            StreamEvent::Text(t) if turn.text.is_empty() => turn.text = t,
            StreamEvent::Text(t) => turn.text.push_str(&t),
            StreamEvent::Reasoning(r) => match turn.reasoning.last_mut() {
                // A piece that continues the last block in the input joins it.
                Some(last) if last.end == r.start && !r.text.is_empty() => {
                    last.text.push_str(&r.text);
                    last.end = r.end;
                }
                _ => turn.reasoning.push(r),
            },
            StreamEvent::Call(c) => turn.calls.push(c),
            StreamEvent::Problem(p) => turn.problems.push(p),
        }
    }
}
