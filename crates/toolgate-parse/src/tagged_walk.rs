//! The walk through a Qwen3-coder or `<invoke>` call that finds its parameters and its
//! end, incrementally and using the tool's schema: a value ends at a `</parameter>`
//! only when what follows is structure (a parameter the tool has and the call has not
//! given yet, the call's closing tag, another call, or the end of the output), so a
//! value may hold markup, even whole calls, written as text. A parameter tag inside a
//! value opens nothing; only at the start of one of the value's lines, outside a call
//! the value quotes, does it close the value for the model (lenient). The block-end scanner
//! and the block parser run the same walk, so where a block ends and how it reads
//! cannot disagree.

use memchr::memchr;
use serde_json::Value;

use super::opener::{FUNCTION, Prefix, TOOL_CALL, TOOL_CALL_END, prefix};
use super::options::ParseOptions;
use super::tag_lex::{
    KeyAt, Which, attribute_borrowed, attribute_bytes, close_len, is_tool_name, tag_key,
    trimmed_text, which,
};

/// How one dialect writes its tags.
#[derive(Debug)]
pub(crate) struct Syntax {
    /// What opens a parameter, up to its key.
    pub param_open: &'static [u8],
    /// Closes the whole call.
    pub call_close: &'static [u8],
    /// Opens a call of this dialect (inside a value: literal text, counted).
    pub call_open: &'static [u8],
    /// Tags after which an unclosed call ends (another call, a wrapper's end).
    pub call_stops: &'static [&'static [u8]],
    /// What the call's opening tag is called, for messages.
    pub call_tag: &'static str,
    pub qwen: bool,
    /// Between parameters: `param_open`, `call_close`, `</tool_call>`, then `call_stops`.
    between_tags: &'static [&'static [u8]],
    /// After a `</parameter>`: `call_close`, `</tool_call>`, then `call_stops`.
    after_close_tags: &'static [&'static [u8]],
    /// After the call's own closing tag inside a value: `call_stops` (+ `</tool_call>`).
    after_call_close_tags: &'static [&'static [u8]],
}

pub(super) const PARAM_CLOSE_STEM: &[u8] = b"</parameter";

pub(crate) static QWEN: Syntax = Syntax {
    param_open: b"<parameter=",
    call_close: b"</function>",
    call_open: FUNCTION,
    call_stops: &[TOOL_CALL, FUNCTION],
    call_tag: "<function=...>",
    qwen: true,
    between_tags: &[
        b"<parameter=",
        b"</function>",
        TOOL_CALL_END,
        TOOL_CALL,
        FUNCTION,
    ],
    after_close_tags: &[b"</function>", TOOL_CALL_END, TOOL_CALL, FUNCTION],
    after_call_close_tags: &[TOOL_CALL, FUNCTION, TOOL_CALL_END],
};

pub(crate) static INVOKE: Syntax = Syntax {
    param_open: b"<parameter ",
    call_close: b"</invoke>",
    call_open: b"<invoke ",
    call_stops: &[b"<invoke ", b"</function_calls>", b"</minimax:tool_call>"],
    call_tag: "<invoke>",
    qwen: false,
    between_tags: &[
        b"<parameter ",
        b"</invoke>",
        TOOL_CALL_END,
        b"<invoke ",
        b"</function_calls>",
        b"</minimax:tool_call>",
    ],
    after_close_tags: &[
        b"</invoke>",
        TOOL_CALL_END,
        b"<invoke ",
        b"</function_calls>",
        b"</minimax:tool_call>",
    ],
    after_call_close_tags: &[b"<invoke ", b"</function_calls>", b"</minimax:tool_call>"],
};

/// One parameter as the walk found it (byte positions in the block).
#[derive(Debug, Clone)]
pub(crate) struct Param {
    pub key: String,
    /// Where its opening tag starts.
    pub tag: usize,
    pub value: std::ops::Range<usize>,
    /// How the value ended.
    pub end: ValueEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueEnd {
    /// `</parameter>`.
    Closed,
    /// A close tag that drifted (`</parameter1>`, `</parameter` without `>`).
    Drifted,
    /// The next parameter, or the call's end, opened first.
    Implicit,
    /// The output ended.
    Eof,
}

/// Something the walk noticed that the parser reports.
#[derive(Debug, Clone)]
pub(crate) enum Note {
    /// Text between parameters.
    StrayText(usize),
    /// A parameter tag without `>` (the walk stopped there).
    TagWithoutGt(usize),
    /// A parameter without a name.
    NoKey(usize),
}

#[derive(Debug, Clone, Copy, Default)]
struct Depths {
    call: u32,
    tool_call: u32,
}

#[derive(Debug, Clone)]
enum Phase {
    /// Before the tool name (`pos` is where it starts).
    Head,
    /// Between parameters.
    Between,
    /// Inside the value of the last parameter in `params`.
    Value(Depths),
}

/// What a step of the walk decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walked {
    NeedMore,
    /// The call is `block[..len]`; `closed` when its closing tag was seen.
    End {
        len: usize,
        closed: bool,
    },
}

