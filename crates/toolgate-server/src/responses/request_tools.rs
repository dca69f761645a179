//! A request's `tools`: each `function` tool becomes a client tool of the run (the
//! model may call it; the response then ends with a `function_call` the client answers
//! with `function_call_output`), and each `custom` tool one whose input is freeform text
//! (a `custom_tool_call`, answered with `custom_tool_call_output`). Other tool types
//! are refused, naming the type.

use std::collections::HashSet;

use serde_json::{Value, json};

use toolgate_tool::ClientTool;

/// The function tools a request declares: `None` when it sends no `tools` (the run
/// keeps the ones it has), else the new set; an error sentence for anything else.
pub fn read(tools: Option<&Value>) -> Result<Option<Vec<ClientTool>>, ToolsError> {
    let list = match tools {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(ToolsError::NotAList),
    };
    let mut out = Vec::with_capacity(list.len());
    let mut names = HashSet::new();
    for (index, tool) in list.iter().enumerate() {
        let declared = read_tool(tool).map_err(|problem| ToolsError::Tool { index, problem })?;
        if !names.insert(declared.name.clone()) {
            return Err(ToolsError::Tool {
                index,
                problem: format!(
                    "tool '{}' is declared twice",
                    tool.get("name").and_then(Value::as_str).unwrap_or_default()
                ),
            });
        }
        out.push(declared);
    }
    Ok(Some(out))
}

/// A request's `tools` that toolgate cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolsError {
    #[error("tools must be a list of tool objects")]
    NotAList,
    /// Entry `index` is wrong.
    #[error("tools[{index}]: {problem}")]
    Tool { index: usize, problem: String },
}

/// One entry of `tools`, a function tool; `Err` says what is wrong with it.
fn read_tool(tool: &Value) -> Result<ClientTool, String> {
    if !tool.is_object() {
        return Err("a tool is a JSON object".into());
    }
    let custom = match tool.get("type").and_then(Value::as_str) {
        Some("function") => false,
        Some("custom") => true,
        Some(other) => {
            return Err(format!(
                "tools of type '{other}' are not supported; declare your own tools as type 'function' or 'custom' (the agent's own tools come from its agent file)"
            ));
        }
        None => return Err("a tool needs a 'type' (function or custom)".into()),
    };
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| "a tool needs a 'name' string".to_string())?;
    let description = match tool.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err("'description' must be a string".into()),
    };
    if custom {
        return ClientTool::custom(name, description, tool.get("format"))
            .map_err(|e| e.to_string());
    }
    ClientTool::new(name, description, tool.get("parameters")).map_err(|e| e.to_string())
}

/// The name of a declared tool the agent has already, if any.
pub fn clash<'a>(declared: &'a [ClientTool], agent_tools: &[String]) -> Option<&'a str> {
    declared
        .iter()
        .find(|t| agent_tools.contains(&t.name))
        .map(|t| t.name.as_str())
}

/// A declared tool as the response lists it.
pub fn listed(tool: &ClientTool) -> Value {
    if let Some(format) = tool.custom_format() {
        return json!({
            "type": "custom",
            "name": tool.name,
            "description": tool.description,
            "format": format,
        });
    }
    json!({
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": false,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn function_tools_are_read_and_others_refused() {
        assert_eq!(read(None).unwrap(), None);
        assert_eq!(read(Some(&json!([]))).unwrap(), Some(Vec::new()));
        let tools = read(Some(&json!([{"type": "function", "name": "get_weather",
            "description": "Weather in a city", "strict": true,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"], "additionalProperties": false}}])))
        .unwrap()
        .unwrap();
        assert_eq!(tools[0].name, "get_weather");
        let custom = read(Some(&json!([{"type": "custom", "name": "run_sql",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: \"x\""}}])))
        .unwrap()
        .unwrap();
        assert_eq!(custom[0].custom_format().unwrap()["syntax"], "lark");
        let shown = listed(&custom[0]);
        assert_eq!(
            (shown["type"].as_str(), shown["name"].as_str()),
            (Some("custom"), Some("run_sql"))
        );
        let cases = [
            (json!({}), "tools must be a list"),
            (
                json!([{"type": "web_search"}]),
                "tools[0]: tools of type 'web_search' are not supported",
            ),
            (json!([{"name": "x"}]), "needs a 'type'"),
            (json!([{"type": "function"}]), "needs a 'name'"),
            (
                json!([{"type": "function", "name": "x", "parameters": {"type": "object", "properties": {"a": {"type": 5}}}}]),
                "not a usable JSON Schema",
            ),
            (
                json!([{"type": "function", "name": "x"}, {"type": "function", "name": "x"}]),
                "tools[1]: tool 'x' is declared twice",
            ),
        ];
        for (tools, expected) in cases {
            let err = read(Some(&tools)).unwrap_err().to_string();
            assert!(err.contains(expected), "{tools}: {err}");
        }
        assert_eq!(clash(&tools, &["calculator".into()]), None);
        assert_eq!(clash(&tools, &["get_weather".into()]), Some("get_weather"));
    }
}
