//! Mistral tool calls after `[TOOL_CALLS]`: a JSON list, `NAME[ARGS]{..}` (with an
//! optional `[CALL_ID]id`), or `NAME{..}` as detokenized with special tokens skipped.

use super::block::BlockOutcome;
use super::framed::json_call;
use super::options::ParseOptions;

/// Length of the tool name at the start of `b` (letters, digits, `_`, `-`, `.`).
pub(super) fn name_len(b: &[u8]) -> usize {
    b.iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
        .count()
}

/// Whether `head` (what stands between `[TOOL_CALLS]` and `[ARGS]`) is a tool name,
/// optionally followed by `[CALL_ID]` and an id: prose there means the token was not
/// followed by a call.
pub(super) fn is_head(head: &[u8]) -> bool {
    let head = head.trim_ascii();
    let n = name_len(head);
    n > 0
        && (n == head.len()
            || head[n..]
                .strip_prefix(b"[CALL_ID]")
                .is_some_and(|id| !id.iter().any(|c| c.is_ascii_whitespace() || *c == b'[')))
}

pub(super) fn mistral(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let t = body.trim_start();
    if t.starts_with('[') || t.starts_with('{') {
        super::json_calls::json_calls(body, at, opts, out);
        return;
    }
    let Some((head, args)) = t.split_once("[ARGS]").or_else(|| {
        let n = name_len(t.as_bytes());
        (n > 0 && t[n..].starts_with('{')).then(|| t.split_at(n))
    }) else {
        return;
    };
    let name = head.split_once("[CALL_ID]").map_or(head, |(n, _)| n);
    let id = head
        .split_once("[CALL_ID]")
        .map(|(_, id)| id.trim().to_string())
        .filter(|s| !s.is_empty());
    out.call = json_call(name, id, args, at, opts, out);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::super::framed::{Framed, FramedEnd, FramedScan};

    #[test]
    fn mistral_name_then_json_without_args_token() {
        let mut s = FramedScan::new(Framed::Mistral);
        let b = b"[TOOL_CALLS]add{\"a\": 1} tail";
        assert_eq!(
            s.advance(b, false),
            FramedEnd::End {
                len: b.len() - 5,
                closed: true
            }
        );
        let mut s = FramedScan::new(Framed::Mistral);
        assert_eq!(s.advance(b"[TOOL_CALLS]add", false), FramedEnd::NeedMore);
    }
}
