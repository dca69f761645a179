//! Finding the next byte a JSON string escapes (a quote, a backslash, a control
//! character) eight bytes at a time: the scan under both the `--jsonl` reader and writer.

const ONES: u64 = u64::from_le_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);

/// The high bit of each byte of `word` that is special. A borrow can flag a byte
/// above a flagged one, never below: the lowest flag is exact.
fn flags(word: u64) -> u64 {
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    below_space
        | zero_in(word ^ (ONES * u64::from(b'"')))
        | zero_in(word ^ (ONES * u64::from(b'\\')))
}

/// The index of the first special byte of `b` at or after `from`; `b.len()` if none.
pub(super) fn next_special(b: &[u8], mut from: usize) -> usize {
    while let Some(chunk) = b.get(from..from + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let f = flags(u64::from_le_bytes(word));
        if f != 0 {
            return from + (f.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    while from < b.len() && !is_special(b[from]) {
        from += 1;
    }
    from
}

fn is_special(c: u8) -> bool {
    c < 0x20 || c == b'"' || c == b'\\'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exactly_the_first_special_byte() {
        // Every position, every special byte, with specials and high bytes around.
        for len in 0..20 {
            for at in 0..=len {
                for special in [b'"', b'\\', 0, 0x1f, b'\n'] {
                    for filler in [b'a', 0x20, 0x7f, 0x80, 0xff, 0x21, 0x5d, 0x23] {
                        let mut b = vec![filler; len];
                        if at < len {
                            b[at] = special;
                            // A later special must not hide or move the first.
                            if at + 1 < len {
                                b[at + 1] = b'\\';
                            }
                        }
                        let want = b.iter().position(|&c| is_special(c)).unwrap_or(len);
                        assert_eq!(next_special(&b, 0), want, "{b:?}");
                        assert_eq!(want, at.min(len), "{b:?}");
                    }
                }
            }
        }
    }
}
