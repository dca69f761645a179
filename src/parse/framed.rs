//! The dialects framed by special tokens, as the model servers' parsers know them:
//! Kimi K2, DeepSeek V3 / V3.1 / V3.2 (DSML), gpt-oss Harmony, Mistral (both forms),
//! Llama 3.x (`<|python_tag|>`) and Llama 4 (`<|python_start|>`). Each has an opener,
//! a scan for the end of its block, and a parser from the block to a call. Bare Llama
//! JSON and bare pythonic lists (no special token) are here too, for when the dialect
//! is asked for by name.

use memchr::memchr;
use serde_json::{Map, Value};

use super::block::{BlockOutcome, RawCall, coerce_json_args, coerce_param, group_args};
use super::coerce::property;
use super::opener::{Prefix, prefix};
use super::options::ParseOptions;
use super::pyliteral;
use super::tagged_walk::{attribute, is_tool_name};
use super::types::ProblemKind;

/// A dialect whose block starts at a special token (or, for the bare forms, at `{` /
/// `[` at the start of a line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framed {
    /// `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{..}<|tool_call_end|>`.
    KimiK2,
    /// `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```<｜tool▁call▁end｜>`
    /// (V3) or `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{..}<｜tool▁call▁end｜>` (V3.1).
    DeepSeek,
    /// `<｜DSML｜invoke name="N"><｜DSML｜parameter name="K" string="true">v</｜DSML｜parameter></｜DSML｜invoke>`.
    Dsml,
    /// `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{..}<|call|>`.
    Harmony,
    /// `[TOOL_CALLS][{"name": .., "arguments": {..}}]` or `[TOOL_CALLS]NAME[ARGS]{..}`.
    Mistral,
    /// `<|python_tag|>{"name": .., "parameters": {..}}` (several joined by `;`).
    PythonTag,
    /// `<|python_start|>[f(a=1)]<|python_end|>`.
    PythonStart,
    /// `{"name": .., "parameters": {..}}` at a line start (`--dialect llama3` only).
    BareJson,
    /// `[f(a=1, b="x"), g()]` at a line start (`--dialect pythonic` only).
    BarePythonic,
}

pub(crate) const KIMI_CALL: &[u8] = "<|tool_call_begin|>".as_bytes();
const KIMI_CALL_END: &[u8] = "<|tool_call_end|>".as_bytes();
const KIMI_ARGS: &str = "<|tool_call_argument_begin|>";
pub(crate) const KIMI_SECTION: &[u8] = "<|tool_calls_section_begin|>".as_bytes();
pub(crate) const KIMI_SECTION_END: &[u8] = "<|tool_calls_section_end|>".as_bytes();
pub(crate) const DS_CALL: &[u8] = "<｜tool▁call▁begin｜>".as_bytes();
const DS_CALL_END: &[u8] = "<｜tool▁call▁end｜>".as_bytes();
const DS_SEP: &str = "<｜tool▁sep｜>";
pub(crate) const DS_CALLS: &[u8] = "<｜tool▁calls▁begin｜>".as_bytes();
pub(crate) const DS_CALLS_END: &[u8] = "<｜tool▁calls▁end｜>".as_bytes();
pub(crate) const DSML_INVOKE: &[u8] = "<｜DSML｜invoke ".as_bytes();
const DSML_INVOKE_END: &[u8] = "</｜DSML｜invoke>".as_bytes();
const DSML_PARAM: &str = "<｜DSML｜parameter ";
const DSML_PARAM_END: &str = "</｜DSML｜parameter>";
pub(crate) const DSML_CALLS: &[u8] = "<｜DSML｜function_calls>".as_bytes();
pub(crate) const DSML_CALLS_END: &[u8] = "</｜DSML｜function_calls>".as_bytes();
pub(crate) const HARMONY: &[u8] = b"<|channel|>";
const HARMONY_MESSAGE: &str = "<|message|>";
pub(crate) const MISTRAL: &[u8] = b"[TOOL_CALLS]";
pub(crate) const PYTHON_TAG: &[u8] = b"<|python_tag|>";
pub(crate) const PYTHON_START: &[u8] = b"<|python_start|>";
const PYTHON_END: &[u8] = b"<|python_end|>";

