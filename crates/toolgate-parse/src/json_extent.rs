//! The extent of a JSON value, found incrementally: strings and their escapes are
//! respected, so a marker quoted inside a string argument is content and never ends
//! (or opens) a call. The framed dialects whose arguments are JSON look for their
//! closer only after the value ends.

use memchr::memchr2;

/// The scan of one JSON object or array, kept between chunks.
#[derive(Debug, Clone, Default)]
pub(crate) struct JsonExtent {
    depth: u32,
    in_str: bool,
    /// A `\` in a string was the last byte seen: the next byte is escaped.
    escaped: bool,
}

impl JsonExtent {
    /// Scans `b` from `*pos`, which starts at the value's `{` or `[`. Returns where the
    /// value ends (one past its last byte), or `None` when more input is needed (`*pos`
    /// is then the end of `b`).
    pub(crate) fn advance(&mut self, b: &[u8], pos: &mut usize) -> Option<usize> {
        while *pos < b.len() {
            if self.escaped {
                self.escaped = false;
                *pos += 1;
                continue;
            }
            if self.in_str {
                match memchr2(b'"', b'\\', &b[*pos..]) {
                    None => *pos = b.len(),
                    Some(k) => {
                        let q = *pos + k;
                        *pos = q + 1;
                        if b[q] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_str = false;
                        }
                    }
                }
                continue;
            }
            let c = b[*pos];
            *pos += 1;
            match c {
                b'"' => self.in_str = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(*pos);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn whole(s: &str) -> Option<usize> {
        let mut pos = 0;
        JsonExtent::default().advance(s.as_bytes(), &mut pos)
    }

    #[test]
    fn ends_after_the_value_not_at_a_quoted_marker() {
        let s = r#"{"a": "x}<|call|>\"}", "b": [1, "]"]}<|call|>"#;
        assert_eq!(whole(s), Some(s.len() - "<|call|>".len()));
    }

    #[test]
    fn any_split_gives_the_same_end() {
        let s = r#"{"a": "q\\\"}", "b": {"c": "\\"}} tail"#;
        let want = whole(s);
        assert_eq!(want, Some(s.len() - " tail".len()));
        for cut in 0..=s.len() {
            let mut ext = JsonExtent::default();
            let mut pos = 0;
            let first = ext.advance(&s.as_bytes()[..cut], &mut pos);
            let got = first.or_else(|| ext.advance(s.as_bytes(), &mut pos));
            assert_eq!(got, want, "split at {cut}");
        }
    }

    #[test]
    fn unfinished_value_needs_more() {
        assert_eq!(whole(r#"{"a": "unterminated}"#), None);
    }
}
