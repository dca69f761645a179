//! The GLM-4.5 / 4.6 / 4.7 dialect: `<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`.
//! A value ends at its own `</arg_value>`: one holding a whole pair as text keeps it
//! when the pair's tags balance. When the close was left out, the value ends where the
//! next pair opens (a parameter the tool has and the call has not given yet, any name
//! without a schema), reported as `implicit_close`, as Qwen3-coder and `<invoke>` values
//! are read.

use serde_json::{Map, Value};

use super::block::{BlockOutcome, RawCall, coerce_param, group_args};
use super::coerce::property;
use super::options::ParseOptions;
use super::tag_lex::is_tool_name;
use super::types::ProblemKind;

const KEY: &str = "<arg_key>";
const KEY_END: &str = "</arg_key>";
const VALUE: &str = "<arg_value>";
const VALUE_END: &str = "</arg_value>";

/// GLM-4.5 / 4.6 / 4.7: `<tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>`
/// (4.7 writes no line breaks). Under `auto` the name must be followed by a line break
/// or an `<arg_key>`, so `<tool_call>example</tool_call>` in prose stays prose.
pub(crate) fn parse_glm(block: &str, closed: bool, opts: &ParseOptions) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let at = super::opener::TOOL_CALL.len();
    let mut body = &block[at..];
    if closed {
        body = body.strip_suffix("</tool_call>").unwrap_or(body);
    }
    let name_end = body.find(['\n', '<']).unwrap_or(body.len());
    let name = body[..name_end].trim();
    let rest = &body[name_end..];
    let framed = rest.starts_with('\n') || rest.starts_with(KEY);
    if !is_tool_name(name) || (opts.dialect != super::options::Dialect::Glm && !framed) {
        return out;
    }
    let schema = opts.schema(name);
    let known = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty());
    let closes = value_closes(body);
    let mut pairs: Vec<(String, Value)> = Vec::new();
    let mut pos = name_end;
    while let Some(k) = body[pos..].find(KEY) {
        let key_start = pos + k + KEY.len();
        let Some(ke) = body[key_start..].find(KEY_END) else {
            out.problem(
                ProblemKind::UnclosedTag,
                at,
                "an <arg_key> was never closed",
            );
            break;
        };
        let key = body[key_start..key_start + ke].trim().to_string();
        let after = key_start + ke + KEY_END.len();
        let open = after + (body.len() - after - body[after..].trim_start().len());
        if !body[open..].starts_with(VALUE) {
            out.problem(
                ProblemKind::StrayText,
                at,
                format!("<arg_key>{key}</arg_key> without an <arg_value>; ignored"),
            );
            pos = open;
            continue;
        }
        let opens = |k: &str| {
            k != key
                && !pairs.iter().any(|(given, _)| given == k)
                && known.is_none_or(|p| p.contains_key(k))
        };
        let end = value_end(body, open, &closes, opens);
        match &end.how {
            End::Closed => {}
            End::Implicit(next) => out.problem(
                ProblemKind::ImplicitClose,
                at,
                format!(
                    "parameter '{key}' was not closed before <arg_key>{next}</arg_key>; closed it there"
                ),
            ),
            End::Eof => out.problem(
                ProblemKind::ImplicitClose,
                at,
                format!("parameter '{key}' was never closed"),
            ),
        }
        let mut value = &body[open + VALUE.len()..end.value];
        if let End::Implicit(_) = end.how {
            // The line break that separates pairs is not part of the value.
            value = value.strip_suffix('\n').unwrap_or(value);
            value = value.strip_suffix('\r').unwrap_or(value);
        }
        pos = end.next;
        let prop = property(schema, &key);
        let v = match prop {
            Some(_) => coerce_param(&key, value.to_string(), prop, at, &mut out),
            // GLM's template writes non-string values as JSON.
            None => serde_json::from_str::<Value>(value.trim())
                .unwrap_or_else(|_| Value::String(value.to_string())),
        };
        pairs.push((key, v));
    }
    if !closed {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            "<tool_call> was never closed",
        );
    }
    let arguments: Map<String, Value> = group_args(pairs, schema, at, &mut out);
    out.call = Some(RawCall {
        id: None,
        name: name.to_string(),
        arguments,
    });
    out
}

/// Where a value ends and how.
struct ValueEnd {
    /// The end of the value's text.
    value: usize,
    /// Where reading goes on.
    next: usize,
    how: End,
}

enum End {
    /// By its own `</arg_value>`.
    Closed,
    /// By the next pair opening (its key), the close left out.
    Implicit(String),
    /// By the end of the call.
    Eof,
}

/// Each `<arg_value>` of `body` paired with the `</arg_value>` that closes it, as
/// nested tags pair up: (open, close), in order of the opens.
fn value_closes(body: &str) -> Vec<(usize, usize)> {
    let mut stack = Vec::new();
    let mut pairs = Vec::new();
    for (q, _) in body.match_indices('<') {
        if body[q..].starts_with(VALUE) {
            stack.push(q);
        } else if body[q..].starts_with(VALUE_END)
            && let Some(open) = stack.pop()
        {
            pairs.push((open, q));
        }
    }
    pairs.sort_unstable();
    pairs
}

/// The end of the value whose `<arg_value>` is at `open`: its own close when the tags
/// pair up; otherwise the first of the next `</arg_value>` and a pair that `opens` a
/// parameter (`<arg_key>K</arg_key><arg_value>`, before any other value opens).
fn value_end(
    body: &str,
    open: usize,
    closes: &[(usize, usize)],
    opens: impl Fn(&str) -> bool,
) -> ValueEnd {
    let closed = |c: usize| ValueEnd {
        value: c,
        next: c + VALUE_END.len(),
        how: End::Closed,
    };
    if let Ok(i) = closes.binary_search_by_key(&open, |&(o, _)| o) {
        return closed(closes[i].1);
    }
    let from = open + VALUE.len();
    let first_close = body[from..].find(VALUE_END).map(|k| from + k);
    let limit = first_close.unwrap_or(body.len());
    for (k, _) in body[from..limit].match_indices('<') {
        let q = from + k;
        let rest = &body[q..];
        if rest.starts_with(VALUE) {
            break;
        }
        if let Some(key) = pair_key(rest).filter(|key| opens(key)) {
            return ValueEnd {
                value: q,
                next: q,
                how: End::Implicit(key.to_string()),
            };
        }
    }
    match first_close {
        Some(c) => closed(c),
        None => ValueEnd {
            value: body.len(),
            next: body.len(),
            how: End::Eof,
        },
    }
}

/// The key of `<arg_key>K</arg_key>` followed by `<arg_value>` at the start of `rest`.
fn pair_key(rest: &str) -> Option<&str> {
    let inner = rest.strip_prefix(KEY)?;
    let ke = inner.find(KEY_END)?;
    let key = inner[..ke].trim();
    let after = inner[ke + KEY_END.len()..].trim_start();
    (after.starts_with(VALUE) && !key.is_empty() && !key.contains('<')).then_some(key)
}