impl Framed {
    /// The opening token (empty for the bare forms).
    pub(crate) fn tag(self) -> &'static [u8] {
        match self {
            Framed::KimiK2 => KIMI_CALL,
            Framed::DeepSeek => DS_CALL,
            Framed::Dsml => DSML_INVOKE,
            Framed::Harmony => HARMONY,
            Framed::Mistral => MISTRAL,
            Framed::PythonTag => PYTHON_TAG,
            Framed::PythonStart => PYTHON_START,
            Framed::BareJson | Framed::BarePythonic => b"",
        }
    }

    /// Tokens that close the block (consumed), and tokens before which an unclosed
    /// block ends.
    fn ends(self) -> (&'static [&'static [u8]], &'static [&'static [u8]]) {
        match self {
            Framed::KimiK2 => (&[KIMI_CALL_END], &[KIMI_CALL, KIMI_SECTION_END]),
            Framed::DeepSeek => (&[DS_CALL_END], &[DS_CALL, DS_CALLS_END]),
            Framed::Dsml => (&[DSML_INVOKE_END], &[DSML_INVOKE, DSML_CALLS_END]),
            Framed::Harmony => (
                &[b"<|call|>", b"<|end|>", b"<|return|>"],
                &[b"<|start|>", HARMONY],
            ),
            Framed::PythonTag => (&[b"<|eom_id|>", b"<|eot_id|>"], &[PYTHON_TAG]),
            Framed::PythonStart => (&[PYTHON_END], &[PYTHON_START]),
            // Ended by their JSON / bracket extent.
            Framed::Mistral | Framed::BareJson | Framed::BarePythonic => (&[], &[]),
        }
    }
}

/// The end search of one framed block; positions are relative to the block start.
#[derive(Debug, Clone)]
pub(crate) struct FramedScan {
    pub kind: Framed,
    pos: usize,
    /// For the extent-ended forms: inside the bracketed value.
    extent: Extent,
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
        }
    }

    pub(crate) fn advance(&mut self, b: &[u8], eof: bool) -> FramedEnd {
        let (closers, stops) = self.kind.ends();
        if closers.is_empty() {
            return self.advance_extent(b, eof);
        }
        loop {
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
                    let line_end = memchr(b'\n', &b[self.pos..]).map_or(b.len(), |k| self.pos + k);
                    let Some(k) = find(&b[self.pos..line_end], b"[ARGS]") else {
                        return if line_end < b.len() || eof {
                            FramedEnd::NotACall
                        } else {
                            FramedEnd::NeedMore
                        };
                    };
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
        let python = self.kind == Framed::BarePythonic;
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
                            return FramedEnd::End {
                                len: self.pos + 1,
                                closed: true,
                            };
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
    let mut was_closed = closers.is_empty() && closed;
    for c in closers {
        if let Some(stripped) = body.strip_suffix(std::str::from_utf8(c).unwrap_or_default()) {
            body = stripped;
            was_closed = true;
        }
    }
    match kind {
        Framed::KimiK2 => kimi(body, tag, opts, &mut out),
        Framed::DeepSeek => deepseek(body, tag, opts, &mut out),
        Framed::Dsml => dsml(body, tag, opts, &mut out),
        Framed::Harmony => harmony(body, tag, opts, &mut out),
        Framed::Mistral => mistral(body, tag, opts, &mut out),
        Framed::PythonTag | Framed::BareJson => json_calls(body, tag, opts, &mut out),
        Framed::PythonStart | Framed::BarePythonic => pythonic(body, tag, opts, &mut out),
    }
    if out.call.is_some() && !was_closed {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            format!(
                "{} was never closed",
                String::from_utf8_lossy(kind.tag()).trim()
            ),
        );
    }
    out
}

/// A call from a name and its JSON arguments text.
fn json_call(
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
    out.problem(
        ProblemKind::InvalidJson,
        at,
        format!("the arguments of '{name}' are not a JSON object; kept as text"),
    );
    None
}

fn set_calls(out: &mut BlockOutcome, calls: Vec<RawCall>) {
    let mut it = calls.into_iter();
    out.call = it.next();
    out.more = it.collect();
}

fn kimi(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let Some((head, args)) = body.split_once(KIMI_ARGS) else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a Kimi tool call without <|tool_call_argument_begin|>; kept as text",
        );
        return;
    };
    let id = head.trim();
    // `functions.NAME:IDX`: the name between the prefix and the index.
    let name = id.strip_prefix("functions.").unwrap_or(id);
    let name = name.rsplit_once(':').map_or(name, |(n, _)| n);
    out.call = json_call(
        name,
        Some(id.to_string()).filter(|s| !s.is_empty()),
        args,
        at,
        opts,
        out,
    );
}

fn deepseek(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let Some((left, right)) = body.split_once(DS_SEP) else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a DeepSeek tool call without <｜tool▁sep｜>; kept as text",
        );
        return;
    };
    let (name, args) = if left.trim() == "function" {
        // V3: NAME on the first line, then the arguments in a ```json fence.
        let (name, rest) = right.split_once('\n').unwrap_or((right, ""));
        let rest = rest.trim();
        let rest = rest
            .strip_prefix("```json")
            .or_else(|| rest.strip_prefix("```"))
            .unwrap_or(rest);
        let rest = rest.trim_end();
        (name, rest.strip_suffix("```").unwrap_or(rest))
    } else {
        (left, right)
    };
    out.call = json_call(name, None, args, at, opts, out);
}

