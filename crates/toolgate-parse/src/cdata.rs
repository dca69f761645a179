//! Where a CDATA section ends, one rule for the block-end scanner and the XML lexer: at
//! the first `]]>`, or at a `]>` directly followed by the closing tag of the element the
//! section was opened in (`<q><![CDATA[2*4]></q>`, a small model's slip for `]]>`),
//! which the parser reports. Every other `]>` is content.

use std::ops::Range;
use std::sync::LazyLock;

use memchr::{memmem, memrchr};

use super::opener::Prefix;
use super::xml_lex::{Lexer, MAX_TAG, Token};

static BRACKET_GT: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"]>"));

/// Blanks allowed between an element's start tag and its CDATA section.
const MAX_GAP: usize = 64;

/// The runs of adjacent sections (`]]><![CDATA[`, the escape for `]]>`): a section
/// that starts where the last one ended with `]]>` is in the same element, the one
/// opened right before the run's first section.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Runs {
    /// Where the last section closed by `]]>` ended (0: none has).
    closed_at: usize,
    /// Where the run of the current (or last) section starts.
    run: usize,
}

impl Runs {
    /// A section opens at `cdata`: where its run starts.
    pub(crate) fn open(&mut self, cdata: usize) -> usize {
        if self.closed_at != cdata || cdata == 0 {
            self.run = cdata;
        }
        self.run
    }

    /// The current section ended with `]]>` just before `end`.
    pub(crate) fn closed(&mut self, end: usize) {
        self.closed_at = end;
    }
}

/// The element (its name's range in `src`) a run of CDATA sections starting at `run`
/// was opened in: the start tag right before it, blanks between allowed.
fn element(src: &[u8], run: usize) -> Option<Range<usize>> {
    let mut gt = run;
    while gt > 0 && run - gt < MAX_GAP && src[gt - 1].is_ascii_whitespace() {
        gt -= 1;
    }
    let gt = gt.checked_sub(1).filter(|&g| src[g] == b'>')?;
    let from = gt.saturating_sub(MAX_TAG);
    let lt = from + memrchr(b'<', &src[from..gt])?;
    let tag = std::str::from_utf8(&src[lt..=gt]).ok()?;
    match Lexer::new(tag, 0).next()? {
        Token::Start {
            name,
            span,
            empty: false,
        } if span.end == tag.len() => Some(lt + 1..lt + 1 + name.len()),
        _ => None,
    }
}

/// How a CDATA section ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// `]]>` at this position.
    Closed(usize),
    /// `]>` at this position, right before `</NAME>` of the section's element.
    Slipped(usize),
    /// Neither yet: the search goes on from this position once more input is there.
    NeedMore(usize),
}

/// The end of the CDATA section whose content starts at `content`, searched from `pos`;
/// `run` is where its run of sections starts (see [`Runs`]). The element is looked
/// up only at a `]>` that is not part of `]]>`. At `eof` a `</NAME` cut short is no close.
pub(crate) fn end(src: &[u8], content: usize, mut pos: usize, run: usize, eof: bool) -> End {
    let mut name = None;
    loop {
        let Some(k) = BRACKET_GT.find(&src[pos..]).map(|k| pos + k) else {
            // A last `]` may begin a `]>`.
            return End::NeedMore(src.len().saturating_sub(1).max(pos));
        };
        if k > content && src[k - 1] == b']' {
            return End::Closed(k - 1);
        }
        if let Some(range) = name.get_or_insert_with(|| element(src, run)).clone() {
            match closes(&src[k + 2..], &src[range]) {
                Prefix::Full => return End::Slipped(k),
                Prefix::Partial if !eof => return End::NeedMore(k),
                _ => {}
            }
        }
        pos = k + 1;
    }
}

/// Whether `rest` starts with `</NAME>`.
fn closes(rest: &[u8], name: &[u8]) -> Prefix {
    let mut i = 0;
    for part in [b"</".as_slice(), name, b">"] {
        for &c in part {
            match rest.get(i) {
                None => return Prefix::Partial,
                Some(&r) if r != c => return Prefix::No,
                Some(_) => i += 1,
            }
        }
    }
    Prefix::Full
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn name_of<'a>(src: &'a str, cdata: &str) -> Option<&'a str> {
        let at = src.find(cdata).unwrap();
        element(src.as_bytes(), at).map(|r| &src[r])
    }

    #[test]
    fn the_element_is_the_start_tag_right_before() {
        assert_eq!(name_of("<q><![CDATA[x", "<![CDATA["), Some("q"));
        assert_eq!(name_of("<q a=\"1\">\n  <![CDATA[x", "<![CDATA["), Some("q"));
        assert_eq!(name_of("<q>text<![CDATA[x", "<![CDATA["), None);
        assert_eq!(name_of("<q/><![CDATA[x", "<![CDATA["), None);
        assert_eq!(name_of("</q><![CDATA[x", "<![CDATA["), None);
        assert_eq!(name_of("<![CDATA[x", "<![CDATA["), None);
        // A section right after one that ended with `]]>` is in the same run.
        let mut runs = Runs::default();
        assert_eq!(runs.open(3), 3);
        runs.closed(18);
        assert_eq!(runs.open(18), 3);
        runs.closed(30);
        assert_eq!(runs.open(31), 31);
    }

    #[test]
    fn ends() {
        let s = b"<q><![CDATA[2*4]></q> tail";
        assert_eq!(end(s, 12, 12, 3, true), End::Slipped(15));
        let s = b"<p><![CDATA[2*4]></q> tail";
        assert_eq!(end(s, 12, 12, 3, true), End::NeedMore(s.len() - 1));
        let s = b"x<![CDATA[2*4]></q> tail";
        assert_eq!(end(s, 10, 10, 1, true), End::NeedMore(s.len() - 1));
        let s = b"<q><![CDATA[a]]></q>";
        assert_eq!(end(s, 12, 12, 3, true), End::Closed(13));
        let s = b"<q><![CDATA[a]>b]]]></q>";
        assert_eq!(end(s, 12, 12, 3, true), End::Closed(17));
        let s = b"<q><![CDATA[]></q";
        assert_eq!(end(s, 12, 12, 3, false), End::NeedMore(12));
        assert_eq!(end(s, 12, 12, 3, true), End::NeedMore(s.len() - 1));
    }
}
