//! The two dialects whose values are raw text between parameter tags:
//! Qwen3-coder `<function=NAME><parameter=K>v</parameter></function>` (optionally in
//! `<tool_call>`) and `<invoke name="N"><parameter name="K">v</parameter></invoke>`.
//! Values are taken as written, less one line break right after the opening tag and
//! one right before the closing tag, and coerced by the tool's schema.

use memchr::memchr;
use serde_json::Value;

use super::block::{BlockOutcome, RawCall, coerce_param, group_args};
use super::coerce::property;
use super::entities::decode;
use super::opener::{FUNCTION, Prefix, TOOL_CALL, TOOL_CALL_END, prefix};
use super::options::ParseOptions;
use super::types::ProblemKind;

/// How one dialect writes its tags.
struct Syntax {
    /// What opens a parameter, up to its key.
    param_open: &'static [u8],
    /// Reads the key from the text between `param_open` and `>`.
    key: fn(&str) -> Option<String>,
    /// Closes the whole call.
    call_close: &'static [u8],
    /// Tags that end a parameter value besides `</parameter>`.
    value_stops: &'static [&'static [u8]],
    /// What the call's opening tag is called, for messages.
    call_tag: &'static str,
}

const PARAM_CLOSE: &[u8] = b"</parameter>";

const QWEN: Syntax = Syntax {
    param_open: b"<parameter=",
    key: |s| Some(s.trim().to_string()).filter(|k| !k.is_empty()),
    call_close: b"</function>",
    value_stops: &[b"<parameter=", b"</function>", TOOL_CALL_END],
    call_tag: "<function=...>",
};

const INVOKE: Syntax = Syntax {
    param_open: b"<parameter ",
    key: |s| attribute(s, "name"),
    call_close: b"</invoke>",
    value_stops: &[b"<parameter ", b"</invoke>"],
    call_tag: "<invoke>",
};

/// Parses a Qwen3-coder block (from `<tool_call>` when `wrapped`, else `<function=`).
pub(crate) fn parse_qwen(block: &str, wrapped: bool, opts: &ParseOptions) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let b = block.as_bytes();
    let mut pos = 0;
    if wrapped {
        pos = TOOL_CALL.len();
        while pos < b.len() && b[pos].is_ascii_whitespace() {
            pos += 1;
        }
    }
    // The scanner only hands over blocks that start this way.
    if prefix(&b[pos..], FUNCTION) != Prefix::Full {
        return out;
    }
    let name_start = pos + FUNCTION.len();
    let Some(gt) = memchr(b'>', &b[name_start..]).map(|k| name_start + k) else {
        out.problem(
            ProblemKind::MissingName,
            pos,
            "<function= without '>' is not a call",
        );
        return out;
    };
    let name = block[name_start..gt].trim();
    if !is_tool_name(name) {
        out.problem(
            ProblemKind::MissingName,
            pos,
            format!(
                "<function={}> does not name a tool; kept as text",
                super::block::short(name)
            ),
        );
        return out;
    }
    let mut probe = BlockOutcome::default();
    let (closed, params) = parse_params(block, gt + 1, name, &QWEN, opts, &mut probe);
    if !wrapped && !closed && params == 0 {
        // `<function=x>` mentioned in prose: no parameters, never closed.
        out.problem(
            ProblemKind::MissingName,
            pos,
            format!("<function={name}> with no parameters and no </function> is not a call"),
        );
        return out;
    }
    out = probe;
    if wrapped && closed && !block.trim_end().ends_with("</tool_call>") {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            "<tool_call> was never closed",
        );
    }
    out
}

/// Parses an `<invoke name="...">` block.
pub(crate) fn parse_invoke(block: &str, opts: &ParseOptions) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let b = block.as_bytes();
    let Some(gt) = memchr(b'>', b) else {
        out.problem(
            ProblemKind::MissingName,
            0,
            "<invoke without '>' is not a call",
        );
        return out;
    };
    let name = attribute(&block["<invoke".len()..gt], "name").unwrap_or_default();
    if !is_tool_name(&name) {
        out.problem(
            ProblemKind::MissingName,
            0,
            "<invoke> without a valid name=\"...\" is not a call",
        );
        return out;
    }
    parse_params(block, gt + 1, &name, &INVOKE, opts, &mut out);
    out
}

/// A tool name as models write it: no spaces, no markup.
fn is_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/'))
}

