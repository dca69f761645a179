//! The Hermes / Qwen2.5 dialect: `<tool_call>{"name": .., "arguments": {..}}</tool_call>`.
//! Invalid JSON is text, not a call.

use serde_json::{Map, Value};

use super::block::{BlockOutcome, RawCall, coerce_json_args};
use super::opener::{TOOL_CALL, TOOL_CALL_END};
use super::options::ParseOptions;
use super::types::ProblemKind;

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
    let json = body.trim();
    let mut stream = serde_json::Deserializer::from_str(json).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            out.problem(
                ProblemKind::InvalidJson,
                TOOL_CALL.len() + lead,
                format!("<tool_call> holds invalid JSON ({e}); kept as text"),
            );
            return out;
        }
        None => return out,
    };
    let consumed = stream.byte_offset();
    if !json[consumed..].trim().is_empty() {
        out.problem(
            ProblemKind::StrayText,
            TOOL_CALL.len() + lead + consumed,
            "text after the JSON object in <tool_call> was ignored",
        );
    }
    let Value::Object(mut obj) = value else {
        out.problem(
            ProblemKind::InvalidJson,
            TOOL_CALL.len() + lead,
            "<tool_call> holds JSON that is not an object; kept as text",
        );
        return out;
    };
    let name = match obj.remove("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => {
            out.problem(
                ProblemKind::MissingName,
                TOOL_CALL.len() + lead,
                "a <tool_call> JSON object without a \"name\" is not a call",
            );
            return out;
        }
    };
    let raw_args = ARG_KEYS.iter().find_map(|k| obj.remove(*k));
    let arguments = match raw_args {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(map)) => map,
            _ => {
                out.problem(
                    ProblemKind::InvalidJson,
                    TOOL_CALL.len() + lead,
                    format!("the arguments of '{name}' are not a JSON object; kept as text"),
                );
                return out;
            }
        },
        Some(_) => {
            out.problem(
                ProblemKind::InvalidJson,
                TOOL_CALL.len() + lead,
                format!("the arguments of '{name}' are not a JSON object; kept as text"),
            );
            return out;
        }
    };
    let id = match obj.remove("id") {
        Some(Value::String(id)) if !id.is_empty() => Some(id),
        _ => None,
    };
    let arguments = coerce_json_args(
        arguments,
        opts.schema(&name),
        TOOL_CALL.len() + lead,
        &mut out.problems,
    );
    out.call = Some(RawCall {
        id,
        name,
        arguments,
    });
    out
}
