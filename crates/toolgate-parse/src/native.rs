//! Native OpenAI tool calls: `tool_calls` of a chat.completion message, or streamed
//! deltas merged by `index` (id and name may come before or after the argument
//! fragments). Arguments that are not valid JSON are a problem, never a panic.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::block::{RawCall, coerce_json_args};
use super::options::ParseOptions;
use super::types::{Problem, ProblemKind};

#[derive(Debug, Default)]
struct Slot {
    id: Option<String>,
    name: String,
    arguments: String,
    offset: usize,
    /// A custom tool's call (`type: custom`): its freeform input, not JSON arguments.
    freeform: Option<String>,
}

/// Tool calls being assembled from a model's answer, by index.
///
/// Feed it the `tool_calls` deltas of a stream (or the entries of a whole message),
/// then hand it to [`StreamParser::finish_native`](crate::StreamParser::finish_native)
/// so that its calls follow the text's calls in the same id space.
///
/// ```
/// use serde_json::json;
/// use toolgate_parse::{NativeCalls, ParseOptions, ParsedTurn, StreamParser, collect};
/// let mut native = NativeCalls::default();
/// // The name may come after the first argument fragment.
/// native.delta(0, None, None, Some("{\"city\": "), 0);
/// native.delta(0, Some("call_w"), Some("get_weather"), Some("\"Paris\"}"), 0);
/// // An entry as JSON, as a chat.completion or a chunk holds it.
/// native.delta_json(1, &json!({"index": 1, "id": "call_t",
///     "function": {"name": "get_time", "arguments": "{}"}}), 0);
/// let mut turn = ParsedTurn::default();
/// collect(&mut turn, StreamParser::new(ParseOptions::default()).finish_native(native));
/// assert_eq!(turn.calls[0].id, "call_w");
/// assert_eq!(turn.calls[0].arguments["city"], "Paris");
/// assert_eq!(turn.calls[1].name, "get_time");
/// ```
#[derive(Debug, Default)]
pub struct NativeCalls {
    slots: BTreeMap<u64, Slot>,
}

/// One finished native call: the call, or the reason it is not one.
pub(crate) type Finished = (Option<RawCall>, Vec<Problem>);

impl NativeCalls {
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// One streamed `tool_calls[]` delta. `offset` is where it was read, for problems.
    pub fn delta(
        &mut self,
        index: u64,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
        offset: usize,
    ) {
        let slot = self.slots.entry(index).or_insert_with(|| Slot {
            offset,
            ..Slot::default()
        });
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            slot.id.get_or_insert_with(|| id.to_string());
        }
        if let Some(name) = name.filter(|s| !s.is_empty()) {
            // Most servers send the name once; some repeat it whole in every delta.
            if slot.name != name {
                slot.name.push_str(name);
            }
        }
        if let Some(args) = arguments {
            slot.arguments.push_str(args);
        }
    }

    /// Reads one `tool_calls[]` entry (whole message or delta) as JSON.
    pub fn delta_json(&mut self, position: usize, call: &Value, offset: usize) {
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position as u64);
        if let Some(custom) = call.get("custom") {
            self.delta(
                index,
                call.get("id").and_then(Value::as_str),
                custom.get("name").and_then(Value::as_str),
                None,
                offset,
            );
            let input = custom.get("input").and_then(Value::as_str).unwrap_or("");
            if let Some(slot) = self.slots.get_mut(&index) {
                slot.freeform
                    .get_or_insert_with(String::new)
                    .push_str(input);
            }
            return;
        }
        let function = call.get("function");
        let arguments = function.and_then(|f| f.get("arguments"));
        let args_text;
        let arguments = match arguments {
            Some(Value::String(s)) => Some(s.as_str()),
            Some(Value::Null) | None => None,
            // Some servers send the arguments as an object already.
            Some(other) => {
                args_text = other.to_string();
                Some(args_text.as_str())
            }
        };
        self.delta(
            index,
            call.get("id").and_then(Value::as_str),
            function.and_then(|f| f.get("name")).and_then(Value::as_str),
            arguments,
            offset,
        );
    }

    /// The calls in index order, arguments parsed and coerced.
    pub(crate) fn finish(self, opts: &ParseOptions) -> Vec<Finished> {
        self.slots
            .into_values()
            .map(|slot| {
                let mut problems = Vec::new();
                let name = slot.name.trim().to_string();
                if name.is_empty() {
                    problems.push(Problem::new(
                        ProblemKind::MissingName,
                        slot.offset,
                        "a native tool call without a function name was dropped",
                    ));
                    return (None, problems);
                }
                let text = slot.arguments.trim();
                let arguments = if let Some(input) = slot.freeform {
                    // A custom tool's call: its input is the one argument.
                    Map::from_iter([("input".to_string(), Value::String(input))])
                } else if text.is_empty() {
                    Map::new()
                } else {
                    match serde_json::from_str::<Value>(text) {
                        Ok(Value::Object(map)) => map,
                        Ok(_) | Err(_) => {
                            let mut p = Problem::new(
                                ProblemKind::InvalidJson,
                                slot.offset,
                                format!(
                                    "the arguments of '{name}' are not a JSON object: {}",
                                    super::block::short(text)
                                ),
                            );
                            p.call_id = slot.id;
                            p.tool = Some(name);
                            problems.push(p);
                            return (None, problems);
                        }
                    }
                };
                let arguments =
                    coerce_json_args(arguments, opts.schema(&name), slot.offset, &mut problems);
                let call = RawCall {
                    id: slot.id,
                    name,
                    arguments,
                };
                (Some(call), problems)
            })
            .collect()
    }
}

