//! A lenient tokenizer for the XML inside one call block: tags, text, CDATA. Anything
//! that only looks like markup (`x < 10`, `a <= b`) comes out as text, never an error.

use std::ops::Range;
use std::sync::LazyLock;

use memchr::{memchr, memmem};

use super::cdata;

/// The longest run of attributes read as one tag.
pub(crate) const MAX_TAG: usize = 1024;

static COMMENT_END: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"-->"));

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token<'a> {
    /// Raw text, entities not yet decoded.
    Text(&'a str),
    /// The content of a CDATA section, and how it ended.
    CData { content: &'a str, end: CdataEnd },
    /// `<name ...>` or `<name .../>`; `span` covers the whole tag.
    Start {
        name: &'a str,
        span: Range<usize>,
        empty: bool,
    },
    /// `</name>`.
    End { name: &'a str, span: Range<usize> },
}

/// How a CDATA section ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CdataEnd {
    /// `]]>`.
    Closed,
    /// `]>` right before its element's closing tag (see `cdata.rs`).
    Slipped,
    /// The input ended inside it.
    Unterminated,
}

pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    /// The runs of adjacent CDATA sections (see `cdata.rs`).
    runs: cdata::Runs,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str, pos: usize) -> Self {
        Self {
            src,
            pos,
            runs: cdata::Runs::default(),
        }
    }

    /// The position of the next token.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Continues at `pos` (forward only).
    pub(crate) fn seek(&mut self, pos: usize) {
        self.pos = self.pos.max(pos);
    }
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':') || b >= 0x80
}

/// The end of a name starting at `i` (which is a name start).
fn name_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_name_byte(b[i]) {
        i += 1;
    }
    i
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let b = self.src.as_bytes();
        let start = self.pos;
        if start >= b.len() {
            return None;
        }
        if b[start] != b'<' {
            let end = memchr(b'<', &b[start..]).map_or(b.len(), |k| start + k);
            self.pos = end;
            return Some(Token::Text(&self.src[start..end]));
        }
        let rest = &b[start..];
        if rest.get(1) == Some(&b'!') && rest.starts_with(b"<![CDATA[") {
            let from = start + 9;
            let run = self.runs.open(start);
            let (content, end) = match cdata::end(b, from, from, run, true) {
                cdata::End::Closed(at) => {
                    self.pos = at + 3;
                    self.runs.closed(self.pos);
                    (&self.src[from..at], CdataEnd::Closed)
                }
                cdata::End::Slipped(at) => {
                    self.pos = at + 2;
                    (&self.src[from..at], CdataEnd::Slipped)
                }
                cdata::End::NeedMore(_) => {
                    self.pos = b.len();
                    (&self.src[from..], CdataEnd::Unterminated)
                }
            };
            return Some(Token::CData { content, end });
        }
        if rest.get(1) == Some(&b'!')
            && rest.starts_with(b"<!--")
            && let Some(k) = COMMENT_END.find(&b[start + 4..])
        {
            self.pos = start + 4 + k + 3;
            return self.next();
        }
        if let Some(token) = self.tag(start) {
            return Some(token);
        }
        self.pos = start + 1;
        Some(Token::Text(&self.src[start..start + 1]))
    }
}

impl<'a> Lexer<'a> {
    /// A start or end tag at `start`, or `None` when the `<` is just text.
    fn tag(&mut self, start: usize) -> Option<Token<'a>> {
        let b = self.src.as_bytes();
        let closing = b.get(start + 1) == Some(&b'/');
        let name_start = start + 1 + usize::from(closing);
        if !is_name_start(*b.get(name_start)?) {
            return None;
        }
        let name_end = name_end(b, name_start);
        let name = &self.src[name_start..name_end];
        let mut i = name_end;
        if closing {
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if b.get(i) != Some(&b'>') {
                return None;
            }
            self.pos = i + 1;
            return Some(Token::End {
                name,
                span: start..i + 1,
            });
        }
        // Attributes: up to `>`, quotes respected; a `<` first means this is no tag.
        // Tags are short: a bound keeps a stray quote from making the scan quadratic.
        let limit = b.len().min(name_end + MAX_TAG);
        let mut quote = None;
        while i < limit {
            let c = b[i];
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    b'"' | b'\'' => quote = Some(c),
                    b'<' => return None,
                    b'>' => {
                        let empty = b[i - 1] == b'/';
                        self.pos = i + 1;
                        return Some(Token::Start {
                            name,
                            span: start..i + 1,
                            empty,
                        });
                    }
                    _ if i == name_end && !c.is_ascii_whitespace() && c != b'/' => return None,
                    _ => {}
                },
            }
            i += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn tokens(s: &str) -> Vec<Token<'_>> {
        Lexer::new(s, 0).collect()
    }

    #[test]
    fn prose_markup_is_text() {
        let t = tokens("x < 10 and a<=b");
        assert!(t.iter().all(|t| matches!(t, Token::Text(_))));
    }

    #[test]
    fn tags_and_cdata() {
        let t = tokens("<a x=\"1>2\"><![CDATA[v]]></a ><b/>");
        assert!(matches!(
            t[0],
            Token::Start {
                name: "a",
                empty: false,
                ..
            }
        ));
        assert!(matches!(
            t[1],
            Token::CData {
                content: "v",
                end: CdataEnd::Closed
            }
        ));
        assert!(matches!(t[2], Token::End { name: "a", .. }));
        assert!(matches!(
            t[3],
            Token::Start {
                name: "b",
                empty: true,
                ..
            }
        ));
    }
}
