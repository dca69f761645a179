//! Dify's provider and tool YAMLs as written (the plugin layout: `manifest.yaml`,
//! `provider/NAME.yaml` with `identity`, `credentials_for_provider` and `tools:`, and
//! `tools/TOOL.yaml` with `identity`, `description.human/llm` and `parameters`).
//! Display-only keys (labels, icons, help) are read and left aside; a key Dify does
//! not have is refused.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// `identity:` of a provider or a tool: only the name is used.
#[derive(Debug, Deserialize)]
pub struct Identity {
    pub name: String,
    #[serde(flatten)]
    pub _shown: BTreeMap<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Extra {
    #[serde(default)]
    pub python: Option<Python>,
}

#[derive(Debug, Deserialize)]
pub struct Python {
    pub source: String,
}

/// A provider YAML.
// Display-only keys are read (so that an unknown one is refused) and not used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProvider {
    pub identity: Identity,
    #[serde(default)]
    pub credentials_for_provider: BTreeMap<String, RawCredential>,
    /// Tool YAMLs, relative to the plugin's folder.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub extra: Extra,
    #[serde(default)]
    pub oauth_schema: Option<Value>,
}

/// One entry of `credentials_for_provider`.
// Display-only keys are read (so that an unknown one is refused) and not used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCredential {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub label: Option<Value>,
    #[serde(default)]
    pub placeholder: Option<Value>,
    #[serde(default)]
    pub help: Option<Value>,
    #[serde(default)]
    pub url: Option<Value>,
    #[serde(default)]
    pub options: Option<Value>,
    #[serde(default)]
    pub scope: Option<Value>,
    #[serde(default)]
    pub name: Option<String>,
}

/// A tool YAML.
// Display-only keys are read (so that an unknown one is refused) and not used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTool {
    pub identity: Identity,
    #[serde(default)]
    pub description: Option<Description>,
    #[serde(default)]
    pub parameters: Vec<RawParam>,
    #[serde(default)]
    pub extra: Extra,
    /// Dify's description of the tool's variables: read, not checked.
    #[serde(default)]
    pub output_schema: Option<Value>,
    #[serde(default)]
    pub has_runtime_parameters: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Description {
    #[serde(default)]
    pub human: Option<Value>,
    #[serde(default)]
    pub llm: Option<String>,
}

/// One parameter of a tool.
// Display-only keys are read (so that an unknown one is refused) and not used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawParam {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// `llm` (the model fills it) or `form` (set once in configuration).
    #[serde(default)]
    pub form: Option<String>,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub min: Option<Value>,
    #[serde(default)]
    pub max: Option<Value>,
    #[serde(default)]
    pub options: Vec<RawOption>,
    #[serde(default)]
    pub llm_description: Option<String>,
    #[serde(default)]
    pub human_description: Option<Value>,
    #[serde(default)]
    pub label: Option<Value>,
    #[serde(default)]
    pub placeholder: Option<Value>,
    #[serde(default)]
    pub precision: Option<Value>,
    #[serde(default)]
    pub scope: Option<Value>,
    #[serde(default)]
    pub auto_generate: Option<Value>,
    #[serde(default)]
    pub template: Option<Value>,
    #[serde(default)]
    pub input_schema: Option<Value>,
}

// Display-only keys are read (so that an unknown one is refused) and not used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOption {
    pub value: Value,
    #[serde(default)]
    pub label: Option<Value>,
    #[serde(default)]
    pub icon: Option<Value>,
}

/// `{en_US: ..., zh_Hans: ...}` or a plain string: the English text.
pub fn english(v: &Option<Value>) -> Option<String> {
    match v.as_ref()? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o
            .get("en_US")
            .or_else(|| o.values().next())
            .and_then(Value::as_str)
            .map(String::from),
        _ => None,
    }
}
