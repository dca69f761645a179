//! Finding where a call's block ends, incrementally: each scanner keeps its position
//! (and whether it is inside CDATA, a JSON string or a parameter value) between chunks,
//! so the bytes of a block are looked at once however it arrives.

use memchr::{memchr, memchr2};

use super::cdata;
use super::framed::{Framed, FramedEnd, FramedScan};
use super::glm_scan::GlmScan;
use super::opener::{FUNCTION, Prefix, TOOL_CALL, TOOL_CALL_END, prefix};
use super::options::{Dialect, ParseOptions};
use super::tagged_walk::{INVOKE, QWEN, Walk, Walked};

/// The dialect a block turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Xml,
    Hermes,
    /// Qwen3-coder; `wrapped` when inside `<tool_call>`.
    Qwen {
        wrapped: bool,
    },
    Invoke,
    /// GLM-4.x `<tool_call>NAME<arg_key>..`.
    Glm,
    Framed(Framed),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanResult {
    NeedMore,
    /// The block is `block[..len]`; `closed` when its closing tag was seen.
    End {
        len: usize,
        closed: bool,
    },
    /// The input ended inside the block, which is `block[..len]`: it was not closed.
    Cut {
        len: usize,
    },
    /// A `<tool_call>` that opens nothing we read: its tag is text.
    NotACall,
}

/// The state of one block's end search. Positions are relative to the block start.
#[derive(Debug, Clone)]
pub(crate) enum BlockScan {
    /// After `<tool_call>`: which dialect follows is not known yet.
    Detect {
        pos: usize,
    },
    Xml(XmlScan),
    Hermes(HermesScan),
    Qwen {
        walk: Box<Walk>,
        wrapped: bool,
    },
    Invoke(Box<Walk>),
    Glm(GlmScan),
    Framed(FramedScan),
}

#[derive(Debug, Clone)]
pub(crate) struct XmlScan {
    pos: usize,
    /// Inside a CDATA section: where its content starts (0: not inside one).
    content: usize,
    /// Where the current section's run of adjacent sections starts.
    run: usize,
    runs: cdata::Runs,
}

#[derive(Debug, Clone)]
pub(crate) struct HermesScan {
    pos: usize,
    in_str: bool,
    depth: u32,
    json_end: Option<usize>,
}

impl BlockScan {
    pub(crate) fn tool_call() -> Self {
        BlockScan::Detect {
            pos: TOOL_CALL.len(),
        }
    }
    pub(crate) fn function() -> Self {
        BlockScan::Qwen {
            walk: Box::new(Walk::new(&QWEN, false, FUNCTION.len())),
            wrapped: false,
        }
    }
    pub(crate) fn framed(kind: Framed) -> Self {
        BlockScan::Framed(FramedScan::new(kind))
    }
    /// Bytes of the opening tag, turned into text when the block is no call.
    pub(crate) fn opener_len(&self) -> usize {
        match self {
            BlockScan::Framed(f) => f.kind.tag().len().max(1),
            _ => TOOL_CALL.len(),
        }
    }
    pub(crate) fn invoke() -> Self {
        BlockScan::Invoke(Box::new(Walk::new(&INVOKE, false, "<invoke".len())))
    }

    /// The finished walk of a Qwen3-coder or invoke block: the parser reads its
    /// parameters from it instead of walking the block a second time.
    pub(crate) fn into_walk(self) -> Option<Box<Walk>> {
        match self {
            BlockScan::Qwen { walk, .. } | BlockScan::Invoke(walk) if walk.done() => Some(walk),
            _ => None,
        }
    }

    /// The block's dialect, once it is known.
    pub(crate) fn kind(&self) -> Option<BlockKind> {
        match self {
            BlockScan::Detect { .. } => None,
            BlockScan::Xml(_) => Some(BlockKind::Xml),
            BlockScan::Hermes(_) => Some(BlockKind::Hermes),
            BlockScan::Qwen { wrapped, .. } => Some(BlockKind::Qwen { wrapped: *wrapped }),
            BlockScan::Invoke(_) => Some(BlockKind::Invoke),
            BlockScan::Glm(_) => Some(BlockKind::Glm),
            BlockScan::Framed(f) => Some(BlockKind::Framed(f.kind)),
        }
    }