/// The walk's state; it resumes where it stopped when more input arrives.
#[derive(Debug, Clone)]
pub(crate) struct Walk {
    syntax: &'static Syntax,
    wrapped: bool,
    pos: usize,
    phase: Phase,
    /// The tool name, once read (`None` inside: not a valid name).
    pub name: Option<Option<String>>,
    /// Property names of the tool's schema, when it has some.
    known: Option<Vec<String>>,
    pub params: Vec<Param>,
    pub notes: Vec<Note>,
    /// The call's closing tag was seen (`</function>` inside `<tool_call>`).
    pub function_closed: bool,
    /// How the walk ended, once it has.
    ended: Option<bool>,
}

impl Walk {
    /// A walk from `pos`, the first byte of the tool name (after `<function=` or
    /// `<invoke`).
    pub(crate) fn new(syntax: &'static Syntax, wrapped: bool, pos: usize) -> Self {
        Self::with_phase(syntax, wrapped, pos, Phase::Head)
    }

    /// A Qwen3-coder walk inside `<tool_call>` that starts at a `<parameter=` (at
    /// `pos`) with no `<function=` line: the tool is inferred later from its keys.
    pub(crate) fn headless(pos: usize) -> Self {
        let mut w = Self::with_phase(&QWEN, true, pos, Phase::Between);
        w.name = Some(None);
        w
    }

    fn with_phase(syntax: &'static Syntax, wrapped: bool, pos: usize, phase: Phase) -> Self {
        Self {
            syntax,
            wrapped,
            pos,
            phase,
            name: None,
            known: None,
            params: Vec::new(),
            notes: Vec::new(),
            function_closed: false,
            ended: None,
        }
    }

    /// Whether the walk has found the call's end.
    pub(crate) fn done(&self) -> bool {
        self.ended.is_some()
    }

    /// Whether the call's closing tag ended it (once `done`).
    pub(crate) fn closed(&self) -> bool {
        self.ended == Some(true)
    }

    /// Walks `block` (the whole block so far) as far as it decides.
    pub(crate) fn advance(&mut self, b: &[u8], eof: bool, opts: &ParseOptions) -> Walked {
        let walked = self.walk(b, eof, opts);
        if let Walked::End { closed, .. } = walked {
            self.ended = Some(closed);
        }
        walked
    }

    fn walk(&mut self, b: &[u8], eof: bool, opts: &ParseOptions) -> Walked {
        loop {
            let step = match self.phase {
                Phase::Head => self.head(b, eof, opts),
                Phase::Between => self.between(b, eof),
                Phase::Value(d) => self.value(b, eof, d),
            };
            match step {
                Step::Continue => {}
                Step::Stop(w) => return w,
            }
        }
    }

    fn head(&mut self, b: &[u8], eof: bool, opts: &ParseOptions) -> Step {
        let gt = memchr(b'>', &b[self.pos..]).map(|k| self.pos + k);
        let Some(gt) = gt else {
            if eof {
                self.name = Some(None);
                return Step::Stop(Walked::End {
                    len: b.len(),
                    closed: false,
                });
            }
            return Step::Stop(Walked::NeedMore);
        };
        let raw = &b[self.pos..gt];
        let name = if self.syntax.qwen {
            Some(trimmed_text(raw))
        } else {
            attribute_bytes(raw, "name")
        };
        let name = name.filter(|n| is_tool_name(n));
        if let Some(n) = &name {
            self.known = opts.schema(n).and_then(property_names);
        }
        self.name = Some(name);
        self.pos = gt + 1;
        self.phase = Phase::Between;
        Step::Continue
    }

