//! The dialects framed by special tokens, as the model servers' parsers know them:
//! Kimi K2, DeepSeek V3 / V3.1 / V3.2 (DSML), gpt-oss Harmony, Mistral (both forms),
//! Llama 3.x (`<|python_tag|>`) and Llama 4 (`<|python_start|>`). Each has an opener,
//! a scan for the end of its block, and a parser from the block to a call (Kimi, DeepSeek,
//! DSML and Harmony's in `framed_calls.rs`). Bare Llama
//! JSON and bare pythonic lists (no special token) are framed here too, for when the
//! dialect is asked for by name; pythonic lists are read in `pythonic.rs`.

use memchr::memchr;
use serde_json::{Map, Value};

use super::block::{BlockOutcome, RawCall, coerce_json_args};
use super::gemma::{GEMMA_CALL, GEMMA_CALL_END, GEMMA_QUOTE};
use super::json_calls::{Joined, joined_next};
use super::json_extent::JsonExtent;
use super::kimi_k3::{K3_ARG, K3_ARG_END, K3_CALL, K3_CALL_END, K3_SEP, K3_TOOLS_END};
use super::opener::{Prefix, prefix};
use super::options::ParseOptions;
use super::tag_lex::is_tool_name;
use super::types::{Problem, ProblemKind};

/// A dialect whose block starts at a special token (or, for the bare forms, at `{` /
/// `[` at the start of a line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framed {
    /// `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{..}<|tool_call_end|>`.
    KimiK2,
    /// `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```<｜tool▁call▁end｜>`
    /// (V3) or `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{..}<｜tool▁call▁end｜>` (V3.1).
    DeepSeek,
    /// `<｜DSML｜invoke name="N"><｜DSML｜parameter name="K" string="true">v</｜DSML｜parameter></｜DSML｜invoke>`
    /// (V3.2 in `<｜DSML｜function_calls>`, V4 in `<｜DSML｜tool_calls>`).
    Dsml,
    /// DeepSeek V4.1's spaced DSML: `<｜DSML｜ invoke name="N"><｜DSML｜ parameter ..>v</｜DSML｜ parameter></｜DSML｜ invoke>`
    /// in `<｜DSML｜ calls>`.
    Dsml41,
    /// `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{..}<|call|>`.
    Harmony,
    /// Harmony with the recipient in the role, before the channel:
    /// `<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{..}<|call|>`.
    HarmonyRole,
    /// The same at the very start of an output whose `<|start|>assistant` was the
    /// prompt's last tokens: ` to=functions.NAME<|channel|>commentary json<|message|>{..}`.
    HarmonyLead,
    /// `[TOOL_CALLS][{"name": .., "arguments": {..}}]` or `[TOOL_CALLS]NAME[ARGS]{..}`.
    Mistral,
    /// Gemma 4: `<|tool_call>call:NAME{key:<|"|>v<|"|>,n:1}<tool_call|>` (gemma.rs).
    Gemma4,
    /// Kimi K3's XTML: `<|open|>call tool="NAME" index="1"<|sep|><|open|>argument key="K"
    /// type="string"<|sep|>v<|close|>argument<|sep|><|close|>call<|sep|>` (kimi_k3.rs).
    KimiK3,
    /// `<|python_tag|>{"name": .., "parameters": {..}}` (several joined by `;`).
    PythonTag,
    /// `<|python_start|>[f(a=1)]<|python_end|>`.
    PythonStart,
    /// LFM2: `<|tool_call_start|>[f(a=1)]<|tool_call_end|>`.
    Lfm2,
    /// Granite 3.0: `<|tool_call|>[{"name": .., "arguments": {..}}]`, ended by the list.
    Granite,
    /// Hunyuan A13B: `<tool_calls>[{"name": .., "arguments": {..}}]</tool_calls>`.
    Hunyuan,
    /// `{"name": .., "parameters": {..}}` at a line start (`--dialect llama3` only).
    BareJson,
    /// `[f(a=1, b="x"), g()]` at a line start (`--dialect pythonic` only).
    BarePythonic,
}

