//! Where a GLM-4.x block ends, incrementally: at `</tool_call>`, or unclosed where the
//! next `<tool_call>` opens; but never inside an `<arg_value>`, which ends only at its
//! own `</arg_value>` (nested pairs balance), so a value that quotes `<tool_call>` or
//! `</tool_call>` is content. When the pairs never balance (a value quotes a lone
//! `<arg_value>`), the values are read again from the one left open, each ending at
//! the first `</arg_value>`; a value whose close never comes at all is read again as
//! raw text at the end of the input, as before: the left-out close is recovered.

use super::block_end::{ScanResult, next_tag};
use super::opener::{TOOL_CALL, TOOL_CALL_END};

const VALUE: &[u8] = b"<arg_value>";
const VALUE_END: &[u8] = b"</arg_value>";

/// The state of one GLM block's end search; positions are relative to the block start.
#[derive(Debug, Clone)]
pub(crate) struct GlmScan {
    pos: usize,
    /// How many `<arg_value>` are open at `pos`.
    depth: u32,
    /// Where the outermost open value's `<arg_value>` is.
    value_start: usize,
    /// Values end at the first `</arg_value>` (the nested pairs did not balance).
    flat: bool,
    /// A value was never closed: values are no longer told apart.
    raw: bool,
}

impl GlmScan {
    pub(crate) fn new(pos: usize) -> Self {
        Self {
            pos,
            depth: 0,
            value_start: 0,
            flat: false,
            raw: false,
        }
    }

    pub(crate) fn advance(&mut self, block: &[u8], eof: bool) -> ScanResult {
        loop {
            if self.depth > 0 {
                let tags: &[&[u8]] = if self.flat {
                    &[VALUE_END]
                } else {
                    &[VALUE_END, VALUE]
                };
                match next_tag(block, &mut self.pos, tags) {
                    None if eof => {
                        self.depth = 0;
                        self.pos = self.value_start;
                        if self.flat {
                            self.raw = true;
                        } else {
                            self.flat = true;
                        }
                    }
                    None => return ScanResult::NeedMore,
                    Some((q, 0)) => {
                        self.depth -= 1;
                        self.pos = q + VALUE_END.len();
                    }
                    Some((q, _)) => {
                        self.depth += 1;
                        self.pos = q + VALUE.len();
                    }
                }
                continue;
            }
            let tags: &[&[u8]] = if self.raw {
                &[TOOL_CALL_END, TOOL_CALL]
            } else {
                &[TOOL_CALL_END, TOOL_CALL, VALUE]
            };
            return match next_tag(block, &mut self.pos, tags) {
                None => ScanResult::NeedMore,
                Some((q, 0)) => ScanResult::End {
                    len: q + TOOL_CALL_END.len(),
                    closed: true,
                },
                Some((q, 2)) => {
                    self.depth = 1;
                    self.value_start = q;
                    self.pos = q + VALUE.len();
                    continue;
                }
                Some((q, _)) => ScanResult::End {
                    len: q,
                    closed: false,
                },
            };
        }
    }
}
