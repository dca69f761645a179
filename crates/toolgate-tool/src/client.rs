//! Client tools a caller declares for one run (the Responses API's request `tools` of
//! type `function`, and `custom` ones: see [`crate::custom`]): definition-only tools, kept in the run's state so that a resume in
//! any process offers them again, never run by toolgate.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::library::LoadedTool;
use super::schema::Schema;
use super::source::Origin;
use super::spec::{Entry, Permission, ToolSpec};

/// The longest tool name a caller may declare (OpenAI's limit).
pub const MAX_NAME: usize = 64;

/// One tool the client declared: the model may call it, and the run pauses for the
/// client's output (`requires_action`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// A JSON Schema object; `{"type": "object", "properties": {}}` when the client
    /// declared none.
    pub parameters: Value,
}

impl ClientTool {
    /// A declared tool, its name and parameters checked; the error is a sentence for
    /// the client.
    pub fn new(
        name: &str,
        description: Option<&str>,
        parameters: Option<&Value>,
    ) -> Result<ClientTool, ClientToolError> {
        check_name(name)?;
        let parameters = match parameters {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(p) => p.clone(),
        };
        if parameters.get("type").and_then(Value::as_str) != Some("object") {
            return Err(ClientToolError::NotAnObject {
                name: name.to_string(),
            });
        }
        let tool = ClientTool {
            name: name.to_string(),
            description: description.unwrap_or_default().to_string(),
            parameters,
        };
        tool.loaded()?;
        Ok(tool)
    }

    /// The tool as a toolkit holds it: definition-only, AUTO (the gate hands every
    /// call of it to the client).
    /// A custom tool: freeform input in `format` (unconstrained text when `None`, or a
    /// `lark` / `regex` grammar), checked.
    pub fn custom(
        name: &str,
        description: Option<&str>,
        format: Option<&Value>,
    ) -> Result<ClientTool, ClientToolError> {
        let format = crate::custom::read_format(format).map_err(|why| ClientToolError::Format {
            name: name.to_string(),
            why,
        })?;
        ClientTool::new(name, description, Some(&crate::custom::parameters(&format)))
    }

    /// Its format, when it is a custom tool.
    pub fn custom_format(&self) -> Option<&Value> {
        crate::custom::format_of(&self.parameters)
    }

    pub fn loaded(&self) -> Result<LoadedTool, ClientToolError> {
        let schema = Schema::compile_full(&self.parameters).map_err(|source| {
            ClientToolError::Parameters {
                name: self.name.clone(),
                source,
            }
        })?;
        let spec = ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
            permission: Permission::Auto,
            entry: Entry::Client,
            category: None,
            timeout: None,
            tags: vec!["client".into()],
            version: None,
            read_only: false,
            output: None,
            credentials: Default::default(),
            is_final: false,
            hidden: false,
            sandbox: None,
            display: Default::default(),
        };
        // Definition only: the client runs it.
        Ok(LoadedTool::new(spec, schema, None, Origin::PROGRAM, None))
    }
}

/// A name a model can call: 1 to 64 of `a-z A-Z 0-9 _ -`.
fn check_name(name: &str) -> Result<(), ClientToolError> {
    let fits = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if fits {
        Ok(())
    } else {
        Err(ClientToolError::Name {
            name: name.to_string(),
        })
    }
}

/// Why a tool a client declared cannot be used; each message is a sentence for the
/// client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientToolError {
    /// The name is empty, too long, or has other characters.
    #[error("tool name '{name}' is not usable: 1 to {MAX_NAME} letters, digits, '_' or '-'")]
    Name { name: String },
    /// `parameters` is not an object schema.
    #[error("tool '{name}': 'parameters' must be a JSON Schema with \"type\": \"object\"")]
    NotAnObject { name: String },
    /// `parameters` does not compile.
    #[error("tool '{name}': 'parameters' is not a usable JSON Schema: {source}")]
    Parameters {
        name: String,
        source: crate::SchemaError,
    },
    /// A custom tool's `format` is wrong.
    #[error("tool '{name}': {why}")]
    Format { name: String, why: String },
}

impl From<ClientToolError> for String {
    fn from(e: ClientToolError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn declared_tools_are_checked() {
        let t = ClientTool::new("get_weather", Some("Weather"), None).unwrap();
        assert_eq!(t.parameters["type"], "object");
        assert!(t.loaded().unwrap().definition_only());
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"], "additionalProperties": false});
        assert!(ClientTool::new("w", None, Some(&schema)).is_ok());
        let cases = [
            ("", json!({"type": "object"}), "not usable"),
            ("a b", json!({"type": "object"}), "not usable"),
            ("w", json!({"type": "string"}), "\"type\": \"object\""),
            (
                "w",
                json!({"type": "object", "properties": {"x": {"type": "nope"}}}),
                "not a usable JSON Schema",
            ),
        ];
        for (name, parameters, expected) in cases {
            let err = ClientTool::new(name, None, Some(&parameters)).unwrap_err();
            assert!(
                err.to_string().contains(expected),
                "{name} {parameters}: {err}"
            );
        }
    }
}