pub(crate) const KIMI_CALL: &[u8] = "<|tool_call_begin|>".as_bytes();
const KIMI_CALL_END: &[u8] = "<|tool_call_end|>".as_bytes();
pub(super) const KIMI_ARGS: &str = "<|tool_call_argument_begin|>";
pub(crate) const KIMI_SECTION: &[u8] = "<|tool_calls_section_begin|>".as_bytes();
pub(crate) const KIMI_SECTION_END: &[u8] = "<|tool_calls_section_end|>".as_bytes();
pub(crate) const DS_CALL: &[u8] = "<｜tool▁call▁begin｜>".as_bytes();
const DS_CALL_END: &[u8] = "<｜tool▁call▁end｜>".as_bytes();
pub(super) const DS_SEP: &str = "<｜tool▁sep｜>";
pub(crate) const DS_CALLS: &[u8] = "<｜tool▁calls▁begin｜>".as_bytes();
pub(crate) const DS_CALLS_END: &[u8] = "<｜tool▁calls▁end｜>".as_bytes();
pub(crate) const DSML_INVOKE: &[u8] = "<｜DSML｜invoke ".as_bytes();
const DSML_INVOKE_END: &[u8] = "</｜DSML｜invoke>".as_bytes();
const DSML_PARAM: &str = "<｜DSML｜parameter ";
const DSML_PARAM_END: &str = "</｜DSML｜parameter>";
const DSML_TOKENS: (&str, &str) = (DSML_PARAM, DSML_PARAM_END);
pub(crate) const DSML_CALLS: &[u8] = "<｜DSML｜function_calls>".as_bytes();
pub(crate) const DSML_CALLS_END: &[u8] = "</｜DSML｜function_calls>".as_bytes();
pub(crate) const DSML_TOOL_CALLS: &[u8] = "<｜DSML｜tool_calls>".as_bytes();
pub(crate) const DSML_TOOL_CALLS_END: &[u8] = "</｜DSML｜tool_calls>".as_bytes();
pub(crate) const DSML41_INVOKE: &[u8] = "<｜DSML｜ invoke ".as_bytes();
const DSML41_INVOKE_END: &[u8] = "</｜DSML｜ invoke>".as_bytes();
const DSML41_PARAM: &str = "<｜DSML｜ parameter ";
const DSML41_PARAM_END: &str = "</｜DSML｜ parameter>";
const DSML41_TOKENS: (&str, &str) = (DSML41_PARAM, DSML41_PARAM_END);
pub(crate) const DSML41_CALLS: &[u8] = "<｜DSML｜ calls>".as_bytes();
pub(crate) const DSML41_CALLS_END: &[u8] = "</｜DSML｜ calls>".as_bytes();
pub(crate) const HARMONY: &[u8] = b"<|channel|>";
pub(crate) const HARMONY_START: &[u8] = b"<|start|>";
/// The longest Harmony role header read (`assistant to=functions.NAME`).
const HARMONY_ROLE_MAX: usize = 256;
pub(super) const HARMONY_MESSAGE: &str = "<|message|>";
pub(crate) const MISTRAL: &[u8] = b"[TOOL_CALLS]";
pub(crate) const PYTHON_TAG: &[u8] = b"<|python_tag|>";
pub(crate) const PYTHON_START: &[u8] = b"<|python_start|>";
const PYTHON_END: &[u8] = b"<|python_end|>";
pub(crate) const LFM2_START: &[u8] = b"<|tool_call_start|>";
const LFM2_END: &[u8] = b"<|tool_call_end|>";
pub(crate) const GRANITE_CALL: &[u8] = b"<|tool_call|>";
pub(crate) const HUNYUAN_CALLS: &[u8] = b"<tool_calls>";
const HUNYUAN_CALLS_END: &[u8] = b"</tool_calls>";