fn dsml(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let Some(gt) = body.find('>') else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a DSML invoke without '>'; kept as text",
        );
        return;
    };
    let Some(name) = attribute(&body[..gt], "name").filter(|n| is_tool_name(n)) else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a DSML invoke without a valid name=\"...\"; kept as text",
        );
        return;
    };
    let schema = opts.schema(&name);
    let mut rest = &body[gt + 1..];
    let mut pairs = Vec::new();
    while let Some(p) = rest.find(DSML_PARAM) {
        let after = &rest[p + DSML_PARAM.len()..];
        let Some(gt) = after.find('>') else { break };
        let attrs = &after[..gt];
        let value_start = &after[gt + 1..];
        let (value, next) = match value_start.find(DSML_PARAM_END) {
            Some(e) => (&value_start[..e], &value_start[e + DSML_PARAM_END.len()..]),
            None => {
                out.problem(
                    ProblemKind::ImplicitClose,
                    at,
                    "a DSML parameter was never closed",
                );
                (value_start, "")
            }
        };
        rest = next;
        let Some(key) = attribute(attrs, "name") else {
            continue;
        };
        let is_string = attribute(attrs, "string").as_deref() == Some("true");
        let v = if is_string {
            Value::String(value.to_string())
        } else {
            match serde_json::from_str::<Value>(value.trim()) {
                Ok(v) => match super::coerce::coerce_json(v, property(schema, &key)) {
                    Ok(v) => v,
                    Err(m) => m.kept,
                },
                Err(_) => coerce_param(&key, value.to_string(), property(schema, &key), at, out),
            }
        };
        pairs.push((key, v));
    }
    let arguments = group_args(pairs, schema, at, out);
    out.call = Some(RawCall {
        id: None,
        name,
        arguments,
    });
}

fn harmony(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let Some((header, message)) = body.split_once(HARMONY_MESSAGE) else {
        return;
    };
    // `commentary to=functions.NAME <|constrain|>json`: only a recipient makes a call.
    let Some(to) = header
        .split_whitespace()
        .find_map(|w| w.strip_prefix("to="))
    else {
        return;
    };
    let to = to.split("<|").next().unwrap_or(to);
    let name = to.strip_prefix("functions.").unwrap_or(to);
    out.call = json_call(name, None, message, at, opts, out);
}

fn mistral(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let t = body.trim_start();
    if t.starts_with('[') || t.starts_with('{') {
        json_calls(body, at, opts, out);
        return;
    }
    let Some((head, args)) = t.split_once("[ARGS]") else {
        return;
    };
    let name = head.split_once("[CALL_ID]").map_or(head, |(n, _)| n);
    let id = head
        .split_once("[CALL_ID]")
        .map(|(_, id)| id.trim().to_string())
        .filter(|s| !s.is_empty());
    out.call = json_call(name, id, args, at, opts, out);
}

/// `{"name", "arguments"|"parameters"}` objects: one, a list, or several joined by `;`.
fn json_calls(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let mut values = Vec::new();
    for piece in split_top(body, b';') {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(piece).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => {
                if !piece[stream.byte_offset()..].trim().is_empty() {
                    out.problem(
                        ProblemKind::StrayText,
                        at,
                        "text after the tool call's JSON was ignored",
                    );
                }
                values.push(v);
            }
            Some(Err(e)) => {
                out.problem(
                    ProblemKind::InvalidJson,
                    at,
                    format!("the tool call holds invalid JSON ({e}); kept as text"),
                );
                if values.is_empty() {
                    return;
                }
            }
            None => {}
        }
    }
    let mut calls = Vec::new();
    for v in values.into_iter().flat_map(|v| match v {
        Value::Array(items) => items,
        other => vec![other],
    }) {
        let Value::Object(mut obj) = v else {
            out.problem(
                ProblemKind::SeveralCalls,
                at,
                "a JSON value that is not a call object was dropped",
            );
            continue;
        };
        let Some(Value::String(name)) = obj.remove("name") else {
            out.problem(
                ProblemKind::MissingName,
                at,
                "a JSON object without a \"name\" is not a call",
            );
            continue;
        };
        let args = ["arguments", "parameters", "args"]
            .iter()
            .find_map(|k| obj.remove(*k))
            .unwrap_or(Value::Object(Map::new()));
        let id = match obj.remove("id") {
            Some(Value::String(id)) if !id.is_empty() => Some(id),
            _ => None,
        };
        let text = match &args {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(call) = json_call(&name, id, &text, at, opts, out) {
            calls.push(call);
        }
    }
    set_calls(out, calls);
}

