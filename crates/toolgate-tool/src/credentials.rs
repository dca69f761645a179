//! Credentials a tool file asks for: values the model never sees nor fills (API keys,
//! tokens, Dify's `form: form` parameters), each from an environment variable or a
//! stored secret (`toolgate secrets set NAME`), injected into the call's arguments
//! after they are checked, and kept out of every record.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a credential's value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Credential {
    /// An environment variable of the process that runs the tool.
    Env(String),
    /// A secret stored sealed in the database.
    Secret(String),
}

impl Credential {
    /// Reads a tool file's `credentials:` value: `${env:VAR}`, `${secret:NAME}`,
    /// `{env: VAR}` or `{secret: NAME}`.
    pub fn parse(value: &Value) -> Result<Credential, CredentialError> {
        let named = |kind: &str, name: &str| {
            let name = name.trim();
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                return Err(CredentialError::NotAName {
                    kind: kind.to_string(),
                    name: name.to_string(),
                });
            }
            Ok(match kind {
                "env" => Credential::Env(name.to_string()),
                _ => Credential::Secret(name.to_string()),
            })
        };
        match value {
            Value::String(s) => {
                let inner = s
                    .trim()
                    .strip_prefix("${")
                    .and_then(|r| r.strip_suffix('}'))
                    .ok_or_else(|| CredentialError::NotASource(s.clone()))?;
                match inner.split_once(':') {
                    Some(("env", var)) => named("env", var),
                    Some(("secret", name)) => named("secret", name),
                    _ => Err(CredentialError::NotASource(s.clone())),
                }
            }
            Value::Object(o) if o.len() == 1 => match o.iter().next() {
                Some((k, Value::String(v))) if k == "env" || k == "secret" => named(k, v),
                _ => Err(CredentialError::NotAMapSource),
            },
            _ => Err(CredentialError::NotAnySource),
        }
    }

    /// Where it comes from and how to provide it, for an error message.
    pub fn how_to_set(&self) -> String {
        match self {
            Credential::Env(var) => format!("the environment variable {var} (set it for toolgate)"),
            Credential::Secret(name) => {
                format!("the stored secret {name} (toolgate secrets set {name})")
            }
        }
    }
}

/// One lookup: the value of a source, `Ok(None)` when it has none.
pub type Lookup = dyn Fn(&Credential) -> Result<Option<String>, String> + Send + Sync;

/// Looks credentials up.
#[derive(Clone)]
pub struct Resolver(pub Arc<Lookup>);

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
    }
}

impl Resolver {
    /// Environment variables only (no stored secrets).
    pub fn env_only() -> Resolver {
        Resolver(Arc::new(|c: &Credential| match c {
            Credential::Env(var) => Ok(std::env::var(var).ok()),
            Credential::Secret(name) => Err(format!(
                "stored secrets are not available here (secret {name})"
            )),
        }))
    }

    /// Every credential of a tool, by argument name; the first that is missing or
    /// fails is the error.
    pub fn resolve(
        &self,
        tool: &str,
        credentials: &BTreeMap<String, Credential>,
    ) -> Result<Map<String, Value>, CredentialError> {
        let mut out = Map::new();
        for (name, source) in credentials {
            match (self.0)(source) {
                Ok(Some(v)) => {
                    out.insert(name.clone(), Value::String(v));
                }
                Ok(None) => {
                    return Err(CredentialError::Unset {
                        tool: tool.to_string(),
                        name: name.clone(),
                        how: source.how_to_set(),
                    });
                }
                Err(e) => {
                    return Err(CredentialError::Unreadable {
                        tool: tool.to_string(),
                        name: name.clone(),
                        error: e,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// Takes the parameters a person fills (Dify's `form: form`) out of `schema`, so the
/// model never sees them, and drops `form: llm` marks; returns the names taken. Any
/// other `form` value is refused.
pub fn take_form_params(schema: &mut Value) -> Result<Vec<String>, CredentialError> {
    let mut taken = Vec::new();
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return Ok(taken);
    };
    for (name, prop) in props.iter_mut() {
        let Some(form) = prop.as_object_mut().and_then(|p| p.remove("form")) else {
            continue;
        };
        match form.as_str() {
            Some("form") => taken.push(name.clone()),
            Some("llm") => {}
            _ => {
                return Err(CredentialError::Form {
                    name: name.clone(),
                    form: form.to_string(),
                });
            }
        }
    }
    for name in &taken {
        props.remove(name);
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| taken.iter().any(|t| t == r)));
    }
    Ok(taken)
}

/// Why a credential's source cannot be read or its value had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// A variable or secret name with other characters.
    #[error("'{name}' is not a {kind} name")]
    NotAName { kind: String, name: String },
    /// A string that is not `${env:VAR}` or `${secret:NAME}`.
    #[error("'{0}' is not a source: write ${{env:VAR}} or ${{secret:NAME}}")]
    NotASource(String),
    /// A one-key map that is not `{env: VAR}` or `{secret: NAME}`.
    #[error("a source is {{env: VAR}} or {{secret: NAME}}")]
    NotAMapSource,
    /// Neither a string nor a one-key map.
    #[error("a source is ${{env:VAR}}, ${{secret:NAME}}, {{env: VAR}} or {{secret: NAME}}")]
    NotAnySource,
    /// A credential whose source has no value.
    #[error("tool '{tool}' needs its credential '{name}' from {how}, which is not set")]
    Unset {
        tool: String,
        name: String,
        how: String,
    },
    /// A credential whose lookup failed.
    #[error("tool '{tool}': its credential '{name}' cannot be read: {error}")]
    Unreadable {
        tool: String,
        name: String,
        error: String,
    },
    /// A `form:` mark that is neither `llm` nor `form`.
    #[error(
        "parameter '{name}': form must be llm (the model fills it) or form (a person sets it once), not {form}"
    )]
    Form { name: String, form: String },
}

impl From<CredentialError> for String {
    fn from(e: CredentialError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn sources_read_in_every_spelling_and_refuse_the_rest() {
        assert_eq!(
            Credential::parse(&json!("${env:GH_TOKEN}")).unwrap(),
            Credential::Env("GH_TOKEN".into())
        );
        assert_eq!(
            Credential::parse(&json!({"secret": "gh.token"})).unwrap(),
            Credential::Secret("gh.token".into())
        );
        for bad in [
            json!("GH_TOKEN"),
            json!("${file:x}"),
            json!({"env": ""}),
            json!(3),
        ] {
            assert!(Credential::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn form_parameters_leave_the_schema() {
        let mut schema = json!({"type": "object", "properties": {
            "query": {"type": "string", "form": "llm"},
            "api_key": {"type": "string", "form": "form"}
        }, "required": ["query", "api_key"]});
        assert_eq!(take_form_params(&mut schema).unwrap(), ["api_key"]);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]})
        );
        let mut typo = json!({"properties": {"q": {"type": "string", "form": "lm"}}});
        assert!(
            take_form_params(&mut typo)
                .unwrap_err()
                .to_string()
                .contains("not \"lm\"")
        );
    }
}