impl Framed {
    /// The opening token (empty for the bare forms).
    pub(crate) fn tag(self) -> &'static [u8] {
        match self {
            Framed::KimiK2 => KIMI_CALL,
            Framed::DeepSeek => DS_CALL,
            Framed::Dsml => DSML_INVOKE,
            Framed::Dsml41 => DSML41_INVOKE,
            Framed::Gemma4 => GEMMA_CALL,
            Framed::KimiK3 => K3_CALL,
            Framed::Harmony => HARMONY,
            Framed::HarmonyRole => HARMONY_START,
            Framed::Mistral => MISTRAL,
            Framed::PythonTag => PYTHON_TAG,
            Framed::PythonStart => PYTHON_START,
            Framed::Lfm2 => LFM2_START,
            Framed::Granite => GRANITE_CALL,
            Framed::Hunyuan => HUNYUAN_CALLS,
            Framed::BareJson | Framed::BarePythonic | Framed::HarmonyLead => b"",
        }
    }

    /// For the forms whose calls follow the opening token and end with their own `]`
    /// or `}`: the tokens that may close the block after them.
    fn list_closer(self) -> &'static [&'static [u8]] {
        match self {
            Framed::PythonStart => &[PYTHON_END],
            Framed::Lfm2 => &[LFM2_END],
            Framed::Hunyuan => &[HUNYUAN_CALLS_END],
            Framed::PythonTag => &[b"<|eom_id|>", b"<|eot_id|>"],
            _ => &[],
        }
    }

    /// Whether the list holds Python calls (`'` quotes strings too).
    fn python(self) -> bool {
        matches!(
            self,
            Framed::BarePythonic | Framed::PythonStart | Framed::Lfm2
        )
    }

    /// What the block is called in messages: its opening token, or a name for the
    /// forms that have none.
    fn label(self) -> String {
        match self {
            Framed::HarmonyLead => "the Harmony message".into(),
            Framed::BareJson => "the JSON call".into(),
            Framed::BarePythonic => "the call list".into(),
            _ => String::from_utf8_lossy(self.tag()).trim().to_string(),
        }
    }

    /// The token after which the arguments are written as JSON, for the dialects that
    /// have one (DeepSeek V3 writes a name there, then a fence: read as raw text).
    fn args_token(self) -> Option<&'static [u8]> {
        match self {
            Framed::KimiK2 => Some(KIMI_ARGS.as_bytes()),
            Framed::DeepSeek => Some(DS_SEP.as_bytes()),
            Framed::Harmony | Framed::HarmonyRole | Framed::HarmonyLead => {
                Some(HARMONY_MESSAGE.as_bytes())
            }
            _ => None,
        }
    }

    /// For the dialects whose values are raw text between an opening tag and its own
    /// closer (DSML parameters, Gemma 4 `<|"|>` strings, Kimi K3 arguments): the
    /// tag's start, what ends the tag (empty: the start is the whole tag) and the
    /// closer. Inside a value only that closer means anything; every other marker is
    /// content.
    pub(crate) fn raw_value(self) -> Option<RawValue> {
        let (open, tag_end, close) = match self {
            Framed::Dsml => (DSML_PARAM, ">", DSML_PARAM_END),
            Framed::Dsml41 => (DSML41_PARAM, ">", DSML41_PARAM_END),
            Framed::Gemma4 => (GEMMA_QUOTE, "", GEMMA_QUOTE),
            Framed::KimiK3 => (K3_ARG, K3_SEP, K3_ARG_END),
            _ => return None,
        };
        Some(RawValue {
            open,
            tag_end,
            close,
        })
    }

    /// Tokens that close the block (consumed), and tokens before which an unclosed
    /// block ends.
    fn ends(self) -> (&'static [&'static [u8]], &'static [&'static [u8]]) {
        match self {
            Framed::KimiK2 => (&[KIMI_CALL_END], &[KIMI_CALL, KIMI_SECTION_END]),
            Framed::DeepSeek => (&[DS_CALL_END], &[DS_CALL, DS_CALLS_END]),
            Framed::Dsml => (
                &[DSML_INVOKE_END],
                &[DSML_INVOKE, DSML_CALLS_END, DSML_TOOL_CALLS_END],
            ),
            Framed::Dsml41 => (&[DSML41_INVOKE_END], &[DSML41_INVOKE, DSML41_CALLS_END]),
            Framed::Gemma4 => (&[GEMMA_CALL_END], &[GEMMA_CALL]),
            Framed::KimiK3 => (&[K3_CALL_END], &[K3_CALL, K3_TOOLS_END]),
            Framed::Harmony | Framed::HarmonyRole | Framed::HarmonyLead => (
                &[b"<|call|>", b"<|end|>", b"<|return|>"],
                &[HARMONY_START, HARMONY],
            ),
            // Ended by their JSON / bracket extent (and the closer after it, if any).
            Framed::Mistral
            | Framed::PythonTag
            | Framed::BareJson
            | Framed::BarePythonic
            | Framed::PythonStart
            | Framed::Lfm2
            | Framed::Granite
            | Framed::Hunyuan => (&[], &[]),
        }
    }
}