/// Reads the parameters from `pos` to the end of the call and sets the call. Returns
/// whether the call's closing tag was found, and how many parameters it had.
fn parse_params(
    block: &str,
    mut pos: usize,
    name: &str,
    syntax: &Syntax,
    opts: &ParseOptions,
    out: &mut BlockOutcome,
) -> (bool, usize) {
    let b = block.as_bytes();
    let schema = opts.schema(name);
    let mut pairs: Vec<(String, Value)> = Vec::new();
    let mut closed = false;
    let mut first_offset = None;
    loop {
        let next = memchr(b'<', &b[pos..]).map(|k| pos + k);
        let stop = next.unwrap_or(b.len());
        if !block[pos..stop].trim().is_empty() {
            out.problem(
                ProblemKind::StrayText,
                pos,
                format!(
                    "text between the parameters of {} was ignored",
                    syntax.call_tag
                ),
            );
        }
        let Some(q) = next else { break };
        if b[q..].starts_with(syntax.call_close) {
            closed = true;
            break;
        }
        if !b[q..].starts_with(syntax.param_open) {
            if b[q..].starts_with(TOOL_CALL_END) {
                break;
            }
            pos = q + 1;
            continue;
        }
        // A parameter: key up to '>', value up to its end.
        let key_start = q + syntax.param_open.len();
        let Some(gt) = memchr(b'>', &b[key_start..]).map(|k| key_start + k) else {
            out.problem(
                ProblemKind::UnclosedTag,
                q,
                "a parameter tag without '>' was ignored",
            );
            break;
        };
        let Some(key) = (syntax.key)(&block[key_start..gt]) else {
            out.problem(
                ProblemKind::StrayText,
                q,
                "a parameter without a name was ignored",
            );
            pos = gt + 1;
            continue;
        };
        let value_start = gt + 1;
        let (value_end, next_pos) = value_end(b, value_start, syntax);
        if next_pos == value_end {
            let how = if value_end == b.len() {
                "never closed"
            } else {
                "closed by the next tag"
            };
            out.problem(
                ProblemKind::ImplicitClose,
                value_end,
                format!("parameter '{key}' was {how}"),
            );
        }
        let value = trim_breaks(&block[value_start..value_end]);
        first_offset.get_or_insert(q);
        let v = coerce_param(&key, value.to_string(), property(schema, &key), q, out);
        pairs.push((key, v));
        pos = next_pos;
    }
    if !closed {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            format!("{} was never closed", syntax.call_tag),
        );
    }
    let count = pairs.len();
    let arguments = group_args(pairs, schema, first_offset.unwrap_or(0), out);
    out.call = Some(RawCall {
        id: None,
        name: name.to_string(),
        arguments,
    });
    (closed, count)
}

/// Where a value starting at `from` ends, and where parsing goes on after it.
fn value_end(b: &[u8], from: usize, syntax: &Syntax) -> (usize, usize) {
    let mut pos = from;
    while let Some(k) = memchr(b'<', &b[pos..]) {
        let q = pos + k;
        if b[q..].starts_with(PARAM_CLOSE) {
            return (q, q + PARAM_CLOSE.len());
        }
        if syntax.value_stops.iter().any(|t| b[q..].starts_with(t)) {
            return (q, q);
        }
        pos = q + 1;
    }
    (b.len(), b.len())
}

/// Drops one line break right after the opening tag and one right before the closing tag.
fn trim_breaks(v: &str) -> &str {
    let v = v
        .strip_prefix("\r\n")
        .or_else(|| v.strip_prefix('\n'))
        .unwrap_or(v);
    v.strip_suffix("\r\n")
        .or_else(|| v.strip_suffix('\n'))
        .unwrap_or(v)
}

/// The value of attribute `name` in a tag's attribute text (quotes `"` or `'`).
fn attribute(attrs: &str, name: &str) -> Option<String> {
    let mut rest = attrs;
    while let Some(at) = rest.find(name) {
        let before_ok = at == 0 || rest.as_bytes()[at - 1].is_ascii_whitespace();
        let after = rest[at + name.len()..].trim_start();
        if before_ok && let Some(v) = after.strip_prefix('=') {
            let v = v.trim_start();
            let quote = v.chars().next()?;
            if quote == '"' || quote == '\'' {
                let body = &v[1..];
                let end = body.find(quote)?;
                let value = decode(&body[..end]).trim().to_string();
                return Some(value).filter(|s| !s.is_empty());
            }
            let end = v
                .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .unwrap_or(v.len());
            return Some(v[..end].to_string()).filter(|s| !s.is_empty());
        }
        rest = &rest[at + name.len()..];
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn attributes() {
        assert_eq!(
            attribute(" name=\"web_search\"", "name"),
            Some("web_search".into())
        );
        assert_eq!(
            attribute(" id='1' name='a &amp; b'", "name"),
            Some("a & b".into())
        );
        assert_eq!(attribute(" xname=\"x\" name=y", "name"), Some("y".into()));
        assert_eq!(attribute(" name=\"\"", "name"), None);
    }

    #[test]
    fn breaks() {
        assert_eq!(trim_breaks("\nabc\n"), "abc");
        assert_eq!(trim_breaks("\n\nabc\n\n"), "\nabc\n");
        assert_eq!(trim_breaks("abc"), "abc");
    }
}
