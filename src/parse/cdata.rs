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

/// A section that ended with `]]>`: where it ended and the element it was in, so that
/// a section right after it (`]]><![CDATA[`, the escape for `]]>`) is in that element.
pub(crate) type Previous = Option<(usize, Option<Range<usize>>)>;

/// The element (its name's range in `src`) a CDATA section whose `<![CDATA[` is at
/// `cdata` was opened in: the start tag right before it, blanks between allowed, or the
/// element of the section that ended exactly there.
pub(crate) fn element(src: &[u8], cdata: usize, previous: &Previous) -> Option<Range<usize>> {
    if let Some((end, element)) = previous
        && *end == cdata
    {
        return element.clone();
    }
    let mut gt = cdata;
    while gt > 0 && cdata - gt < MAX_GAP && src[gt - 1].is_ascii_whitespace() {
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
/// `name` is its element's. At `eof` a `</NAME` cut short is no close.
pub(crate) fn end(
    src: &[u8],
    content: usize,
    mut pos: usize,
    name: Option<&[u8]>,
    eof: bool,
) -> End {
    loop {
        let Some(k) = BRACKET_GT.find(&src[pos..]).map(|k| pos + k) else {
            // A last `]` may begin a `]>`.
            return End::NeedMore(src.len().saturating_sub(1).max(pos));
        };
        if k > content && src[k - 1] == b']' {
            return End::Closed(k - 1);
        }
        if let Some(name) = name {
            match closes(&src[k + 2..], name) {
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
        element(src.as_bytes(), at, &None).map(|r| &src[r])
    }

    #[test]
    fn the_element_is_the_start_tag_right_before() {
        assert_eq!(name_of("<q><![CDATA[x", "<![CDATA["), Some("q"));
        assert_eq!(name_of("<q a=\"1\">\n  <![CDATA[x", "<![CDATA["), Some("q"));
        assert_eq!(name_of("<q>text<![CDATA[x", "<![CDATA["), None);
        assert_eq!(name_of("<q/><![CDATA[x", "<![CDATA["), None);
        assert_eq!(name_of("</q><![CDATA[x", "<![CDATA["), None);
        assert_eq!(name_of("<![CDATA[x", "<![CDATA["), None);
        // A section right after one that ended with `]]>` is in the same element.
        let src = b"<q><![CDATA[a]]]]><![CDATA[>b";
        let first = element(src, 3, &None);
        assert_eq!(first, Some(1..2));
        assert_eq!(element(src, 18, &Some((18, first))), Some(1..2));
    }

    #[test]
    fn ends() {
        let s = b"<![CDATA[2*4]></q> tail";
        assert_eq!(end(s, 9, 9, Some(b"q"), true), End::Slipped(12));
        assert_eq!(end(s, 9, 9, Some(b"p"), true), End::NeedMore(s.len() - 1));
        assert_eq!(end(s, 9, 9, None, true), End::NeedMore(s.len() - 1));
        let s = b"<![CDATA[a]]></q>";
        assert_eq!(end(s, 9, 9, Some(b"q"), true), End::Closed(10));
        let s = b"<![CDATA[a]>b]]]></q>";
        assert_eq!(end(s, 9, 9, Some(b"q"), true), End::Closed(14));
        let s = b"<![CDATA[]></q";
        assert_eq!(end(s, 9, 9, Some(b"q"), false), End::NeedMore(9));
        assert_eq!(end(s, 9, 9, Some(b"q"), true), End::NeedMore(s.len() - 1));
    }
}