/// How a dialect writes a raw value: see [`Framed::raw_value`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawValue {
    pub open: &'static str,
    pub tag_end: &'static str,
    pub close: &'static str,
}

/// The end search of one framed block; positions are relative to the block start.
#[derive(Debug, Clone)]
pub(crate) struct FramedScan {
    pub kind: Framed,
    pos: usize,
    /// For the extent-ended forms: inside the bracketed value.
    extent: Extent,
    /// For a Harmony role header: it was read and names a recipient.
    role_read: bool,
    /// Where the JSON arguments stand, for the dialects whose arguments are JSON.
    args: Args,
    /// Inside a raw parameter value (DSML): only its closer is looked for.
    in_value: bool,
}

/// The JSON arguments of a Kimi K2, DeepSeek V3.1 or Harmony call: their closer is
/// looked for only after the value ends.
#[derive(Debug, Clone)]
enum Args {
    /// Before the token that opens the arguments.
    Seek,
    /// Inside the JSON value that started at `start`.
    In { start: usize, extent: JsonExtent },
    /// After the value (or the arguments are not JSON): markers are markup again.
    Past,
}

#[derive(Debug, Clone, Default)]
struct Extent {
    started: bool,
    depth: u32,
    quote: Option<u8>,
}

/// What the scan decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FramedEnd {
    NeedMore,
    End {
        len: usize,
        closed: bool,
    },
    /// Not this dialect after all: the opener is text.
    NotACall,
}

impl FramedScan {
    pub(crate) fn new(kind: Framed) -> Self {
        Self {
            kind,
            pos: kind.tag().len(),
            extent: Extent::default(),
            role_read: false,
            args: if kind.args_token().is_some() {
                Args::Seek
            } else {
                Args::Past
            },
            in_value: false,
        }
    }

    pub(crate) fn advance(&mut self, b: &[u8], eof: bool) -> FramedEnd {
        let (closers, stops) = self.kind.ends();
        if closers.is_empty() {
            return self.advance_extent(b, eof);
        }
        if matches!(self.kind, Framed::HarmonyRole | Framed::HarmonyLead) && !self.role_read {
            let role = if self.kind == Framed::HarmonyLead {
                harmony_lead(b, eof)
            } else {
                harmony_role(b, eof)
            };
            match role {
                Role::NeedMore => return FramedEnd::NeedMore,
                Role::NotACall => return FramedEnd::NotACall,
                Role::Recipient(body) => {
                    self.role_read = true;
                    self.pos = body;
                }
            }
        }
        loop {
            if let Some(end) = self.json_args(b, eof) {
                return end;
            }
            if let Some(end) = self.raw_value_scan(b, eof) {
                return end;
            }
            let Some(k) = memchr(b'<', &b[self.pos..]) else {
                self.pos = b.len();
                return if eof {
                    FramedEnd::End {
                        len: b.len(),
                        closed: false,
                    }
                } else {
                    FramedEnd::NeedMore
                };
            };
            let q = self.pos + k;
            let mut partial = false;
            match self.args_open(b, q, eof) {
                Prefix::Full => continue,
                Prefix::Partial => partial = true,
                Prefix::No => {}
            }
            match self.value_open(b, q, eof) {
                Prefix::Full => continue,
                Prefix::Partial => partial = true,
                Prefix::No => {}
            }
            for c in closers {
                match prefix(&b[q..], c) {
                    Prefix::Full => {
                        return FramedEnd::End {
                            len: q + c.len(),
                            closed: true,
                        };
                    }
                    Prefix::Partial => partial = true,
                    Prefix::No => {}
                }
            }
            for s in stops {
                match prefix(&b[q..], s) {
                    Prefix::Full => {
                        return FramedEnd::End {
                            len: q,
                            closed: false,
                        };
                    }
                    Prefix::Partial => partial = true,
                    Prefix::No => {}
                }
            }
            if partial && !eof {
                self.pos = q;
                return FramedEnd::NeedMore;
            }
            self.pos = q + 1;
        }
    }

