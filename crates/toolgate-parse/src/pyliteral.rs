//! Python literals that models write where JSON is wanted (`{'a': True, 'b': None}`,
//! `('x', 1)`), read as JSON. Only what `ast.literal_eval` would accept for dicts,
//! lists, tuples, strings, numbers, `True`, `False` and `None`.

use serde_json::Value;

/// The JSON value of a Python literal, or `None` when `text` is not one.
pub(crate) fn to_json(text: &str) -> Option<Value> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                let (s, next) = string(text, i)?;
                out.push_str(&serde_json::to_string(&s).ok()?);
                i = next;
            }
            b'(' => {
                out.push('[');
                i += 1;
            }
            b')' => {
                out.push(']');
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push_str(match &text[start..i] {
                    "True" | "true" => "true",
                    "False" | "false" => "false",
                    "None" | "null" => "null",
                    _ => return None,
                });
            }
            _ => {
                // Multi-byte characters outside strings are not Python literals.
                if !c.is_ascii() {
                    return None;
                }
                out.push(c as char);
                i += 1;
            }
        }
    }
    // Trailing commas are fine in Python, not in JSON.
    let cleaned = drop_trailing_commas(&out);
    serde_json::from_str(&cleaned).ok()
}

/// A Python string literal starting at `text[at]` (its quote): its value and where
/// it ends.
fn string(text: &str, at: usize) -> Option<(String, usize)> {
    let b = text.as_bytes();
    let quote = b[at];
    let mut s = String::new();
    let mut i = at + 1;
    let mut run = i;
    while i < b.len() {
        match b[i] {
            c if c == quote => {
                s.push_str(&text[run..i]);
                return Some((s, i + 1));
            }
            b'\\' => {
                s.push_str(&text[run..i]);
                let e = *b.get(i + 1)?;
                match e {
                    b'n' => s.push('\n'),
                    b't' => s.push('\t'),
                    b'r' => s.push('\r'),
                    b'0' => s.push('\0'),
                    b'\\' | b'\'' | b'"' => s.push(e as char),
                    _ => {
                        s.push('\\');
                        i += 1;
                        run = i;
                        continue;
                    }
                }
                i += 2;
                run = i;
            }
            b'\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// Removes `,` before `]` or `}` (outside strings: the input is already JSON-quoted).
fn drop_trailing_commas(json: &str) -> String {
    let b = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' && i + 1 < b.len() {
                out.push_str(&json[i..i + 2]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b',' {
            let next = b[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
            if matches!(next, Some(b']' | b'}')) {
                i += 1;
                continue;
            }
        }
        let ch_len = json[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&json[i..i + ch_len]);
        i += ch_len;
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn literals() {
        assert_eq!(to_json("{'key': 'value'}"), Some(json!({"key": "value"})));
        assert_eq!(
            to_json("{'a': True, 'b': None, 'c': [1, 2,], 'd': \"it's\"}"),
            Some(json!({"a": true, "b": null, "c": [1, 2], "d": "it's"}))
        );
        assert_eq!(to_json("('x', 1)"), Some(json!(["x", 1])));
        assert_eq!(to_json("{'a': foo}"), None);
        assert_eq!(to_json("{'a': 'é\\n'}"), Some(json!({"a": "é\n"})));
    }
}
