//! The two dialects whose values are raw text between parameter tags:
//! Qwen3-coder `<function=NAME><parameter=K>v</parameter></function>` (optionally in
//! `<tool_call>`) and `<invoke name="N"><parameter name="K">v</parameter></invoke>`.
//! Values are taken as written, less one line break right after the opening tag and
//! one right before the closing tag, and coerced by the tool's schema. Where a value
//! ends is the walk's decision (tagged_walk.rs), shared with the block-end scanner.

use serde_json::Value;

use super::block::{BlockOutcome, RawCall, coerce_param, group_args};
use super::coerce::property;
use super::opener::{FUNCTION, Prefix, TOOL_CALL, prefix};
use super::options::ParseOptions;
use super::tagged_walk::{INVOKE, Note, QWEN, Syntax, ValueEnd, Walk, Walked};
use super::types::ProblemKind;

/// Parses a Qwen3-coder block (from `<tool_call>` when `wrapped`, else `<function=`).
/// `walk` is the block-end scanner's finished walk of the same block, when there is one.
pub(crate) fn parse_qwen(
    block: &str,
    wrapped: bool,
    walk: Option<Box<Walk>>,
    opts: &ParseOptions,
) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let b = block.as_bytes();
    let mut pos = 0;
    if wrapped {
        pos = TOOL_CALL.len();
        while pos < b.len() && b[pos].is_ascii_whitespace() {
            pos += 1;
        }
    }
    if wrapped && prefix(&b[pos..], b"<parameter=") == Prefix::Full {
        return headless(block, pos, walk, opts);
    }
    // The scanner only hands over blocks that start this way.
    if prefix(&b[pos..], FUNCTION) != Prefix::Full {
        return out;
    }
    let walk = walk.unwrap_or_else(|| Box::new(Walk::new(&QWEN, wrapped, pos + FUNCTION.len())));
    let Some((walk, closed)) = finish(walk, b, opts) else {
        return out;
    };
    let name = match walk.name.clone().flatten() {
        Some(n) => n,
        None => {
            let shown = block[pos + FUNCTION.len()..]
                .split(['>', '\n'])
                .next()
                .unwrap_or_default();
            out.problem(
                ProblemKind::MissingName,
                pos,
                format!(
                    "<function={}> does not name a tool; kept as text",
                    super::block::short(shown.trim())
                ),
            );
            return out;
        }
    };
    let function_closed = if wrapped {
        walk.function_closed
    } else {
        closed
    };
    if !wrapped && !closed && walk.params.is_empty() {
        // `<function=x>` mentioned in prose: no parameters, never closed. Text, and
        // nothing to report about it.
        return out;
    }
    build(block, &name, &walk, function_closed, &QWEN, opts, &mut out);
    if wrapped && function_closed && !closed {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            "<tool_call> was never closed",
        );
    }
    out
}

/// A `<tool_call>` whose `<function=NAME>` line is missing: the call is kept only when
/// exactly one known tool has every parameter it gives.
fn headless(block: &str, pos: usize, walk: Option<Box<Walk>>, opts: &ParseOptions) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let walk = walk.unwrap_or_else(|| Box::new(Walk::headless(pos)));
    let Some((walk, closed)) = finish(walk, block.as_bytes(), opts) else {
        return out;
    };
    let keys: Vec<&str> = walk.params.iter().map(|p| p.key.as_str()).collect();
    let mut fits = opts.schemas.iter().filter(|(_, schema)| {
        !keys.is_empty() && keys.iter().all(|k| property(Some(schema), k).is_some())
    });
    let (Some((name, _)), None) = (fits.next(), fits.next()) else {
        out.problem(
            ProblemKind::MissingName,
            pos,
            "a <tool_call> without <function=...> whose parameters fit no single known tool; kept as text",
        );
        return out;
    };
    let name = name.clone();
    out.problem(
        ProblemKind::MissingName,
        pos,
        format!("a <tool_call> without <function=...>: read as '{name}', the one tool with these parameters"),
    );
    build(
        block,
        &name,
        &walk,
        walk.function_closed || closed,
        &QWEN,
        opts,
        &mut out,
    );
    out
}