    /// Scans `block` (from the block's first byte to the end of the input so far).
    pub(crate) fn advance(&mut self, block: &[u8], eof: bool, opts: &ParseOptions) -> ScanResult {
        let dialect = opts.dialect;
        loop {
            let result = match self {
                BlockScan::Detect { pos } => match detect(block, pos, eof, dialect) {
                    Detected::NeedMore => return ScanResult::NeedMore,
                    Detected::NotACall => return ScanResult::NotACall,
                    Detected::Is(next) => {
                        *self = next;
                        continue;
                    }
                },
                BlockScan::Xml(x) => scan_xml(block, x, eof),
                BlockScan::Hermes(h) => scan_hermes(block, h),
                BlockScan::Glm(g) => g.advance(block, eof),
                BlockScan::Framed(f) => match f.advance(block, eof) {
                    FramedEnd::NeedMore => ScanResult::NeedMore,
                    FramedEnd::NotACall => return ScanResult::NotACall,
                    FramedEnd::End { len, closed } => ScanResult::End { len, closed },
                },
                BlockScan::Qwen { walk, .. } | BlockScan::Invoke(walk) => {
                    match walk.advance(block, eof, opts) {
                        Walked::NeedMore => ScanResult::NeedMore,
                        Walked::End { len, closed } => ScanResult::End { len, closed },
                    }
                }
            };
            return match result {
                ScanResult::NeedMore if eof => ScanResult::Cut {
                    len: self.eof_len(block.len()),
                },
                // The scanners that end a block at the end of input themselves.
                ScanResult::End { len, closed: false } if eof && len == block.len() => {
                    ScanResult::Cut { len }
                }
                other => other,
            };
        }
    }

    /// Where an unclosed block ends at the end of input.
    fn eof_len(&self, len: usize) -> usize {
        match self {
            BlockScan::Hermes(HermesScan {
                json_end: Some(end),
                ..
            }) => *end,
            _ => len,
        }
    }
}

enum Detected {
    NeedMore,
    NotACall,
    Is(BlockScan),
}

fn detect(block: &[u8], pos: &mut usize, eof: bool, dialect: Dialect) -> Detected {
    while *pos < block.len() && block[*pos].is_ascii_whitespace() {
        *pos += 1;
    }
    let Some(&first) = block.get(*pos) else {
        return if eof {
            Detected::NotACall
        } else {
            Detected::NeedMore
        };
    };
    let start = *pos;
    match first {
        b'{' | b'[' if dialect.allows_hermes() => Detected::Is(BlockScan::Hermes(HermesScan {
            pos: start,
            in_str: false,
            depth: 0,
            json_end: None,
        })),
        b'<' => match prefix(&block[start..], FUNCTION) {
            Prefix::Full if dialect.allows_qwen() => Detected::Is(BlockScan::Qwen {
                walk: Box::new(Walk::new(&QWEN, true, start + FUNCTION.len())),
                wrapped: true,
            }),
            Prefix::Partial if !eof => Detected::NeedMore,
            Prefix::Full => Detected::NotACall,
            // `<tool_call>` then `<parameter=` with no `<function=` line: Qwen3-coder
            // that lost its function line (the tool is inferred from the keys).
            _ if dialect.allows_qwen() && prefix(&block[start..], b"<parameter=") != Prefix::No => {
                if prefix(&block[start..], b"<parameter=") == Prefix::Partial {
                    if eof {
                        return Detected::NotACall;
                    }
                    return Detected::NeedMore;
                }
                Detected::Is(BlockScan::Qwen {
                    walk: Box::new(Walk::headless(start)),
                    wrapped: true,
                })
            }
            _ if dialect.allows_xml() => Detected::Is(BlockScan::Xml(XmlScan {
                pos: start,
                content: 0,
                run: 0,
                runs: cdata::Runs::default(),
            })),
            _ => Detected::NotACall,
        },
        // A GLM name: a letter or digit of any script, or `_` (`翻译文本`, `get_time`).
        _ if starts_name(&block[start..]) && dialect.allows_special(Dialect::Glm) => {
            Detected::Is(BlockScan::Glm(GlmScan::new(start)))
        }
        _ => Detected::NotACall,
    }
}

/// Whether `b` starts with a letter or a digit (of any script) or `_`.
fn starts_name(b: &[u8]) -> bool {
    match b.first() {
        Some(c) if c.is_ascii() => c.is_ascii_alphanumeric() || *c == b'_',
        Some(_) => {
            let head = &b[..b.len().min(4)];
            let text = match std::str::from_utf8(head) {
                Ok(t) => t,
                Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
            };
            text.chars().next().is_some_and(char::is_alphanumeric)
        }
        None => false,
    }
}

