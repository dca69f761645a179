//! The `text` field of one `--jsonl` line. The usual line, `{"text": "..."}` and
//! nothing else, is read by hand: the string is scanned eight bytes at a time, borrowed
//! from the line when it has no escapes and unescaped into a reused buffer when it
//! has. Anything else (more fields, odd escapes, invalid UTF-8, not JSON) goes through
//! serde_json, which also words the errors; both paths give the same text.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::special::next_special;

/// What one line holds.
pub(super) enum Decoded<'a> {
    Text(&'a str),
    /// Why the line has no text to parse.
    Bad(String),
}

/// Reused from line to line: the buffers escaped strings are decoded into.
#[derive(Default)]
pub(super) struct Decoder {
    buf: Vec<u8>,
    owned: String,
}

impl Decoder {
    pub fn text_of<'a>(&'a mut self, line: &'a [u8]) -> Decoded<'a> {
        self.buf.clear();
        match fast(line, &mut self.buf) {
            Some(Fast::Borrowed(text)) => return Decoded::Text(text),
            // Escapes decode to whole characters: the text is valid UTF-8 exactly when
            // the raw string is.
            Some(Fast::Decoded) => {
                if let Ok(text) = std::str::from_utf8(&self.buf) {
                    return Decoded::Text(text);
                }
            }
            None => {}
        }
        match slow(line) {
            Ok(Cow::Borrowed(text)) => Decoded::Text(text),
            Ok(Cow::Owned(text)) => {
                self.owned = text;
                Decoded::Text(&self.owned)
            }
            Err(reason) => Decoded::Bad(reason),
        }
    }
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// serde_json's reading, for every line the fast path does not take.
fn slow(line: &[u8]) -> Result<Cow<'_, str>, String> {
    if let Ok(l) = serde_json::from_slice::<Line>(line) {
        return Ok(l.text);
    }
    // The slowest path says why.
    let value: Value =
        serde_json::from_slice(line).map_err(|e| format!("not a JSON object: {e}"))?;
    match value.get("text") {
        Some(Value::String(s)) => Ok(Cow::Owned(s.clone())),
        Some(_) => Err("the \"text\" field is not a string".to_string()),
        None => Err("no \"text\" field".to_string()),
    }
}

enum Fast<'a> {
    Borrowed(&'a str),
    /// Unescaped into the buffer (not yet checked to be UTF-8).
    Decoded,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// `{"text": STRING}` with only JSON whitespace around; `None` for anything else.
fn fast<'a>(line: &'a [u8], buf: &mut Vec<u8>) -> Option<Fast<'a>> {
    let mut i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(line, i + 1);
    if line.get(i..i + 6) != Some(b"\"text\"") {
        return None;
    }
    i = skip_ws(line, i + 6);
    if line.get(i) != Some(&b':') {
        return None;
    }
    i = skip_ws(line, i + 1);
    if line.get(i) != Some(&b'"') {
        return None;
    }
    let start = i + 1;
    let (end, escaped) = scan_string(line, start, buf)?;
    i = skip_ws(line, end + 1);
    if line.get(i) != Some(&b'}') || skip_ws(line, i + 1) != line.len() {
        return None;
    }
    if escaped {
        return Some(Fast::Decoded);
    }
    std::str::from_utf8(&line[start..end])
        .ok()
        .map(Fast::Borrowed)
}

/// Reads the string whose content starts at `from` in one pass: runs without escapes
/// are skipped eight bytes at a time ([`next_special`]) and, once an escape is met, copied to `buf` with
/// the escapes decoded. Returns the closing quote's index and whether there were
/// escapes; `None` when the string is not closed, holds a raw control character or a
/// bad escape (serde_json then says so).
fn scan_string(b: &[u8], from: usize, buf: &mut Vec<u8>) -> Option<(usize, bool)> {
    let mut i = from;
    // Where the run not yet copied to `buf` starts.
    let mut run = from;
    let mut escaped = false;
    loop {
        i = next_special(b, i);
        match *b.get(i)? {
            b'"' => {
                if escaped {
                    buf.extend_from_slice(&b[run..i]);
                }
                return Some((i, escaped));
            }
            b'\\' => {
                if !escaped {
                    escaped = true;
                    buf.reserve(b.len() - from);
                }
                buf.extend_from_slice(&b[run..i]);
                i += unescape_one(b, i, buf)?;
                run = i;
            }
            // A raw control character.
            _ => return None,
        }
    }
}