    fn between(&mut self, b: &[u8], eof: bool) -> Step {
        let s = self.syntax;
        loop {
            let Some(k) = memchr(b'<', &b[self.pos..]) else {
                if eof {
                    self.stray(b, b.len());
                    return Step::Stop(Walked::End {
                        len: b.len(),
                        closed: false,
                    });
                }
                return Step::Stop(Walked::NeedMore);
            };
            let q = self.pos + k;
            let rest = &b[q..];
            match which(rest, s.between_tags, eof) {
                Which::NeedMore => return Step::Stop(Walked::NeedMore),
                Which::None => {
                    self.pos = q + 1;
                    continue;
                }
                Which::Tag(0) => {
                    // Notes only once the step is decided: a resumed walk repeats it.
                    let key_start = q + s.param_open.len();
                    let Some(gt) = memchr(b'>', &b[key_start..]).map(|k| key_start + k) else {
                        if !eof {
                            return Step::Stop(Walked::NeedMore);
                        }
                        self.stray(b, q);
                        self.notes.push(Note::TagWithoutGt(q));
                        return Step::Stop(Walked::End {
                            len: b.len(),
                            closed: false,
                        });
                    };
                    self.stray(b, q);
                    let Some(key) = self.key(&b[key_start..gt]) else {
                        self.notes.push(Note::NoKey(q));
                        self.pos = gt + 1;
                        continue;
                    };
                    self.params.push(Param {
                        key,
                        tag: q,
                        value: gt + 1..gt + 1,
                        end: ValueEnd::Eof,
                    });
                    self.pos = gt + 1;
                    self.phase = Phase::Value(Depths::default());
                    return Step::Continue;
                }
                Which::Tag(1) => {
                    self.stray(b, q);
                    let end = q + s.call_close.len();
                    if !self.wrapped {
                        return Step::Stop(Walked::End {
                            len: end,
                            closed: true,
                        });
                    }
                    self.function_closed = true;
                    self.pos = end;
                }
                Which::Tag(2) if s.qwen => {
                    self.stray(b, q);
                    return Step::Stop(Walked::End {
                        len: q + TOOL_CALL_END.len(),
                        closed: true,
                    });
                }
                Which::Tag(_) => {
                    self.stray(b, q);
                    return Step::Stop(Walked::End {
                        len: q,
                        closed: false,
                    });
                }
            }
        }
    }

    fn value(&mut self, b: &[u8], eof: bool, mut d: Depths) -> Step {
        let s = self.syntax;
        loop {
            let Some(k) = memchr(b'<', &b[self.pos..]) else {
                if eof {
                    self.end_value(b.len(), b.len(), ValueEnd::Eof);
                    return Step::Stop(Walked::End {
                        len: b.len(),
                        closed: false,
                    });
                }
                self.pos = b.len();
                self.phase = Phase::Value(d);
                return Step::Stop(Walked::NeedMore);
            };
            let q = self.pos + k;
            let rest = &b[q..];
            // `</parameter` and its drifted forms.
            match prefix(rest, PARAM_CLOSE_STEM) {
                Prefix::Partial if !eof => return self.hold(q, d),
                Prefix::Full => {
                    let Some((len, drifted)) = close_len(rest, eof) else {
                        return self.hold(q, d);
                    };
                    if len == 0 {
                        self.pos = q + 1;
                        continue;
                    }
                    match self.structural_after(b, q + len, eof) {
                        None => return self.hold(q, d),
                        Some(true) => {
                            let how = if drifted {
                                ValueEnd::Drifted
                            } else {
                                ValueEnd::Closed
                            };
                            self.end_value(q, q + len, how);
                            return Step::Continue;
                        }
                        Some(false) => {
                            self.pos = q + len;
                            continue;
                        }
                    }
                }
                _ => {}
            }
            // Another parameter opening.
            match prefix(rest, s.param_open) {
                Prefix::Partial if !eof => return self.hold(q, d),
                Prefix::Full => {
                    let key_start = q + s.param_open.len();
                    match tag_key(b, key_start, eof) {
                        KeyAt::NeedMore => return self.hold(q, d),
                        KeyAt::NotATag => {}
                        KeyAt::Key(raw) => {
                            let quoting = d.call > 0 || d.tool_call > 0;
                            let from = self.params.last().map_or(0, |p| p.value.start);
                            if !quoting && line_start(b, from, q) && self.acceptable_raw(raw) {
                                self.end_value(q, q, ValueEnd::Implicit);
                                return Step::Continue;
                            }
                            // Elsewhere the tag is text: it opens nothing, and the
                            // value still ends at the first `</parameter>` followed
                            // by structure.
                        }
                    }
                    self.pos = q + 1;
                    continue;
                }
                _ => {}
            }
            // Calls written inside the value, and the call's own end.
            let tags: [&[u8]; 4] = [s.call_open, s.call_close, TOOL_CALL, TOOL_CALL_END];
            match which(rest, &tags, eof) {
                Which::NeedMore => return self.hold(q, d),
                Which::None => {}
                Which::Tag(0) => d.call += 1,
                Which::Tag(2) => d.tool_call += 1,
                Which::Tag(3) if !s.qwen => {}
                Which::Tag(t) => {
                    let inner = if t == 1 {
                        &mut d.call
                    } else {
                        &mut d.tool_call
                    };
                    if *inner > 0 {
                        *inner -= 1;
                    } else {
                        let after = q + tags[t].len();
                        match self.ends_call_after(b, after, eof, t == 1) {
                            None => return self.hold(q, d),
                            Some(true) => {
                                self.end_value(q, q, ValueEnd::Implicit);
                                return Step::Continue;
                            }
                            Some(false) => {}
                        }
                    }
                }
            }
            self.pos = q + 1;
        }
    }

