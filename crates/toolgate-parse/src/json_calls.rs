//! Tool calls written as JSON objects (`{"name", "arguments"|"parameters"}`), as Llama 3
//! and Mistral write them: one, a list, or several joined by `;`.

use serde_json::{Map, Value};

use super::block::BlockOutcome;
use super::framed::{json_call, set_calls};
use super::options::ParseOptions;
use super::pythonic::split_top;
use super::types::ProblemKind;

/// `{"name", "arguments"|"parameters"}` objects: one, a list, or several joined by `;`.
pub(super) fn json_calls(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let mut values = Vec::new();
    for piece in split_top(body, b';') {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(piece).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => {
                if !piece[stream.byte_offset()..].trim().is_empty() {
                    out.problem(
                        ProblemKind::StrayText,
                        at,
                        "text after the tool call's JSON was ignored",
                    );
                }
                values.push(v);
            }
            Some(Err(e)) => {
                out.problem(
                    ProblemKind::InvalidJson,
                    at,
                    format!("the tool call holds invalid JSON ({e}); kept as text"),
                );
                if values.is_empty() {
                    return;
                }
            }
            None => {}
        }
    }
    let mut calls = Vec::new();
    for v in values.into_iter().flat_map(|v| match v {
        Value::Array(items) => items,
        other => vec![other],
    }) {
        let Value::Object(mut obj) = v else {
            out.problem(
                ProblemKind::SeveralCalls,
                at,
                "a JSON value that is not a call object was dropped",
            );
            continue;
        };
        let Some(Value::String(name)) = obj.remove("name") else {
            out.problem(
                ProblemKind::MissingName,
                at,
                "a JSON object without a \"name\" is not a call",
            );
            continue;
        };
        let args = ["arguments", "parameters", "args"]
            .iter()
            .find_map(|k| obj.remove(*k))
            .unwrap_or(Value::Object(Map::new()));
        let id = match obj.remove("id") {
            Some(Value::String(id)) if !id.is_empty() => Some(id),
            _ => None,
        };
        let text = match &args {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(call) = json_call(&name, id, &text, at, opts, out) {
            calls.push(call);
        }
    }
    set_calls(out, calls);
}

pub(super) enum Joined {
    /// The next call starts here.
    At(usize),
    No,
    /// The input ends before it tells.
    Unknown,
}

/// After a bare JSON call ending at `end`: whether `;` joins another call to it.
pub(super) fn joined_next(b: &[u8], end: usize) -> Joined {
    let skip = |mut i: usize| {
        while i < b.len() && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        i
    };
    let i = skip(end);
    match b.get(i) {
        None => return Joined::Unknown,
        Some(b';') => {}
        Some(_) => return Joined::No,
    }
    let j = skip(i + 1);
    match b.get(j) {
        None => Joined::Unknown,
        Some(b'{') => Joined::At(j),
        Some(_) => Joined::No,
    }
}
