//! Bytes split anywhere (even inside a character) to text, chunk by chunk: invalid
//! UTF-8 becomes U+FFFD exactly as `String::from_utf8_lossy` does on the whole input.

use std::borrow::Cow;

#[derive(Debug, Default)]
pub(crate) struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub(crate) fn decode<'a>(&mut self, chunk: &'a [u8]) -> Cow<'a, str> {
        if self.pending.is_empty()
            && let Ok(s) = std::str::from_utf8(chunk)
        {
            return Cow::Borrowed(s);
        }
        self.pending.extend_from_slice(chunk);
        let mut text = String::new();
        let mut consumed = 0;
        loop {
            match std::str::from_utf8(&self.pending[consumed..]) {
                Ok(s) => {
                    text.push_str(s);
                    consumed = self.pending.len();
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    let rest = &self.pending[consumed..];
                    text.push_str(std::str::from_utf8(&rest[..valid]).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            text.push('\u{FFFD}');
                            consumed += valid + n;
                        }
                        None => {
                            consumed += valid;
                            break;
                        }
                    }
                }
            }
        }
        self.pending.drain(..consumed);
        Cow::Owned(text)
    }

    /// What is left at the end of input: an incomplete character, replaced.
    pub(crate) fn finish(&mut self) -> &'static str {
        if self.pending.is_empty() {
            ""
        } else {
            self.pending.clear();
            "\u{FFFD}"
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::Utf8Decoder;

    #[test]
    fn any_split_matches_lossy() {
        let input: &[u8] = b"a\xE2\x82\xACb\xF0\x9F\x98\x80\xFFc\xE2\x82";
        let whole = String::from_utf8_lossy(input).into_owned();
        for size in 1..input.len() {
            let mut d = Utf8Decoder::default();
            let mut out = String::new();
            for chunk in input.chunks(size) {
                out.push_str(&d.decode(chunk));
            }
            out.push_str(d.finish());
            assert_eq!(out, whole, "chunk size {size}");
        }
    }
}
