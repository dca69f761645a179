//! `tool_choice`: whether the model may, must, or must not call a tool (or must call
//! one named tool), and its form for OpenAI-compatible and Anthropic servers.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Whether the model may call tools: `auto | required | none | {name: TOOL}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default; not sent to the server).
    #[default]
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}

/// A `tool_choice` value that is none of the forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool_choice must be auto, required, none or {{name: TOOL}}; got {0}")]
pub struct ToolChoiceError(pub String);

impl ToolChoice {
    /// The JSON Schema of what [`ToolChoice::read`] takes.
    pub fn file_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Whether the model may (`auto`, the default), must (`required`) or must \
                not (`none`) call tools, or must call one: `{name: TOOL}`.",
            "anyOf": [
                {"enum": ["auto", "required", "any", "none"]},
                {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]},
                {
                    "type": "object",
                    "properties": {"type": {"const": "function"}, "function": {
                        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
                    }},
                    "required": ["function"]
                }
            ]
        })
    }

    /// Reads `auto`, `required`, `none`, `{name: TOOL}` (the Responses API's
    /// `{"type": "function" | "custom", "name": TOOL}`), or OpenAI's
    /// `{"type": "function", "function": {"name": TOOL}}` or
    /// `{"type": "custom", "custom": {"name": TOOL}}`.
    pub fn read(v: &Value) -> Result<Self, ToolChoiceError> {
        let named = v
            .get("name")
            .or_else(|| v.pointer("/function/name"))
            .or_else(|| v.pointer("/custom/name"))
            .and_then(Value::as_str);
        match (v.as_str(), named) {
            (Some("auto"), _) => Ok(Self::Auto),
            (Some("required" | "any"), _) => Ok(Self::Required),
            (Some("none"), _) => Ok(Self::None),
            (None, Some(name)) if !name.is_empty() => Ok(Self::Tool(name.to_string())),
            _ => Err(ToolChoiceError(v.to_string())),
        }
    }

    /// The form an OpenAI-compatible server takes; `None` for auto (left unsent).
    pub fn openai(&self) -> Option<Value> {
        match self {
            Self::Auto => None,
            Self::Required => Some(json!("required")),
            Self::None => Some(json!("none")),
            Self::Tool(name) => Some(json!({"type": "function", "function": {"name": name}})),
        }
    }

    /// The form Anthropic's Messages API takes; `None` for auto (left unsent).
    pub fn anthropic(&self) -> Option<Value> {
        match self {
            Self::Auto => None,
            Self::Required => Some(json!({"type": "any"})),
            Self::None => Some(json!({"type": "none"})),
            Self::Tool(name) => Some(json!({"type": "tool", "name": name})),
        }
    }

    /// Its name in messages: `auto`, `required`, `none` or the tool's name.
    pub fn label(&self) -> &str {
        match self {
            Self::Auto => "auto",
            Self::Required => "required",
            Self::None => "none",
            Self::Tool(name) => name,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_custom_tool_is_chosen_in_either_form() {
        for v in [
            serde_json::json!({"type": "custom", "name": "run_sql"}),
            serde_json::json!({"type": "custom", "custom": {"name": "run_sql"}}),
        ] {
            assert_eq!(
                ToolChoice::read(&v).unwrap(),
                ToolChoice::Tool("run_sql".into())
            );
        }
    }

    #[test]
    fn reads_every_form_and_writes_each_servers_own() {
        assert_eq!(ToolChoice::read(&json!("auto")).unwrap(), ToolChoice::Auto);
        assert_eq!(
            ToolChoice::read(&json!("required")).unwrap(),
            ToolChoice::Required
        );
        assert_eq!(ToolChoice::read(&json!("none")).unwrap(), ToolChoice::None);
        let named = ToolChoice::read(&json!({"name": "echo"})).unwrap();
        assert_eq!(named, ToolChoice::Tool("echo".into()));
        let openai = json!({"type": "function", "function": {"name": "echo"}});
        assert_eq!(ToolChoice::read(&openai).unwrap(), named);
        assert_eq!(named.openai().unwrap(), openai);
        assert_eq!(
            named.anthropic().unwrap(),
            json!({"type": "tool", "name": "echo"})
        );
        assert_eq!(
            ToolChoice::Required.anthropic().unwrap(),
            json!({"type": "any"})
        );
        assert_eq!(ToolChoice::Auto.openai(), None);
        assert!(ToolChoice::read(&json!("sometimes")).is_err());
        assert!(ToolChoice::read(&json!({"name": ""})).is_err());
    }
}