    fn hold(&mut self, q: usize, d: Depths) -> Step {
        self.pos = q;
        self.phase = Phase::Value(d);
        Step::Stop(Walked::NeedMore)
    }

    fn end_value(&mut self, value_end: usize, next: usize, how: ValueEnd) {
        if let Some(p) = self.params.last_mut() {
            p.value.end = value_end;
            p.end = how;
        }
        self.pos = next;
        self.phase = Phase::Between;
    }

    /// Reports non-blank text between `self.pos` and `to`.
    fn stray(&mut self, b: &[u8], to: usize) {
        if to > self.pos && !b[self.pos..to].iter().all(u8::is_ascii_whitespace) {
            self.notes.push(Note::StrayText(self.pos));
        }
    }

    fn key(&self, raw: &[u8]) -> Option<String> {
        if self.syntax.qwen {
            Some(trimmed_text(raw)).filter(|k| !k.is_empty())
        } else {
            attribute_bytes(raw, "name")
        }
    }

    /// [`Self::acceptable`] for a tag's raw key text, without copying the usual key.
    fn acceptable_raw(&self, raw: &[u8]) -> bool {
        if self.syntax.qwen {
            // ASCII (and no vertical tab at an edge, which `str::trim` would also
            // drop): the bytes are the key.
            let t = raw.trim_ascii();
            if t.is_ascii() && t.first() != Some(&0x0B) && t.last() != Some(&0x0B) {
                return !t.is_empty() && self.acceptable(t);
            }
        } else if let Some(k) = attribute_borrowed(raw, "name") {
            return !k.is_empty() && self.acceptable(k.as_bytes());
        }
        self.key(raw).is_some_and(|k| self.acceptable(k.as_bytes()))
    }

    /// A parameter that may start here: one the tool has (any, without a schema)
    /// and that the call has not given yet.
    fn acceptable(&self, key: &[u8]) -> bool {
        if self.params.iter().any(|p| p.key.as_bytes() == key) {
            return false;
        }
        match &self.known {
            Some(known) => known.iter().any(|k| k.as_bytes() == key),
            None => true,
        }
    }

    /// Whether what follows a `</parameter>` at `at` is structure: `None` when more
    /// input is needed to tell.
    fn structural_after(&self, b: &[u8], at: usize, eof: bool) -> Option<bool> {
        let mut i = at;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == b.len() {
            return if eof { Some(true) } else { None };
        }
        let rest = &b[i..];
        if rest[0] != b'<' {
            return Some(false);
        }
        let s = self.syntax;
        match prefix(rest, s.param_open) {
            Prefix::Partial => return if eof { Some(false) } else { None },
            Prefix::Full => {
                return match tag_key(b, i + s.param_open.len(), eof) {
                    KeyAt::NeedMore => None,
                    KeyAt::NotATag => Some(false),
                    KeyAt::Key(raw) => Some(self.acceptable_raw(raw)),
                };
            }
            Prefix::No => {}
        }
        match which(rest, s.after_close_tags, eof) {
            Which::NeedMore => None,
            Which::Tag(_) => Some(true),
            Which::None => Some(false),
        }
    }

    /// Whether a call-closing tag met inside a value (`</function>`, `</invoke>` when
    /// `own`, else `</tool_call>`) ends the call: only when what follows it is the end
    /// of the output or of the wrapper, or another call.
    fn ends_call_after(&self, b: &[u8], at: usize, eof: bool, own: bool) -> Option<bool> {
        let mut i = at;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == b.len() {
            return if eof { Some(true) } else { None };
        }
        let rest = &b[i..];
        let all = self.syntax.after_call_close_tags;
        // `</tool_call>` ends a call only after the call's own closing tag.
        let tags = if own && self.syntax.qwen {
            all
        } else {
            &all[..self.syntax.call_stops.len()]
        };
        match which(rest, tags, eof) {
            Which::NeedMore => None,
            Which::Tag(_) => Some(true),
            Which::None => Some(false),
        }
    }
}

enum Step {
    Continue,
    Stop(Walked),
}

/// Whether `b[q]` starts a line of the value that starts at `from`: only blanks
/// between it and the previous line break or the value's start. The templates write
/// every parameter tag on a line of its own, so only there does a parameter tag met
/// inside a value close it implicitly; elsewhere it is text the value quotes.
fn line_start(b: &[u8], from: usize, q: usize) -> bool {
    b[from.min(q)..q]
        .iter()
        .rev()
        .find(|c| !matches!(c, b' ' | b'\t'))
        .is_none_or(|&c| c == b'\n' || c == b'\r')
}

/// The property names of an object schema, when it lists some.
fn property_names(schema: &Value) -> Option<Vec<String>> {
    let props = schema.get("properties")?.as_object()?;
    (!props.is_empty()).then(|| props.keys().cloned().collect())
}
