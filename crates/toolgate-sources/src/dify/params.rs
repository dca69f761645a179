//! A Dify tool's parameters in toolgate's terms: `form: llm` ones become the model's
//! input schema (string, number, boolean, select as an enum, secret-input as a secret,
//! file as a path or URL), `form: form` ones and the provider's credentials come from
//! configuration: an environment variable when it is set, else a stored secret
//! (`toolgate secrets set`). A form parameter with a default uses it when neither is
//! set.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::files::{RawCredential, RawParam, english};
use toolgate_tool::Credential;

/// The model's schema, the values from configuration and the form defaults.
#[derive(Debug, Default)]
pub struct Split {
    pub schema: Value,
    pub credentials: BTreeMap<String, Credential>,
    pub form_defaults: Map<String, Value>,
}

/// The environment variable that may hold a configured value: `DIFY_` and the parts in
/// capitals, `_` between (`DIFY_WEATHER_API_KEY`).
pub fn env_name(parts: &[&str]) -> String {
    let mut name = String::from("DIFY");
    for p in parts {
        name.push('_');
        name.extend(p.chars().map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        }));
    }
    name
}

/// Where a configured value comes from: the environment variable when this process has
/// it, else the stored secret `secret`.
fn configured(env: String, secret: String) -> Credential {
    if std::env::var_os(&env).is_some() {
        Credential::Env(env)
    } else {
        Credential::Secret(secret)
    }
}

/// The provider's credentials: each required one from `DIFY_PROVIDER_KEY` or the
/// secret `provider.key`; an optional one only when its variable is set.
pub fn provider_credentials(
    provider: &str,
    raw: &BTreeMap<String, RawCredential>,
) -> Result<BTreeMap<String, Credential>, String> {
    let mut out = BTreeMap::new();
    for (key, c) in raw {
        if !matches!(
            c.kind.as_str(),
            "secret-input" | "text-input" | "select" | "boolean" | "app-selector"
        ) {
            return Err(format!(
                "credentials_for_provider: '{key}' has type '{}' (secret-input, text-input, select or boolean)",
                c.kind
            ));
        }
        let env = env_name(&[provider, key]);
        if c.required || std::env::var_os(&env).is_some() {
            out.insert(key.clone(), configured(env, format!("{provider}.{key}")));
        }
    }
    Ok(out)
}

/// Splits a tool's parameters.
pub fn split(provider: &str, tool: &str, params: &[RawParam]) -> Result<Split, String> {
    let mut out = Split::default();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in params {
        let fail = |m: String| format!("parameter '{}': {m}", p.name);
        let mut prop = schema_of(p).map_err(fail)?;
        match p.form.as_deref().unwrap_or("llm") {
            "llm" => {
                let description = p
                    .llm_description
                    .clone()
                    .or_else(|| english(&p.human_description))
                    .or_else(|| english(&p.label));
                if let (Some(d), Some(o)) = (description, prop.as_object_mut()) {
                    o.insert("description".into(), json!(d));
                }
                if p.required {
                    required.push(json!(p.name));
                }
                properties.insert(p.name.clone(), prop);
            }
            "form" => {
                let env = env_name(&[provider, tool, &p.name]);
                let default = prop.get_mut("default").map(Value::take);
                match default {
                    Some(d) if std::env::var_os(&env).is_none() => {
                        out.form_defaults.insert(p.name.clone(), d);
                    }
                    _ if p.required || std::env::var_os(&env).is_some() => {
                        out.credentials.insert(
                            p.name.clone(),
                            configured(env, format!("{provider}.{tool}.{}", p.name)),
                        );
                    }
                    _ => {}
                }
            }
            other => {
                return Err(fail(format!(
                    "form must be llm (the model fills it) or form (set in configuration), not '{other}'"
                )));
            }
        }
    }
    out.schema = json!({"type": "object", "properties": properties, "required": required});
    Ok(out)
}

/// One parameter's JSON Schema (its description is added by the caller).
fn schema_of(p: &RawParam) -> Result<Value, String> {
    let mut s = Map::new();
    let number = |v: &Value| match v {
        Value::Number(_) => Some(v.clone()),
        Value::String(t) => t.trim().parse::<f64>().ok().map(|f| json!(f)),
        _ => None,
    };
    match p.kind.as_str() {
        "string" | "text-input" | "paragraph" => {
            s.insert("type".into(), json!("string"));
        }
        "secret-input" => {
            s.insert("type".into(), json!("string"));
            s.insert("secret".into(), json!(true));
        }
        "number" => {
            s.insert("type".into(), json!("number"));
            for (key, v) in [("minimum", &p.min), ("maximum", &p.max)] {
                if let Some(v) = v {
                    let n = number(v).ok_or(format!("{key} must be a number, not {v}"))?;
                    s.insert(key.into(), n);
                }
            }
        }
        "boolean" | "checkbox" => {
            s.insert("type".into(), json!("boolean"));
        }
        "select" => {
            if p.options.is_empty() {
                return Err("a select needs options".into());
            }
            let values: Vec<Value> = p
                .options
                .iter()
                .map(|o| match &o.value {
                    Value::String(s) => json!(s),
                    other => json!(other.to_string()),
                })
                .collect();
            s.insert("type".into(), json!("string"));
            s.insert("enum".into(), Value::Array(values));
        }
        "file" => {
            s.insert("type".into(), json!("string"));
            s.insert("format".into(), json!("uri-reference"));
        }
        "files" => {
            s.insert("type".into(), json!("array"));
            s.insert("items".into(), json!({"type": "string"}));
        }
        other => {
            return Err(format!(
                "type '{other}' is not supported (string, number, boolean, select, secret-input, file, files)"
            ));
        }
    }
    if let Some(d) = &p.default {
        let d = match (p.kind.as_str(), d) {
            (_, Value::Null) => None,
            ("number", v) => Some(number(v).ok_or(format!("default must be a number, not {v}"))?),
            ("boolean" | "checkbox", Value::String(t)) => Some(json!(t == "true")),
            ("boolean" | "checkbox", Value::Number(n)) => Some(json!(n.as_f64() != Some(0.0))),
            ("select", v) => {
                let v = match v {
                    Value::String(_) => v.clone(),
                    other => json!(other.to_string()),
                };
                if !s["enum"].as_array().is_some_and(|e| e.contains(&v)) {
                    return Err(format!("default {v} is not one of its options"));
                }
                Some(v)
            }
            (_, v) => Some(v.clone()),
        };
        if let Some(d) = d {
            s.insert("default".into(), d);
        }
    }
    Ok(Value::Object(s))
}
