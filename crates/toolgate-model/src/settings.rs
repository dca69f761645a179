//! Per-agent model settings: the map form of an agent's `model:` (`name`, `base_url`,
//! `api_key_env`, `temperature`, `top_p`, `max_tokens`, `reasoning_effort`, `headers`,
//! `timeout`) and its `fallback:` list, read and checked once, carried to the request.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The reasoning efforts a request may name.
pub const REASONING_EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];

/// How an agent's requests to its model are made. Every field is optional: unset,
/// the provider's environment (`OPENAI_*`, `ANTHROPIC_*`) and the server's defaults
/// apply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// The server to ask instead of the provider's `*_BASE_URL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the key, instead of `OPENAI_API_KEY` /
    /// `ANTHROPIC_API_KEY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling: the probability mass the tokens are drawn from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The longest answer, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// `none`, `minimal`, `low`, `medium`, `high` or `xhigh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The longest silence while an answer streams, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Whether the model takes images (`false`: images from tools reach it as text);
    /// unset, only the models known to read text only get text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
}

/// A model and its settings: an agent's `model:`, or one entry of its `fallback:`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// `openai:NAME`, `anthropic:NAME` or `scripted:FILE`.
    pub name: String,
    pub settings: ModelSettings,
}

/// The map form of a model: its name and settings.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ModelSettings")]
struct RawSpec {
    /// `openai:NAME`, `anthropic:NAME` or `scripted:FILE`.
    name: String,
    #[serde(flatten)]
    settings: ModelSettings,
}

impl ModelSpec {
    /// The JSON Schema of what [`ModelSpec::from_value`] reads: a name, or a map with
    /// `name` and settings.
    pub fn file_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let map = generator.subschema_for::<RawSpec>();
        schemars::json_schema!({
            "description": "A model: `openai:NAME`, `anthropic:NAME` or `scripted:FILE`, or a map \
                with that `name` and the settings of its requests.",
            "anyOf": [{"type": "string", "pattern": "^[a-z_]+:.+$"}, map]
        })
    }

    /// Reads `model:` (or a `fallback:` entry): a name, or a map with `name` and
    /// settings. The message names the field at fault.
    pub fn from_value(value: &Value) -> Result<ModelSpec, SettingsError> {
        let spec = match value {
            Value::String(name) => ModelSpec {
                name: name.clone(),
                settings: ModelSettings::default(),
            },
            Value::Object(map) => {
                if let Some(unknown) = map.keys().find(|k| !KNOWN.contains(&k.as_str())) {
                    return Err(SettingsError::Unknown(unknown.clone()));
                }
                if !map.contains_key("name") {
                    return Err(SettingsError::NoName);
                }
                let raw: RawSpec = serde_json::from_value(value.clone())
                    .map_err(|e| SettingsError::Read(e.to_string()))?;
                ModelSpec {
                    name: raw.name,
                    settings: raw.settings,
                }
            }
            other => {
                return Err(SettingsError::NotASpec(other.to_string()));
            }
        };
        spec.settings.check()?;
        Ok(spec)
    }
}

const KNOWN: &[&str] = &[
    "name",
    "base_url",
    "api_key_env",
    "temperature",
    "top_p",
    "max_tokens",
    "reasoning_effort",
    "headers",
    "timeout",
    "vision",
];

impl ModelSettings {
    /// Checks each value's range, so that a bad one is a load error, not a refused
    /// request in the middle of a run.
    pub fn check(&self) -> Result<(), SettingsError> {
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(SettingsError::Temperature(t));
        }
        if let Some(p) = self.top_p
            && !(0.0..=1.0).contains(&p)
        {
            return Err(SettingsError::TopP(p));
        }
        if self.max_tokens == Some(0) {
            return Err(SettingsError::MaxTokens);
        }
        if let Some(e) = &self.reasoning_effort
            && !REASONING_EFFORTS.contains(&e.as_str())
        {
            return Err(SettingsError::ReasoningEffort(e.clone()));
        }
        if let Some(t) = self.timeout
            && !(t.is_finite() && t > 0.0)
        {
            return Err(SettingsError::Timeout(t));
        }
        if let Some(var) = &self.api_key_env
            && (var.is_empty() || var.contains('=') || var.contains('\0'))
        {
            return Err(SettingsError::ApiKeyEnv(var.clone()));
        }
        if let Some(url) = &self.base_url
            && url::Url::parse(url).is_err()
        {
            return Err(SettingsError::BaseUrl(url.clone()));
        }
        for (k, v) in &self.headers {
            reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| SettingsError::HeaderName(k.clone()))?;
            reqwest::header::HeaderValue::from_str(v)
                .map_err(|_| SettingsError::HeaderValue(k.clone()))?;
        }
        Ok(())
    }

    /// The key named by `api_key_env`, when it names one: an error when it is unset.
    pub fn api_key(&self) -> Result<Option<String>, SettingsError> {
        match &self.api_key_env {
            None => Ok(None),
            Some(var) => match std::env::var(var) {
                Ok(v) if !v.trim().is_empty() => Ok(Some(v)),
                _ => Err(SettingsError::ApiKeyUnset(var.clone())),
            },
        }
    }
}

