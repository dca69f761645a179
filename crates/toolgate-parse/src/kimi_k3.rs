//! Kimi K3's XTML calls, in a `<|open|>tools<|sep|>` channel:
//!
//! ```text
//! <|open|>call tool="NAME" index="1"<|sep|>
//!   <|open|>argument key="code" type="string"<|sep|>print(1)<|close|>argument<|sep|>
//!   <|open|>argument key="opts" type="object"<|sep|>{"a":1}<|close|>argument<|sep|>
//! <|close|>call<|sep|>
//! ```
//!
//! A `type="string"` value is raw text (the template writes it unescaped), any other
//! type is JSON; attribute values are escaped (`&quot;`, `&amp;`). A value ends only at
//! its own `<|close|>argument<|sep|>`: the block scan (framed.rs) skips values the same
//! way, so markers inside one are content. Checked against vLLM's
//! `kimi_k3_tool_parser.py` and its tests.

use serde_json::Value;

use super::block::{BlockOutcome, RawCall, coerce_param, group_args};
use super::coerce::property;
use super::options::ParseOptions;
use super::tag_lex::{attribute, is_tool_name};
use super::types::ProblemKind;

pub(crate) const K3_CALL: &[u8] = b"<|open|>call ";
pub(crate) const K3_CALL_END: &[u8] = b"<|close|>call<|sep|>";
pub(crate) const K3_TOOLS: &[u8] = b"<|open|>tools<|sep|>";
pub(crate) const K3_TOOLS_END: &[u8] = b"<|close|>tools<|sep|>";
pub(crate) const K3_ARG: &str = "<|open|>argument ";
pub(crate) const K3_ARG_END: &str = "<|close|>argument<|sep|>";
pub(crate) const K3_SEP: &str = "<|sep|>";
/// The response channel's and the message's markers: markup, never text.
pub(crate) const K3_MARKUP: [&[u8]; 3] = [
    b"<|open|>response<|sep|>",
    b"<|close|>response<|sep|>",
    b"<|close|>message<|sep|>",
];

/// Reads the body of one call (after `<|open|>call `, without its closer).
pub(crate) fn kimi_k3(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let Some((attrs, mut rest)) = body.split_once(K3_SEP) else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a Kimi K3 call without <|sep|> after its attributes; kept as text",
        );
        return;
    };
    let Some(name) = attribute(attrs, "tool").filter(|n| is_tool_name(n)) else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a Kimi K3 call without a valid tool=\"...\"; kept as text",
        );
        return;
    };
    let schema = opts.schema(&name);
    let mut pairs = Vec::new();
    while let Some(p) = rest.find(K3_ARG) {
        let after = &rest[p + K3_ARG.len()..];
        let Some((attrs, value_start)) = after.split_once(K3_SEP) else {
            break;
        };
        let (value, next) = match value_start.find(K3_ARG_END) {
            Some(e) => (&value_start[..e], &value_start[e + K3_ARG_END.len()..]),
            None => {
                out.problem(
                    ProblemKind::ImplicitClose,
                    at,
                    "a Kimi K3 argument was never closed",
                );
                (value_start, "")
            }
        };
        rest = next;
        let Some(key) = attribute(attrs, "key") else {
            continue;
        };
        let prop = property(schema, &key);
        let is_string = attribute(attrs, "type").is_none_or(|t| t == "string");
        let v = if prop.is_some() {
            coerce_param(&key, value.to_string(), prop, at, out)
        } else if is_string {
            Value::String(value.to_string())
        } else {
            serde_json::from_str::<Value>(value.trim())
                .unwrap_or_else(|_| Value::String(value.to_string()))
        };
        pairs.push((key, v));
    }
    let arguments = group_args(pairs, schema, at, out);
    out.call = Some(RawCall {
        id: None,
        name,
        arguments,
    });
}
