//! Lenient XML entity decoding for values written without CDATA: the predefined and
//! numeric entities are decoded; a bare `&` or an unknown entity is kept as written
//! (quick-xml's `unescape` rejects both, so only its entity table is used).

use std::borrow::Cow;

use memchr::memchr;
use quick_xml::escape::resolve_predefined_entity;

/// The longest entity body we try to decode (`#x10FFFF` and the named ones fit).
const MAX_ENTITY: usize = 10;

/// Decodes `&lt;`, `&gt;`, `&amp;`, `&quot;`, `&apos;`, `&#NN;` and `&#xHH;`.
pub fn decode(raw: &str) -> Cow<'_, str> {
    let bytes = raw.as_bytes();
    let Some(first) = memchr(b'&', bytes) else {
        return Cow::Borrowed(raw);
    };
    let mut out = String::with_capacity(raw.len());
    let mut done = 0;
    let mut at = first;
    loop {
        // `at` is a '&'.
        let window_end = (at + 2 + MAX_ENTITY).min(bytes.len());
        let semi = memchr(b';', &bytes[at + 1..window_end]).map(|i| at + 1 + i);
        if let Some(semi) = semi
            && let Some(decoded) = entity(&raw[at + 1..semi])
        {
            out.push_str(&raw[done..at]);
            out.push_str(decoded.encode(&mut [0u8; 4]));
            done = semi + 1;
        }
        match memchr(b'&', &bytes[at + 1..]) {
            Some(i) => at = at + 1 + i,
            None => break,
        }
    }
    if done == 0 {
        return Cow::Borrowed(raw);
    }
    out.push_str(&raw[done..]);
    Cow::Owned(out)
}

enum Decoded {
    Str(&'static str),
    Char(char),
}

impl Decoded {
    fn encode(self, buf: &mut [u8; 4]) -> &str {
        match self {
            Decoded::Str(s) => s,
            Decoded::Char(c) => c.encode_utf8(buf),
        }
    }
}

fn entity(body: &str) -> Option<Decoded> {
    if let Some(num) = body.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        if num.starts_with(['+', '-']) || code == 0 {
            return None;
        }
        return char::from_u32(code).map(Decoded::Char);
    }
    resolve_predefined_entity(body).map(Decoded::Str)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::decode;

    #[test]
    fn decodes_known_keeps_unknown() {
        assert_eq!(decode("a &lt; b &amp;&amp; c"), "a < b && c");
        assert_eq!(decode("&#65;&#x42;&#x1F600;"), "AB😀");
        assert_eq!(decode("fish & chips"), "fish & chips");
        assert_eq!(decode("&nbsp; &foo; &#xZZ; &"), "&nbsp; &foo; &#xZZ; &");
        assert_eq!(decode("&&lt;"), "&<");
        assert_eq!(decode("plain"), "plain");
    }
}