/// Why a model's settings are refused; each message names the field at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    /// A key that is not a setting.
    #[error("unknown setting '{0}' (known: {known})", known = KNOWN.join(", "))]
    Unknown(String),
    /// The map form without `name`.
    #[error("the map form needs 'name' (for example openai:gpt-4o)")]
    NoName,
    /// The map form does not read (a value of the wrong type).
    #[error("{0}")]
    Read(String),
    /// Neither a name nor a map.
    #[error("expected a model name or a map with 'name', found {0}")]
    NotASpec(String),
    #[error("'temperature' must be between 0 and 2, not {0}")]
    Temperature(f64),
    #[error("'top_p' must be between 0 and 1, not {0}")]
    TopP(f64),
    #[error("'max_tokens' must be at least 1")]
    MaxTokens,
    #[error("'reasoning_effort' is '{0}'; use one of {efforts}", efforts = REASONING_EFFORTS.join(", "))]
    ReasoningEffort(String),
    #[error("'timeout' must be a positive number of seconds, not {0}")]
    Timeout(f64),
    #[error("'api_key_env' is not a variable name: '{0}'")]
    ApiKeyEnv(String),
    #[error("'base_url' is not a URL: '{0}'")]
    BaseUrl(String),
    #[error("'headers': '{0}' is not a header name")]
    HeaderName(String),
    #[error("'headers': the value of '{0}' is not a header value")]
    HeaderValue(String),
    /// `api_key_env` names a variable that is not set.
    #[error("the model's api_key_env names {0}, which is not set")]
    ApiKeyUnset(String),
}

impl From<SettingsError> for String {
    fn from(e: SettingsError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn the_string_form_and_the_map_form_read_alike() {
        let a = ModelSpec::from_value(&json!("openai:gpt-4o")).unwrap();
        let b = ModelSpec::from_value(&json!({"name": "openai:gpt-4o"})).unwrap();
        assert_eq!(a, b);
        let c = ModelSpec::from_value(
            &json!({"name": "openai:o3", "temperature": 0.2, "top_p": 0.9,
            "max_tokens": 100, "reasoning_effort": "high", "headers": {"x-a": "1"}, "timeout": 5}),
        )
        .unwrap();
        assert_eq!(c.settings.temperature, Some(0.2));
        assert_eq!(c.settings.headers["x-a"], "1");
        assert_eq!(c.settings.timeout, Some(5.0));
    }

    #[test]
    fn bad_values_are_named() {
        for (value, says) in [
            (json!({"name": "openai:x", "temperature": 3}), "temperature"),
            (json!({"name": "openai:x", "top_p": -1}), "top_p"),
            (json!({"name": "openai:x", "max_tokens": 0}), "max_tokens"),
            (
                json!({"name": "openai:x", "reasoning_effort": "max"}),
                "reasoning_effort",
            ),
            (json!({"name": "openai:x", "timeout": 0}), "timeout"),
            (
                json!({"name": "openai:x", "headers": {"bad header": "v"}}),
                "headers",
            ),
            (json!({"name": "openai:x", "colour": "red"}), "colour"),
            (json!({"temperature": 1}), "name"),
            (json!(42), "model name"),
        ] {
            let e = ModelSpec::from_value(&value).unwrap_err();
            assert!(e.to_string().contains(says), "{value}: {e}");
        }
    }
}
