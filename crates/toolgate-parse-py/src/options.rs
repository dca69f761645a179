//! The keyword arguments of `parse` and `StreamParser` as `ParseOptions`: the dialect by
//! name, and the tools whose parameter schemas type the arguments.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;
use toolgate_parse::{Dialect, ParseOptions, Schemas};

/// The dialect names, as `toolgate parse --dialect` takes them.
pub const DIALECTS: &[&str] = &[
    "auto",
    "xml",
    "hermes",
    "qwen3-coder",
    "invoke",
    "glm",
    "kimi-k2",
    "kimi-k3",
    "deepseek",
    "harmony",
    "mistral",
    "gemma4",
    "granite",
    "hunyuan",
    "lfm2",
    "llama3",
    "pythonic",
    "openai",
];

pub fn build(
    dialect: &str,
    tools: Option<&Bound<'_, PyAny>>,
    strict: bool,
    reasoning_opened: bool,
    id_prefix: &str,
) -> PyResult<ParseOptions> {
    let dialect: Dialect = dialect.parse().map_err(PyValueError::new_err)?;
    let schemas = match tools {
        Some(tools) if !tools.is_none() => schemas(crate::json::from_py(tools)?)?,
        _ => Schemas::new(),
    };
    Ok(ParseOptions::default()
        .with_dialect(dialect)
        .with_strict(strict)
        .with_reasoning_opened(reasoning_opened)
        .with_id_prefix(id_prefix)
        .with_schemas(Arc::new(schemas)))
}

/// The tools' schemas, given as a mapping (tool name -> parameters schema) or as a list
/// of tool definitions: OpenAI's `{"type": "function", "function": {...}}`, or a flat
/// `{"name", "parameters"}` (`input_schema`: Anthropic, `inputSchema`: MCP).
fn schemas(tools: Value) -> PyResult<Schemas> {
    match tools {
        Value::Object(map) => Ok(map.into_iter().collect()),
        Value::Array(list) => list
            .into_iter()
            .enumerate()
            .map(|(i, tool)| {
                definition(tool).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "tools[{i}]: not a tool definition (a dict with a 'name' and its \
                         'parameters', or OpenAI's {{'type': 'function', 'function': {{...}}}})"
                    ))
                })
            })
            .collect(),
        _ => Err(PyValueError::new_err(
            "tools: a list of tool definitions, or a dict of tool name -> parameters schema",
        )),
    }
}

fn definition(tool: Value) -> Option<(String, Value)> {
    let Value::Object(mut tool) = tool else {
        return None;
    };
    if let Some(Value::Object(function)) = tool.remove("function") {
        tool = function;
    }
    let name = tool.get("name")?.as_str()?.to_string();
    let schema = ["parameters", "input_schema", "inputSchema"]
        .iter()
        .find_map(|k| tool.remove(*k))
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    Some((name, schema))
}
