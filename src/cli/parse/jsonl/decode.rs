//! The `text` field of one `--jsonl` line. The usual line, `{"text": "..."}` and
//! nothing else, is read by hand: the string is scanned eight bytes at a time, borrowed
//! from the line when it has no escapes and unescaped into a reused buffer when it
//! has. Anything else (more fields, odd escapes, invalid UTF-8, not JSON) goes through
//! serde_json, which also words the errors; both paths give the same text.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

/// What one line holds.
pub(super) enum Decoded<'a> {
    Text(&'a str),
    /// Why the line has no text to parse.
    Bad(String),
}

/// Reused from line to line: the buffer escaped strings are decoded into.
#[derive(Default)]
pub(super) struct Decoder {
    buf: String,
}

impl Decoder {
    pub fn text_of<'a>(&'a mut self, line: &'a [u8]) -> Decoded<'a> {
        self.buf.clear();
        match fast(line, &mut self.buf) {
            Some(Fast::Borrowed(text)) => Decoded::Text(text),
            Some(Fast::Decoded) => Decoded::Text(&self.buf),
            None => match slow(line) {
                Ok(Cow::Borrowed(text)) => Decoded::Text(text),
                Ok(Cow::Owned(text)) => {
                    self.buf = text;
                    Decoded::Text(&self.buf)
                }
                Err(reason) => Decoded::Bad(reason),
            },
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
    /// Unescaped into the buffer.
    Decoded,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// `{"text": STRING}` with only JSON whitespace around; `None` for anything else.
fn fast<'a>(line: &'a [u8], buf: &mut String) -> Option<Fast<'a>> {
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
    let (end, escaped) = string_end(line, start)?;
    i = skip_ws(line, end + 1);
    if line.get(i) != Some(&b'}') || skip_ws(line, i + 1) != line.len() {
        return None;
    }
    // Escapes are ASCII: the raw string is valid UTF-8 exactly when its text is.
    let raw = std::str::from_utf8(&line[start..end]).ok()?;
    if !escaped {
        return Some(Fast::Borrowed(raw));
    }
    unescape(raw, buf)?;
    Some(Fast::Decoded)
}

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// Whether any of the eight bytes is a quote, a backslash or a control character: the
/// bytes a JSON string escapes.
pub(super) fn special_in(word: u64) -> bool {
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    (below_space | zero_in(word ^ (ONES * u64::from(b'"'))) | zero_in(word ^ (ONES * u64::from(b'\\'))))
        != 0
}

/// The closing quote of the string whose content starts at `from`, and whether the
/// string has escapes; `None` when it is not closed or holds a raw control character
/// (serde_json then says so).
fn string_end(b: &[u8], from: usize) -> Option<(usize, bool)> {
    let mut i = from;
    let mut escaped = false;
    loop {
        while let Some(chunk) = b.get(i..i + 8) {
            let word = u64::from_ne_bytes(chunk.try_into().ok()?);
            if special_in(word) {
                break;
            }
            i += 8;
        }
        match *b.get(i)? {
            b'"' => return Some((i, escaped)),
            b'\\' => {
                escaped = true;
                // The escaped byte is checked when unescaping; skipping it keeps `\"` in.
                i += 2;
            }
            c if c < 0x20 => return None,
            _ => i += 1,
        }
    }
}

/// JSON string content (without its quotes) to its text; `None` on a bad escape.
fn unescape(raw: &str, buf: &mut String) -> Option<()> {
    buf.reserve(raw.len());
    let b = raw.as_bytes();
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'\\', &b[from..]).map(|i| from + i) {
        buf.push_str(&raw[from..at]);
        let (ch, len) = match *b.get(at + 1)? {
            b'"' => ('"', 2),
            b'\\' => ('\\', 2),
            b'/' => ('/', 2),
            b'b' => ('\u{8}', 2),
            b'f' => ('\u{c}', 2),
            b'n' => ('\n', 2),
            b'r' => ('\r', 2),
            b't' => ('\t', 2),
            b'u' => unicode(b, at)?,
            _ => return None,
        };
        buf.push(ch);
        from = at + len;
    }
    buf.push_str(&raw[from..]);
    Some(())
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
    use super::*;

    fn both(line: &str) -> (Option<String>, Result<String, String>) {
        let mut buf = String::new();
        let fast = fast(line.as_bytes(), &mut buf).map(|f| match f {
            Fast::Borrowed(s) => s.to_string(),
            Fast::Decoded => buf.clone(),
        });
        (fast, slow(line.as_bytes()).map(Cow::into_owned))
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
                format!(" {{ \"text\" :\t{} }} \r", serde_json::to_string(t).unwrap()),
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
        let mut buf = String::new();
        assert!(fast(b"{\"text\": \"\xff\"}", &mut buf).is_none());
    }
}
