//! Llama 4 / pythonic tool calls: `[f(a=1, b="x"), g()]`, Python calls with keyword
//! arguments whose values are literals.

use serde_json::Map;

use super::block::{BlockOutcome, RawCall, coerce_json_args};
use super::framed::set_calls;
use super::options::ParseOptions;
use super::pyliteral;
use super::tag_lex::is_tool_name;
use super::types::ProblemKind;

/// `[f(a=1, b="x"), g()]`: Python calls with keyword arguments, values as literals.
pub(super) fn pythonic(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let t = body.trim();
    let Some(inner) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) else {
        out.problem(
            ProblemKind::InvalidJson,
            at,
            "a pythonic tool call list must be written [f(a=1), ...]; kept as text",
        );
        return;
    };
    let mut calls = Vec::new();
    'items: for item in split_top(inner, b',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some(open) = item.find('(') else {
            return not_pythonic(at, out);
        };
        let Some(args) = item[open + 1..].strip_suffix(')') else {
            return not_pythonic(at, out);
        };
        let name = item[..open].trim();
        if !is_tool_name(name) {
            return not_pythonic(at, out);
        }
        let schema = opts.schema(name);
        let mut map = Map::new();
        for kw in split_top(args, b',') {
            let kw = kw.trim();
            if kw.is_empty() {
                continue;
            }
            let Some((k, v)) = kw.split_once('=') else {
                return not_pythonic(at, out);
            };
            // One call whose value is no literal (`b'z'`, `1e999`) is dropped; its
            // well-formed siblings stand.
            let Some(value) = pyliteral::to_json(v.trim()) else {
                out.problem(
                    ProblemKind::SeveralCalls,
                    at,
                    format!(
                        "dropped {name}(...): '{}' is not a literal",
                        super::block::short(v.trim())
                    ),
                );
                continue 'items;
            };
            map.insert(k.trim().to_string(), value);
        }
        let arguments = coerce_json_args(map, schema, at, &mut out.problems);
        calls.push(RawCall {
            id: None,
            name: name.to_string(),
            arguments,
        });
    }
    if calls.is_empty() {
        return not_pythonic(at, out);
    }
    set_calls(out, calls);
}

fn not_pythonic(at: usize, out: &mut BlockOutcome) {
    out.call = None;
    out.problem(
        ProblemKind::InvalidJson,
        at,
        "not a list of Python calls with literal keyword arguments; kept as text",
    );
}

/// Splits `s` at `sep` outside brackets and string literals.
pub(super) fn split_top(s: &str, sep: u8) -> Vec<&str> {
    let b = s.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start, mut i) = (0i32, None::<u8>, 0, 0);
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) => {
                if c == b'\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                c if c == sep && depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            },
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts
}