/// Parses an `<invoke name="...">` block.
pub(crate) fn parse_invoke(
    block: &str,
    walk: Option<Box<Walk>>,
    opts: &ParseOptions,
) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let b = block.as_bytes();
    let walk = walk.unwrap_or_else(|| Box::new(Walk::new(&INVOKE, false, "<invoke".len())));
    let Some((walk, closed)) = finish(walk, b, opts) else {
        return out;
    };
    match walk.name.clone() {
        Some(Some(name)) => build(block, &name, &walk, closed, &INVOKE, opts, &mut out),
        Some(None) if !block.contains('>') => out.problem(
            ProblemKind::MissingName,
            0,
            "<invoke without '>' is not a call",
        ),
        _ => out.problem(
            ProblemKind::MissingName,
            0,
            "<invoke> without a valid name=\"...\" is not a call",
        ),
    }
    out
}

/// Runs `walk` to the block's end, unless the scanner already did: the walk and
/// whether the call's closing tag ended it.
fn finish(mut walk: Box<Walk>, b: &[u8], opts: &ParseOptions) -> Option<(Box<Walk>, bool)> {
    if walk.done() {
        let closed = walk.closed();
        return Some((walk, closed));
    }
    match walk.advance(b, true, opts) {
        Walked::End { closed, .. } => Some((walk, closed)),
        Walked::NeedMore => None,
    }
}

/// Turns the walk's parameters and notes into the call and its problems.
fn build(
    block: &str,
    name: &str,
    walk: &Walk,
    closed: bool,
    syntax: &Syntax,
    opts: &ParseOptions,
    out: &mut BlockOutcome,
) {
    let schema = opts.schema(name);
    for note in &walk.notes {
        match *note {
            Note::StrayText(at) => out.problem(
                ProblemKind::StrayText,
                at,
                format!(
                    "text between the parameters of {} was ignored",
                    syntax.call_tag
                ),
            ),
            Note::TagWithoutGt(at) => out.problem(
                ProblemKind::UnclosedTag,
                at,
                "a parameter tag without '>' was ignored",
            ),
            Note::NoKey(at) => out.problem(
                ProblemKind::StrayText,
                at,
                "a parameter without a name was ignored",
            ),
        }
    }
    let mut pairs: Vec<(String, Value)> = Vec::with_capacity(walk.params.len());
    for p in &walk.params {
        let key = &p.key;
        match p.end {
            ValueEnd::Closed => {}
            ValueEnd::Drifted => {
                let tag: String = block[p.value.end..]
                    .chars()
                    .take_while(|&c| c != '>' && c != '\n')
                    .take(40)
                    .collect();
                out.problem(
                    ProblemKind::ImplicitClose,
                    p.value.end,
                    format!("parameter '{key}' was closed by a misspelled tag '{tag}'; read as </parameter>"),
                );
            }
            ValueEnd::Implicit => out.problem(
                ProblemKind::ImplicitClose,
                p.value.end,
                format!("parameter '{key}' was closed by the next tag"),
            ),
            ValueEnd::Eof => out.problem(
                ProblemKind::ImplicitClose,
                p.value.end,
                format!("parameter '{key}' was never closed"),
            ),
        }
        let value = trim_breaks(&block[p.value.clone()]);
        let v = coerce_param(key, value.to_string(), property(schema, key), p.tag, out);
        pairs.push((key.clone(), v));
    }
    if !closed {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            format!("{} was never closed", syntax.call_tag),
        );
    }
    let first = walk.params.first().map_or(0, |p| p.tag);
    let arguments = group_args(pairs, schema, first, out);
    out.call = Some(RawCall {
        id: None,
        name: name.to_string(),
        arguments,
    });
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn breaks() {
        assert_eq!(trim_breaks("\nabc\n"), "abc");
        assert_eq!(trim_breaks("\n\nabc\n\n"), "\nabc\n");
        assert_eq!(trim_breaks("abc"), "abc");
    }
}