    /// Inside JSON arguments: scans to the value's end. Returns `Some` when the scan
    /// must stop here (more input is needed). An unfinished value at the end of the
    /// input is read again as raw text, so that a malformed value still finds its
    /// closer.
    fn json_args(&mut self, b: &[u8], eof: bool) -> Option<FramedEnd> {
        let Args::In { start, extent } = &mut self.args else {
            return None;
        };
        let start = *start;
        if let Some(end) = extent.advance(b, &mut self.pos) {
            self.pos = end;
        } else if eof {
            self.pos = start;
        } else {
            return Some(FramedEnd::NeedMore);
        }
        self.args = Args::Past;
        None
    }

    /// Inside a raw value: on to its closer. Returns `Some` when the scan must stop
    /// (more input needed, or the output ended inside the value).
    fn raw_value_scan(&mut self, b: &[u8], eof: bool) -> Option<FramedEnd> {
        if !self.in_value {
            return None;
        }
        let close = self.kind.raw_value()?.close.as_bytes();
        if let Some(k) = find(&b[self.pos..], close) {
            self.pos += k + close.len();
            self.in_value = false;
            return None;
        }
        if eof {
            return Some(FramedEnd::End {
                len: b.len(),
                closed: false,
            });
        }
        // The closer may straddle the end of the input so far.
        self.pos = b.len().saturating_sub(close.len() - 1).max(self.pos);
        Some(FramedEnd::NeedMore)
    }

    /// Checks for a raw parameter's opening tag at `b[q]`. `Full`: the scan goes on
    /// inside its value.
    fn value_open(&mut self, b: &[u8], q: usize, eof: bool) -> Prefix {
        let Some(raw) = self.kind.raw_value() else {
            return Prefix::No;
        };
        match prefix(&b[q..], raw.open.as_bytes()) {
            Prefix::Full => {}
            Prefix::Partial if !eof => return Prefix::Partial,
            _ => return Prefix::No,
        }
        let after = q + raw.open.len();
        match find(&b[after..], raw.tag_end.as_bytes()) {
            Some(k) => {
                self.in_value = true;
                self.pos = after + k + raw.tag_end.len();
                Prefix::Full
            }
            None if !eof => Prefix::Partial,
            None => Prefix::No,
        }
    }