/// A chat.completion object (or a bare assistant message): its text and its calls.
pub(crate) fn read_completion(value: &Value) -> Option<(String, NativeCalls, Option<String>)> {
    let message = match value.get("choices") {
        Some(choices) => choices.get(0)?.get("message")?,
        None if value.get("role").is_some() || value.get("tool_calls").is_some() => value,
        None => return None,
    };
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        // Content given as parts: the text parts in order.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    };
    let mut calls = NativeCalls::default();
    if let Some(list) = message.get("tool_calls").and_then(Value::as_array) {
        for (i, call) in list.iter().enumerate() {
            calls.delta_json(i, call, 0);
        }
    }
    if let Some(legacy) = message.get("function_call").filter(|v| v.is_object()) {
        let position = list_len(message);
        calls.delta_json(position, &serde_json::json!({ "function": legacy }), 0);
    }
    let reasoning = super::reasoning::native_reasoning(message).map(str::to_string);
    Some((content, calls, reasoning))
}

fn list_len(message: &Value) -> usize {
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_custom_call_keeps_its_freeform_input_as_one_argument() {
        let mut calls = NativeCalls::default();
        calls.delta_json(
            0,
            &serde_json::json!({"index": 0, "id": "c1", "type": "custom",
            "custom": {"name": "run_sql", "input": ""}}),
            0,
        );
        for piece in ["SELECT ", "1 -- {not json"] {
            calls.delta_json(
                0,
                &serde_json::json!({"index": 0, "custom": {"input": piece}}),
                1,
            );
        }
        let (call, problems) = calls.finish(&ParseOptions::default()).remove(0);
        let call = call.unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(call.name, "run_sql");
        assert_eq!(call.arguments["input"], "SELECT 1 -- {not json");
    }

    #[test]
    fn merges_by_index_in_any_order() {
        let mut n = NativeCalls::default();
        n.delta(1, None, None, Some("{\"b\":"), 0);
        n.delta(0, Some("id0"), Some("f"), Some("{}"), 0);
        n.delta(1, Some("id1"), Some("g"), Some("2}"), 0);
        let out = n.finish(&ParseOptions::default());
        let names: Vec<_> = out
            .iter()
            .map(|(c, _)| c.as_ref().map(|c| c.name.clone()))
            .collect();
        assert_eq!(names, vec![Some("f".into()), Some("g".into())]);
        assert_eq!(
            out[1].0.as_ref().map(|c| c.arguments["b"].clone()),
            Some(serde_json::json!(2))
        );
    }

    #[test]
    fn invalid_arguments_are_a_problem() {
        let mut n = NativeCalls::default();
        n.delta(0, Some("x"), Some("f"), Some("{\"a\": "), 0);
        let out = n.finish(&ParseOptions::default());
        assert!(out[0].0.is_none());
        assert_eq!(out[0].1[0].kind, ProblemKind::InvalidJson);
    }
}
