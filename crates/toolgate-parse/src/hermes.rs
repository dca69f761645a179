//! The Hermes / Qwen2.5 dialect: `<tool_call>{"name": .., "arguments": {..}}</tool_call>`.
//! Invalid JSON is text, not a call.

use serde_json::{Map, Value};

use super::block::{BlockOutcome, RawCall, coerce_json_args};
use super::opener::{TOOL_CALL, TOOL_CALL_END};
use super::options::ParseOptions;
use super::types::{Problem, ProblemKind};

/// Keys models use for the arguments object.
const ARG_KEYS: [&str; 4] = ["arguments", "parameters", "args", "input"];

pub(crate) fn parse(block: &str, closed: bool, opts: &ParseOptions) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let body = &block[TOOL_CALL.len()..];
    let body = if closed {
        body.strip_suffix(std::str::from_utf8(TOOL_CALL_END).unwrap_or_default())
            .unwrap_or(body)
    } else {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            "<tool_call> was never closed",
        );
        body
    };
    let lead = body.len() - body.trim_start().len();
    let at = TOOL_CALL.len() + lead;
    let json = body.trim();
    let mut stream = serde_json::Deserializer::from_str(json).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            out.problem(
                ProblemKind::InvalidJson,
                at,
                format!("<tool_call> holds invalid JSON ({e}); kept as text"),
            );
            return out;
        }
        None => return out,
    };
    let consumed = stream.byte_offset();
    let rest = json[consumed..].trim();
    // Several objects separated by commas (xLAM style): read them as a list.
    let value = match (rest.starts_with(','), &value) {
        (true, Value::Object(_)) => match serde_json::from_str::<Value>(&format!("[{json}]")) {
            Ok(list) => list,
            Err(_) => {
                stray_after(&mut out, at + consumed);
                value
            }
        },
        _ => {
            if !rest.is_empty() {
                stray_after(&mut out, at + consumed);
            }
            value
        }
    };
    match value {
        Value::Object(obj) => match call_from(obj, opts, at, &mut out) {
            Ok(call) => out.call = Some(call),
            Err(p) => out.problems.push(p),
        },
        Value::Array(items) => {
            let total = items.len();
            let mut calls = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                let dropped = match item {
                    Value::Object(obj) => match call_from(obj, opts, at, &mut out) {
                        Ok(call) => {
                            calls.push(call);
                            continue;
                        }
                        Err(p) => p.message,
                    },
                    other => format!("{} is not a call object", kind_of(&other)),
                };
                out.problem(
                    ProblemKind::SeveralCalls,
                    at,
                    format!(
                        "item {} of the {total} in <tool_call> was dropped: {dropped}",
                        i + 1
                    ),
                );
            }
            if calls.is_empty() {
                out.problem(
                    ProblemKind::InvalidJson,
                    at,
                    "<tool_call> holds a JSON list with no call in it; kept as text",
                );
                return out;
            }
            let mut calls = calls.into_iter();
            out.call = calls.next();
            out.more = calls.collect();
        }
        _ => out.problem(
            ProblemKind::InvalidJson,
            at,
            "<tool_call> holds JSON that is not an object; kept as text",
        ),
    }
    out
}

fn stray_after(out: &mut BlockOutcome, at: usize) {
    out.problem(
        ProblemKind::StrayText,
        at,
        "text after the JSON object in <tool_call> was ignored",
    );
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// One call from its JSON object; the problem that makes it no call otherwise.
fn call_from(
    mut obj: Map<String, Value>,
    opts: &ParseOptions,
    at: usize,
    out: &mut BlockOutcome,
) -> Result<RawCall, Problem> {
    let name = match obj.remove("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => {
            return Err(Problem::new(
                ProblemKind::MissingName,
                at,
                "a <tool_call> JSON object without a \"name\" is not a call",
            ));
        }
    };
    let not_object = || {
        Problem::new(
            ProblemKind::InvalidJson,
            at,
            format!("the arguments of '{name}' are not a JSON object; kept as text"),
        )
    };
    let raw_args = ARG_KEYS.iter().find_map(|k| obj.remove(*k));
    let arguments = match raw_args {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(map)) => map,
            _ => return Err(not_object()),
        },
        Some(_) => return Err(not_object()),
    };
    let id = match obj.remove("id") {
        Some(Value::String(id)) if !id.is_empty() => Some(id),
        _ => None,
    };
    let arguments = coerce_json_args(arguments, opts.schema(&name), at, &mut out.problems);
    Ok(RawCall {
        id,
        name,
        arguments,
    })
}