    /// Checks for the token that opens the arguments at `b[q]`. `Full`: it is there and
    /// the scan goes on after it (inside the JSON value when one starts there).
    fn args_open(&mut self, b: &[u8], q: usize, eof: bool) -> Prefix {
        let Args::Seek = self.args else {
            return Prefix::No;
        };
        let Some(token) = self.kind.args_token() else {
            return Prefix::No;
        };
        match prefix(&b[q..], token) {
            Prefix::Full => {}
            Prefix::Partial if !eof => return Prefix::Partial,
            _ => return Prefix::No,
        }
        let after = q + token.len();
        let v = after
            + b[after..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        match b.get(v) {
            None if !eof => return Prefix::Partial,
            Some(b'{' | b'[') if self.names_recipient(&b[..q]) => {
                self.args = Args::In {
                    start: v,
                    extent: JsonExtent::default(),
                };
                self.pos = v;
            }
            _ => {
                self.args = Args::Past;
                self.pos = after;
            }
        }
        Prefix::Full
    }

    /// Whether a Harmony message is addressed to a tool (its JSON is arguments, not
    /// prose that happens to start with a brace); always for the other dialects.
    fn names_recipient(&self, head: &[u8]) -> bool {
        match self.kind {
            Framed::Harmony => find(head, b"to=").is_some(),
            _ => true,
        }
    }

    /// Mistral, bare JSON and bare pythonic blocks end where their bracketed value
    /// (after an optional `NAME[ARGS]`) closes.
    fn advance_extent(&mut self, b: &[u8], eof: bool) -> FramedEnd {
        let need = |eof: bool, len: usize| {
            if eof {
                FramedEnd::End { len, closed: false }
            } else {
                FramedEnd::NeedMore
            }
        };
        while !self.extent.started {
            while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            let Some(&c) = b.get(self.pos) else {
                return need(eof, b.len());
            };
            match c {
                b'{' | b'[' => self.extent.started = true,
                // `NAME[ARGS]{..}` / `NAME[CALL_ID]id[ARGS]{..}`: on to the JSON.
                _ if self.kind == Framed::Mistral => {
                    // `NAME{..}`: the `[ARGS]` token dropped when special tokens are skipped.
                    let name = super::mistral::name_len(&b[self.pos..]);
                    if name > 0 && b.get(self.pos + name) == Some(&b'{') {
                        self.pos += name;
                        self.extent.started = true;
                        continue;
                    }
                    let line_end = memchr(b'\n', &b[self.pos..]).map_or(b.len(), |k| self.pos + k);
                    let line = &b[self.pos..line_end];
                    let Some(k) = find(line, b"[ARGS]") else {
                        // Prose after the token, up to the next `[TOOL_CALLS]`: not a
                        // call, and the next token is looked at on its own.
                        return if line_end < b.len() || eof || find(line, MISTRAL).is_some() {
                            FramedEnd::NotACall
                        } else {
                            FramedEnd::NeedMore
                        };
                    };
                    if !super::mistral::is_head(&line[..k]) {
                        return FramedEnd::NotACall;
                    }
                    self.pos += k + b"[ARGS]".len();
                    while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
                        self.pos += 1;
                    }
                    match b.get(self.pos) {
                        None => return need(eof, b.len()),
                        Some(b'{') => self.extent.started = true,
                        Some(_) => return FramedEnd::NotACall,
                    }
                }
                _ => return FramedEnd::NotACall,
            }
        }
        let python = self.kind.python();
        while self.pos < b.len() {
            let c = b[self.pos];
            match self.extent.quote {
                Some(q) => {
                    if c == b'\\' {
                        if self.pos + 1 >= b.len() {
                            return need(eof, b.len());
                        }
                        self.pos += 2;
                        continue;
                    }
                    if c == q {
                        self.extent.quote = None;
                    }
                }
                None => match c {
                    b'"' => self.extent.quote = Some(c),
                    b'\'' if python => self.extent.quote = Some(c),
                    b'{' | b'[' | b'(' => self.extent.depth += 1,
                    b'}' | b']' | b')' => {
                        self.extent.depth = self.extent.depth.saturating_sub(1);
                        if self.extent.depth == 0 {
                            let end = self.pos + 1;
                            // Llama 3 joins parallel calls with `;` on one line.
                            if matches!(self.kind, Framed::BareJson | Framed::PythonTag) {
                                match joined_next(b, end) {
                                    Joined::Unknown if !eof => return FramedEnd::NeedMore,
                                    Joined::At(next) => {
                                        self.pos = next;
                                        continue;
                                    }
                                    _ => {}
                                }
                            }
                            return self.list_end(b, end, eof);
                        }
                    }
                    _ => {}
                },
            }
            self.pos += 1;
        }
        need(eof, b.len())
    }
}