/// Checks the tags in `tags` at `block[q..]`: the index of the one that is there,
/// `Err(())` when one could still be there once more input arrives.
fn which(block: &[u8], q: usize, tags: &[&[u8]]) -> Result<Option<usize>, ()> {
    let rest = &block[q..];
    let mut partial = false;
    for (i, tag) in tags.iter().enumerate() {
        match prefix(rest, tag) {
            Prefix::Full => return Ok(Some(i)),
            Prefix::Partial => partial = true,
            Prefix::No => {}
        }
    }
    if partial { Err(()) } else { Ok(None) }
}

/// The next of `tags` from `pos` on: its position and index. `None` means more input is
/// needed (`pos` is left where the search goes on).
pub(crate) fn next_tag(block: &[u8], pos: &mut usize, tags: &[&[u8]]) -> Option<(usize, usize)> {
    loop {
        let Some(i) = memchr(b'<', &block[*pos..]) else {
            *pos = block.len();
            return None;
        };
        let q = *pos + i;
        match which(block, q, tags) {
            Err(()) => {
                *pos = q;
                return None;
            }
            Ok(Some(t)) => return Some((q, t)),
            Ok(None) => *pos = q + 1,
        }
    }
}

fn scan_xml(block: &[u8], x: &mut XmlScan, eof: bool) -> ScanResult {
    const TAGS: [&[u8]; 4] = [b"<![CDATA[", TOOL_CALL_END, TOOL_CALL, b"</tool_calls>"];
    loop {
        if x.content > 0 {
            match cdata::end(block, x.content, x.pos, x.run, eof) {
                cdata::End::Closed(at) => {
                    x.pos = at + 3;
                    x.runs.closed(x.pos);
                }
                cdata::End::Slipped(at) => x.pos = at + 2,
                cdata::End::NeedMore(resume) => {
                    x.pos = resume;
                    return ScanResult::NeedMore;
                }
            }
            x.content = 0;
        }
        let Some((q, tag)) = next_tag(block, &mut x.pos, &TAGS) else {
            return ScanResult::NeedMore;
        };
        match tag {
            0 => {
                x.run = x.runs.open(q);
                x.content = q + TAGS[0].len();
                x.pos = q + TAGS[0].len();
            }
            1 => {
                return ScanResult::End {
                    len: q + TOOL_CALL_END.len(),
                    closed: true,
                };
            }
            // A new call, or the end of a wrapper: this one ends unclosed.
            _ => {
                return ScanResult::End {
                    len: q,
                    closed: false,
                };
            }
        }
    }
}

fn scan_hermes(block: &[u8], h: &mut HermesScan) -> ScanResult {
    loop {
        if let Some(json_end) = h.json_end {
            while h.pos < block.len() && block[h.pos].is_ascii_whitespace() {
                h.pos += 1;
            }
            if h.pos == block.len() {
                return ScanResult::NeedMore;
            }
            // Several objects separated by commas (xLAM style): scan on.
            if matches!(block[h.pos], b',' | b'{') {
                h.json_end = None;
                continue;
            }
            return match prefix(&block[h.pos..], TOOL_CALL_END) {
                Prefix::Full => ScanResult::End {
                    len: h.pos + TOOL_CALL_END.len(),
                    closed: true,
                },
                Prefix::Partial => ScanResult::NeedMore,
                Prefix::No => ScanResult::End {
                    len: json_end,
                    closed: false,
                },
            };
        }
        if h.in_str {
            match memchr2(b'"', b'\\', &block[h.pos..]) {
                None => {
                    h.pos = block.len();
                    return ScanResult::NeedMore;
                }
                Some(i) => {
                    let q = h.pos + i;
                    if block[q] == b'\\' {
                        if q + 1 >= block.len() {
                            h.pos = q;
                            return ScanResult::NeedMore;
                        }
                        h.pos = q + 2;
                    } else {
                        h.in_str = false;
                        h.pos = q + 1;
                    }
                }
            }
            continue;
        }
        let Some(&b) = block.get(h.pos) else {
            return ScanResult::NeedMore;
        };
        match b {
            b'"' => h.in_str = true,
            b'{' | b'[' => h.depth += 1,
            b'}' | b']' => {
                h.depth = h.depth.saturating_sub(1);
                if h.depth == 0 {
                    h.json_end = Some(h.pos + 1);
                }
            }
            b'<' => match which(block, h.pos, &[TOOL_CALL_END, TOOL_CALL]) {
                Err(()) => return ScanResult::NeedMore,
                Ok(Some(0)) => {
                    return ScanResult::End {
                        len: h.pos + TOOL_CALL_END.len(),
                        closed: true,
                    };
                }
                Ok(Some(_)) => {
                    return ScanResult::End {
                        len: h.pos,
                        closed: false,
                    };
                }
                Ok(None) => {}
            },
            _ => {}
        }
        h.pos += 1;
    }
}