/// `[f(a=1, b="x"), g()]`: Python calls with keyword arguments, values as literals.
fn pythonic(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let t = body.trim();
    let Some(inner) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) else {
        out.problem(
            ProblemKind::InvalidJson,
            at,
            "a pythonic tool call list must be written [f(a=1), ...]; kept as text",
        );
        return;
    };
    let mut calls = Vec::new();
    for item in split_top(inner, b',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some(open) = item.find('(') else {
            return not_pythonic(at, out);
        };
        let Some(args) = item[open + 1..].strip_suffix(')') else {
            return not_pythonic(at, out);
        };
        let name = item[..open].trim();
        if !is_tool_name(name) {
            return not_pythonic(at, out);
        }
        let schema = opts.schema(name);
        let mut map = Map::new();
        for kw in split_top(args, b',') {
            let kw = kw.trim();
            if kw.is_empty() {
                continue;
            }
            let Some((k, v)) = kw.split_once('=') else {
                return not_pythonic(at, out);
            };
            let Some(value) = pyliteral::to_json(v.trim()) else {
                return not_pythonic(at, out);
            };
            map.insert(k.trim().to_string(), value);
        }
        let arguments = coerce_json_args(map, schema, at, &mut out.problems);
        calls.push(RawCall {
            id: None,
            name: name.to_string(),
            arguments,
        });
    }
    if calls.is_empty() {
        return not_pythonic(at, out);
    }
    set_calls(out, calls);
}

fn not_pythonic(at: usize, out: &mut BlockOutcome) {
    out.call = None;
    out.problem(
        ProblemKind::InvalidJson,
        at,
        "not a list of Python calls with literal keyword arguments; kept as text",
    );
}

/// Splits `s` at `sep` outside brackets and string literals.
fn split_top(s: &str, sep: u8) -> Vec<&str> {
    let b = s.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start, mut i) = (0i32, None::<u8>, 0, 0);
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) => {
                if c == b'\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                c if c == sep && depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            },
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts
}

/// GLM-4.5 / 4.6 / 4.7: `<tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>`
/// (4.7 writes no line breaks). Under `auto` the name must be followed by a line break
/// or an `<arg_key>`, so `<tool_call>example</tool_call>` in prose stays prose.
pub(crate) fn parse_glm(block: &str, closed: bool, opts: &ParseOptions) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let at = super::opener::TOOL_CALL.len();
    let mut body = &block[at..];
    if closed {
        body = body.strip_suffix("</tool_call>").unwrap_or(body);
    }
    let name_end = body.find(['\n', '<']).unwrap_or(body.len());
    let name = body[..name_end].trim();
    let rest = &body[name_end..];
    let framed = rest.starts_with('\n') || rest.starts_with("<arg_key>");
    if !is_tool_name(name) || (opts.dialect != super::options::Dialect::Glm && !framed) {
        return out;
    }
    let schema = opts.schema(name);
    let mut pairs = Vec::new();
    let mut rest = rest;
    while let Some(k) = rest.find("<arg_key>") {
        let after = &rest[k + "<arg_key>".len()..];
        let Some(ke) = after.find("</arg_key>") else {
            out.problem(
                ProblemKind::UnclosedTag,
                at,
                "an <arg_key> was never closed",
            );
            break;
        };
        let key = after[..ke].trim().to_string();
        let after = after[ke + "</arg_key>".len()..].trim_start();
        let Some(v) = after.strip_prefix("<arg_value>") else {
            out.problem(
                ProblemKind::StrayText,
                at,
                format!("<arg_key>{key}</arg_key> without an <arg_value>; ignored"),
            );
            rest = after;
            continue;
        };
        let (value, next) = match v.find("</arg_value>") {
            Some(e) => (&v[..e], &v[e + "</arg_value>".len()..]),
            None => {
                out.problem(
                    ProblemKind::ImplicitClose,
                    at,
                    format!("parameter '{key}' was never closed"),
                );
                (v, "")
            }
        };
        rest = next;
        let prop = property(schema, &key);
        let v = match prop {
            Some(_) => coerce_param(&key, value.to_string(), prop, at, &mut out),
            // GLM's template writes non-string values as JSON.
            None => serde_json::from_str::<Value>(value.trim())
                .unwrap_or_else(|_| Value::String(value.to_string())),
        };
        pairs.push((key, v));
    }
    if !closed {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            "<tool_call> was never closed",
        );
    }
    let arguments = group_args(pairs, schema, at, &mut out);
    out.call = Some(RawCall {
        id: None,
        name: name.to_string(),
        arguments,
    });
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn splits() {
        assert_eq!(
            split_top("a=1, b='x,y', c=[1, 2]", b','),
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
