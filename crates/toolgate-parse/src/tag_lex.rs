//! The small lexing pieces of the tagged dialects (Qwen3-coder, invoke): which tag
//! starts here, a parameter tag's key, the length of a (drifted) close tag, what a
//! tool name looks like, and an attribute's value.

use super::entities::decode;
use super::opener::{Prefix, prefix};
use super::tagged_walk::PARAM_CLOSE_STEM;

pub(super) enum Which {
    NeedMore,
    None,
    Tag(usize),
}

pub(super) fn which(rest: &[u8], tags: &[&[u8]], eof: bool) -> Which {
    let mut partial = false;
    for (i, t) in tags.iter().enumerate() {
        match prefix(rest, t) {
            Prefix::Full => return Which::Tag(i),
            Prefix::Partial => partial = true,
            Prefix::No => {}
        }
    }
    if partial && !eof {
        Which::NeedMore
    } else {
        Which::None
    }
}

pub(super) enum KeyAt<'a> {
    NeedMore,
    /// No `>` before a line break or `<`: not a tag.
    NotATag,
    Key(&'a [u8]),
}

/// The key text of a parameter tag whose key starts at `from`, up to its `>`.
pub(super) fn tag_key(b: &[u8], from: usize, eof: bool) -> KeyAt<'_> {
    for (i, &c) in b[from..].iter().enumerate() {
        match c {
            b'>' => return KeyAt::Key(&b[from..from + i]),
            b'\n' | b'<' => return KeyAt::NotATag,
            _ if i > 200 => return KeyAt::NotATag,
            _ => {}
        }
    }
    if eof { KeyAt::NotATag } else { KeyAt::NeedMore }
}

/// The length of a parameter close tag at `rest` (which starts `</parameter`):
/// `</parameter>`, or a drifted `</parameterXYZ>` / `</parameter` without `>`.
/// `Some((0, _))`: not a close tag. `None`: more input is needed.
pub(super) fn close_len(rest: &[u8], eof: bool) -> Option<(usize, bool)> {
    let stem = PARAM_CLOSE_STEM.len();
    let mut i = stem;
    while i < rest.len() && (rest[i].is_ascii_alphanumeric() || rest[i] == b'_') {
        i += 1;
    }
    if i == rest.len() {
        return if eof { Some((i, true)) } else { None };
    }
    match rest[i] {
        b'>' => Some((i + 1, i > stem)),
        // `</parameter` cut short: the line or the next tag goes on.
        c if c.is_ascii_whitespace() || c == b'<' => {
            if i == stem {
                Some((i, true))
            } else {
                Some((0, false))
            }
        }
        _ => Some((0, false)),
    }
}

/// A tool name as models write it: no spaces, no markup.
pub(crate) fn is_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/'))
}

/// [`attribute`] on the raw bytes of a tag: the common `name="value"` (first, no
/// entities) is read without building a string of the whole tag.
pub(crate) fn attribute_bytes(attrs: &[u8], name: &str) -> Option<String> {
    match attribute_borrowed(attrs, name) {
        Some(value) => (!value.is_empty()).then(|| value.to_string()),
        None => attribute(&String::from_utf8_lossy(attrs), name),
    }
}

/// The trimmed value of a leading `name="value"` (no entities) in a tag's raw bytes,
/// borrowed; `None` when the tag is written otherwise (then see [`attribute`]).
pub(crate) fn attribute_borrowed<'a>(attrs: &'a [u8], name: &str) -> Option<&'a str> {
    let start = attrs.iter().position(|c| !c.is_ascii_whitespace())?;
    let after = attrs[start..].strip_prefix(name.as_bytes())?;
    let [b'=', quote @ (b'"' | b'\''), body @ ..] = after else {
        return None;
    };
    let end = memchr::memchr(*quote, body)?;
    if body[..end].contains(&b'&') {
        return None;
    }
    std::str::from_utf8(&body[..end]).ok().map(str::trim)
}

/// The trimmed text of `raw` (lossy only when it is not UTF-8).
pub(crate) fn trimmed_text(raw: &[u8]) -> String {
    match std::str::from_utf8(raw) {
        Ok(s) => s.trim().to_string(),
        Err(_) => String::from_utf8_lossy(raw).trim().to_string(),
    }
}

/// The value of attribute `name` in a tag's attribute text (quotes `"` or `'`).
pub(crate) fn attribute(attrs: &str, name: &str) -> Option<String> {
    let mut rest = attrs;
    while let Some(at) = rest.find(name) {
        let before_ok = at == 0 || rest.as_bytes()[at - 1].is_ascii_whitespace();
        let after = rest[at + name.len()..].trim_start();
        if before_ok && let Some(v) = after.strip_prefix('=') {
            let v = v.trim_start();
            let quote = v.chars().next()?;
            if quote == '"' || quote == '\'' {
                let body = &v[1..];
                let end = body.find(quote)?;
                let value = decode(&body[..end]).trim().to_string();
                return Some(value).filter(|s| !s.is_empty());
            }
            let end = v
                .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .unwrap_or(v.len());
            return Some(v[..end].to_string()).filter(|s| !s.is_empty());
        }
        rest = &rest[at + name.len()..];
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn attribute_fast_path_agrees() {
        for raw in [
            " name=\"web_search\"",
            "name='q'",
            " name=\" spaced \" x=1",
            " name=\"a &amp; b\"",
            " xname=\"x\" name=y",
            " name=\"\"",
            " name=\"unclosed",
            "",
        ] {
            assert_eq!(
                attribute_bytes(raw.as_bytes(), "name"),
                attribute(raw, "name"),
                "{raw}"
            );
        }
    }

    #[test]
    fn attributes() {
        assert_eq!(
            attribute(" name=\"web_search\"", "name"),
            Some("web_search".into())
        );
        assert_eq!(
            attribute(" id='1' name='a &amp; b'", "name"),
            Some("a & b".into())
        );
        assert_eq!(attribute(" xname=\"x\" name=y", "name"), Some("y".into()));
        assert_eq!(attribute(" name=\"\"", "name"), None);
    }

    #[test]
    fn close_tags() {
        assert_eq!(close_len(b"</parameter>x", false), Some((12, false)));
        assert_eq!(close_len(b"</parameter1>x", false), Some((13, true)));
        assert_eq!(close_len(b"</parameter\n", false), Some((11, true)));
        assert_eq!(close_len(b"</parameter", false), None);
        assert_eq!(close_len(b"</parameters-x", false), Some((0, false)));
    }
}