impl FramedScan {
    /// A list that closed at `end`: the block takes the closer right after it (blanks
    /// between), when its form has one.
    fn list_end(&self, b: &[u8], end: usize, eof: bool) -> FramedEnd {
        let done = FramedEnd::End {
            len: end,
            closed: true,
        };
        let closers = self.kind.list_closer();
        if closers.is_empty() {
            return done;
        }
        let at = end
            + b[end..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        if at == b.len() && !eof {
            return FramedEnd::NeedMore;
        }
        let mut partial = false;
        for closer in closers {
            match prefix(&b[at..], closer) {
                Prefix::Full => {
                    return FramedEnd::End {
                        len: at + closer.len(),
                        closed: true,
                    };
                }
                Prefix::Partial => partial = true,
                Prefix::No => {}
            }
        }
        if partial && !eof {
            FramedEnd::NeedMore
        } else {
            done
        }
    }
}

/// What a Harmony role header (`<|start|>ROLE ...`) says.
pub(crate) enum Role {
    NeedMore,
    /// No call: another role, no recipient, or no channel after it.
    NotACall,
    /// `assistant to=RECIPIENT<|channel|>`: where the channel's name starts.
    Recipient(usize),
}

/// Reads `<|start|>assistant to=RECIPIENT<|channel|>` at the start of `b`: the header
/// must be the assistant's, name a recipient, and be followed by the channel. The
/// recipient may stand in the channel's header instead (`<|start|>assistant<|channel|>
/// commentary to=RECIPIENT ...`, the other place the format allows it): the role header
/// is then the call's too, not text left between calls.
fn harmony_role(b: &[u8], eof: bool) -> Role {
    let in_role = header(b, HARMONY_START.len(), eof, |header| {
        let mut words = header.split_whitespace();
        words.next() == Some("assistant")
            && words
                .find_map(|w| w.strip_prefix("to="))
                .is_some_and(|to| !to.is_empty() && to != "assistant")
    });
    if !matches!(in_role, Role::NotACall) {
        return in_role;
    }
    match header(b, HARMONY_START.len(), eof, |h| h.trim() == "assistant") {
        Role::Recipient(channel) => channel_names_recipient(b, channel, eof),
        other => other,
    }
}

/// Whether the channel header starting at `channel` (up to the next special token)
/// names a recipient: then the message is a call, read from `channel` on.
fn channel_names_recipient(b: &[u8], channel: usize, eof: bool) -> Role {
    let window = &b[channel..b.len().min(channel + HARMONY_ROLE_MAX)];
    let Some(k) = find(window, b"<|") else {
        return if eof || window.len() == HARMONY_ROLE_MAX {
            Role::NotACall
        } else {
            Role::NeedMore
        };
    };
    let names = String::from_utf8_lossy(&window[..k])
        .split_whitespace()
        .find_map(|w| w.strip_prefix("to=").map(str::to_string))
        .is_some_and(|to| !to.is_empty() && to != "assistant");
    if names {
        Role::Recipient(channel)
    } else {
        Role::NotACall
    }
}

/// Reads ` to=RECIPIENT<|channel|>` at the start of an output (the role was prompted).
pub(crate) fn harmony_lead(b: &[u8], eof: bool) -> Role {
    let lead = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    match prefix(&b[lead..], b"to=") {
        Prefix::Full => {}
        Prefix::Partial if !eof && lead < HARMONY_ROLE_MAX => return Role::NeedMore,
        _ => return Role::NotACall,
    }
    header(b, 0, eof, |header| {
        let mut words = header.split_whitespace();
        words
            .next()
            .and_then(|w| w.strip_prefix("to="))
            .is_some_and(|to| !to.is_empty() && to != "assistant")
            && words.next().is_none()
    })
}

/// The header from `from` to the first special token, which must be `<|channel|>`, read
/// by `names_recipient`.
fn header(b: &[u8], from: usize, eof: bool, names_recipient: impl Fn(&str) -> bool) -> Role {
    let window = &b[from..b.len().min(from + HARMONY_ROLE_MAX)];
    let Some(k) = find(window, b"<|") else {
        return if eof || window.len() == HARMONY_ROLE_MAX {
            Role::NotACall
        } else {
            Role::NeedMore
        };
    };
    let q = from + k;
    match prefix(&b[q..], HARMONY) {
        Prefix::Full => {}
        Prefix::Partial if !eof => return Role::NeedMore,
        _ => return Role::NotACall,
    }
    if names_recipient(&String::from_utf8_lossy(&b[from..q])) {
        Role::Recipient(q + HARMONY.len())
    } else {
        Role::NotACall
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// Parses one framed block into a call (or calls) and its problems.
pub(crate) fn parse(kind: Framed, block: &str, closed: bool, opts: &ParseOptions) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let tag = kind.tag().len();
    let body = &block[tag..];
    let (closers, _) = kind.ends();
    let mut body = body;
    // `closed` without a closer: ended by its extent, or by the end of the message
    // where the dialect's convention ends it there.
    let mut was_closed = closed;
    for c in closers.iter().chain(kind.list_closer()) {
        if let Some(stripped) = body
            .trim_end()
            .strip_suffix(std::str::from_utf8(c).unwrap_or_default())
        {
            body = stripped;
            was_closed = true;
        }
    }
    match kind {
        Framed::KimiK2 => super::framed_calls::kimi(body, tag, opts, &mut out),
        Framed::DeepSeek => super::framed_calls::deepseek(body, tag, opts, &mut out),
        Framed::Dsml => super::framed_calls::dsml(body, tag, DSML_TOKENS, opts, &mut out),
        Framed::Dsml41 => super::framed_calls::dsml(body, tag, DSML41_TOKENS, opts, &mut out),
        Framed::KimiK3 => super::kimi_k3::kimi_k3(body, tag, opts, &mut out),
        Framed::Harmony | Framed::HarmonyRole | Framed::HarmonyLead => {
            super::framed_calls::harmony(body, tag, opts, &mut out)
        }
        Framed::Gemma4 => super::gemma::gemma(body, tag, opts, &mut out),
        Framed::Mistral => super::mistral::mistral(body, tag, opts, &mut out),
        Framed::PythonTag | Framed::BareJson => {
            super::json_calls::json_calls(body, tag, opts, &mut out)
        }
        Framed::Granite | Framed::Hunyuan => {
            super::json_calls::json_calls(body, tag, opts, &mut out)
        }
        Framed::PythonStart | Framed::Lfm2 | Framed::BarePythonic => {
            super::pythonic::pythonic(body, tag, opts, &mut out)
        }
    }
    // A Harmony message or a `<|python_tag|>` call that read whole ends where the
    // next message or call begins: its stop token was stripped, which is the
    // dialect's convention, not a fault.
    let by_convention = matches!(
        kind,
        Framed::Harmony | Framed::HarmonyRole | Framed::HarmonyLead | Framed::PythonTag
    );
    if out.call.is_some() && !was_closed && !by_convention {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            format!("{} was never closed", kind.label()),
        );
    }
    out
}

/// A call from a name and its JSON arguments text.
pub(super) fn json_call(
    name: &str,
    id: Option<String>,
    args: &str,
    at: usize,
    opts: &ParseOptions,
    out: &mut BlockOutcome,
) -> Option<RawCall> {
    let name = name.trim();
    if !is_tool_name(name) {
        out.problem(
            ProblemKind::MissingName,
            at,
            format!(
                "'{}' does not name a tool; kept as text",
                super::block::short(name)
            ),
        );
        return None;
    }
    let args = args.trim();
    let map = if args.is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(args) {
            Ok(Value::Object(m)) => m,
            Ok(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
                Ok(Value::Object(m)) => m,
                _ => return invalid(name, at, out),
            },
            _ => return invalid(name, at, out),
        }
    };
    let arguments = coerce_json_args(map, opts.schema(name), at, &mut out.problems);
    Some(RawCall {
        id,
        name: name.to_string(),
        arguments,
    })
}

fn invalid(name: &str, at: usize, out: &mut BlockOutcome) -> Option<RawCall> {
    let mut problem = Problem::new(
        ProblemKind::InvalidJson,
        at,
        format!("the arguments of '{name}' are not a JSON object; kept as text"),
    );
    problem.tool = Some(name.to_string());
    out.problems.push(problem);
    None
}

pub(super) fn set_calls(out: &mut BlockOutcome, calls: Vec<RawCall>) {
    let mut it = calls.into_iter();
    out.call = it.next();
    out.more = it.collect();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn splits() {
        assert_eq!(
            super::super::pythonic::split_top("a=1, b='x,y', c=[1, 2]", b','),
            vec!["a=1", " b='x,y'", " c=[1, 2]"]
        );
    }

    #[test]
    fn extent_ends_at_close() {
        let mut s = FramedScan::new(Framed::Mistral);
        let b = b"[TOOL_CALLS]get[ARGS]{\"a\": \"}\"} tail";
        assert_eq!(
            s.advance(b, false),
            FramedEnd::End {
                len: b.len() - 5,
                closed: true
            }
        );
    }
}