/// The escape at `at` decoded onto `buf`; its length in the input.
fn unescape_one(b: &[u8], at: usize, buf: &mut Vec<u8>) -> Option<usize> {
    let byte = match *b.get(at + 1)? {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'u' => {
            let (ch, len) = unicode(b, at)?;
            buf.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
            return Some(len);
        }
        _ => return None,
    };
    buf.push(byte);
    Some(2)
}

/// A `\uXXXX` escape at `at` (with its low surrogate when it is a high one).
fn unicode(b: &[u8], at: usize) -> Option<(char, usize)> {
    let hi = hex4(b.get(at + 2..at + 6)?)?;
    if !(0xD800..0xDC00).contains(&hi) {
        // A lone low surrogate is not a char: `from_u32` refuses it.
        return char::from_u32(hi).map(|c| (c, 6));
    }
    if b.get(at + 6..at + 8)? != b"\\u" {
        return None;
    }
    let lo = hex4(b.get(at + 8..at + 12)?)?;
    if !(0xDC00..0xE000).contains(&lo) {
        return None;
    }
    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).map(|c| (c, 12))
}

fn hex4(h: &[u8]) -> Option<u32> {
    h.iter()
        .try_fold(0u32, |acc, &d| Some(acc * 16 + char::from(d).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn both(line: &str) -> (Option<String>, Result<String, String>) {
        let mut buf = Vec::new();
        let fast = fast(line.as_bytes(), &mut buf).map(|f| match f {
            Fast::Borrowed(s) => s.to_string(),
            Fast::Decoded => String::from_utf8(buf.clone()).unwrap(),
        });
        let mut decoder = Decoder::default();
        let via_decoder = match decoder.text_of(line.as_bytes()) {
            Decoded::Text(t) => Ok(t.to_string()),
            Decoded::Bad(reason) => Err(reason),
        };
        let slow = slow(line.as_bytes()).map(Cow::into_owned);
        assert_eq!(via_decoder, slow, "{line}");
        (fast, slow)
    }

    #[test]
    fn fast_path_agrees_with_serde_json() {
        let texts = [
            "",
            "plain",
            "exactly8",
            "a \"quoted\" \\ back/slash\n\t\r\u{8}\u{c}\u{1}\u{1f}",
            "non-ASCII: é 中文 😀 and \u{7f}",
            "<tool_call><name>x</name></tool_call>\nmore text after a newline",
        ];
        for t in texts {
            for line in [
                serde_json::json!({ "text": t }).to_string(),
                format!(
                    " {{ \"text\" :\t{} }} \r",
                    serde_json::to_string(t).unwrap()
                ),
            ] {
                let (fast, slow) = both(&line);
                assert_eq!(fast.as_deref(), Some(t), "{line}");
                assert_eq!(slow.as_deref(), Ok(t), "{line}");
            }
        }
        // Escapes serde_json does not write, and surrogate pairs.
        for (line, text) in [
            (r#"{"text": "\u00e9\/\u4e2D\ud83d\ude00"}"#, "é/中😀"),
            (r#"{"text": "\u0041\"x"}"#, "A\"x"),
        ] {
            assert_eq!(both(line), (Some(text.to_string()), Ok(text.to_string())));
        }
    }

    #[test]
    fn odd_lines_leave_the_fast_path() {
        for line in [
            r#"{"text": "a", "meta": 1}"#,
            r#"{"meta": 1, "text": "a"}"#,
            r#"{"text": "a"} x"#,
            r#"{"text": "a"#,
            r#"{"text": "a\"}"#,
            r#"{"text": 1}"#,
            "{\"text\": \"raw\u{1}control\"}",
            r#"{"text": "\ud800 lone"}"#,
            r#"{"text": "\udc00 lone"}"#,
            r#"{"text": "\ud800\u0041"}"#,
            r#"{"text": "\x"}"#,
            r#"{"text": "\u12"}"#,
            r#"{"text": "\u12g4"}"#,
            "not json",
            "",
        ] {
            assert_eq!(both(line).0, None, "{line}");
        }
        let mut buf = Vec::new();
        assert!(fast(b"{\"text\": \"\xff\"}", &mut buf).is_none());
        // Invalid UTF-8 in an escaped string is caught after decoding.
        let line = b"{\"text\": \"\\n\xff\"}";
        assert!(matches!(fast(line, &mut buf), Some(Fast::Decoded)));
        assert!(std::str::from_utf8(&buf).is_err());
        let mut decoder = Decoder::default();
        assert!(
            matches!(decoder.text_of(line), Decoded::Bad(r) if r.contains("not a JSON object"))
        );
    }
}
