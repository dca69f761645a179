//! Tool files (`tools/*.yaml`, `*.yml`, `*.json`, one tool each): reading, checking,
//! and the list form of parameters. A broken file is reported with its path, line and
//! what is wrong, and does not stop the others from loading.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::credentials::{self, Credential};
use super::schema::Schema;
use super::spec::{Entry, Permission, ToolSpec};
use super::{builtin, http};
use crate::parse::Schemas;

/// Why a tool file could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for LoadError {}

/// One tool read from a file: its spec, its compiled schema, where it came from.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub spec: ToolSpec,
    pub schema: Schema,
    pub path: PathBuf,
}

/// Everything read from a folder of tool files.
#[derive(Debug, Default)]
pub struct LoadedTools {
    pub tools: Vec<ToolDef>,
    pub errors: Vec<LoadError>,
}

impl LoadedTools {
    /// Tool name -> parameter schema, for the parser's coercion.
    pub fn schemas(&self) -> Schemas {
        self.tools
            .iter()
            .map(|t| (t.spec.name.clone(), t.spec.parameters.clone()))
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    permission: Permission,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    entry: Option<Entry>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    credentials: BTreeMap<String, Value>,
}

/// Reads every tool file in `dir` (not recursive), in name order.
pub fn load_dir(dir: &Path) -> Result<LoadedTools, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| LoadError {
        path: dir.to_path_buf(),
        line: None,
        message: format!("cannot read the tools folder: {e}"),
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            )
        })
        .collect();
    paths.sort();
    let mut loaded = LoadedTools::default();
    for path in paths {
        match load_file(&path) {
            Ok(tool) => {
                if let Some(first) = loaded.tools.iter().find(|t| t.spec.name == tool.spec.name) {
                    loaded.errors.push(LoadError {
                        message: format!(
                            "a tool named '{}' is already defined in {}",
                            tool.spec.name,
                            first.path.display()
                        ),
                        path,
                        line: None,
                    });
                } else {
                    loaded.tools.push(tool);
                }
            }
            Err(e) => loaded.errors.push(e),
        }
    }
    Ok(loaded)
}

/// Reads one tool file: parses it, compiles its schema, checks its entry.
pub fn load_file(path: &Path) -> Result<ToolDef, LoadError> {
    let fail = |line: Option<usize>, message: String| LoadError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| fail(None, format!("cannot read: {e}")))?;
    let is_json = path.extension().and_then(|e| e.to_str()) == Some("json");
    let raw: RawTool = if is_json {
        serde_json::from_str(&text).map_err(|e| fail(Some(e.line()), e.to_string()))?
    } else {
        serde_saphyr::from_str(&text).map_err(|e| {
            let message = e.to_string();
            let line = e.location().map(|l| l.line() as usize);
            fail(line, first_line(&message))
        })?
    };
    // Errors found after parsing: point at the line of the key at fault.
    let fail_at = |keys: &[&str], message: String| {
        let line = line_of(&text, keys);
        fail(line, message)
    };
    let name = raw.name.trim().to_string();
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid_name {
        return Err(fail_at(
            &["name"],
            format!("name '{name}' must be letters, digits, '_', '-' or '.'"),
        ));
    }
    let mut parameters = match raw.parameters {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(Value::Array(list)) => list_form(&list)
            .map_err(|m| fail_at(&["parameters", quoted_name(&m)], format!("parameters: {m}")))?,
        Some(Value::Object(schema)) => {
            match schema.get("type") {
                None => {}
                Some(Value::String(t)) if t == "object" => {}
                Some(other) => {
                    return Err(fail(
                        None,
                        format!("parameters: type must be \"object\", not {other}"),
                    ));
                }
            }
            Value::Object(schema)
        }
        Some(_) => {
            return Err(fail_at(
                &["parameters"],
                "parameters must be a JSON Schema object or a list of parameters".to_string(),
            ));
        }
    };
    // Credentials: the file's, and the parameters a person fills (`form: form`), which
    // leave the schema the model sees.
    let mut credentials = BTreeMap::new();
    for (arg, source) in &raw.credentials {
        let source = Credential::parse(source)
            .map_err(|m| fail_at(&["credentials", arg], format!("credentials: '{arg}': {m}")))?;
        credentials.insert(arg.clone(), source);
    }
    for arg in credentials::take_form_params(&mut parameters) {
        credentials
            .entry(arg.clone())
            .or_insert_with(|| Credential::Secret(format!("{name}.{arg}")));
    }
    if let Some(arg) = credentials.keys().find(|a| {
        parameters
            .get("properties")
            .and_then(|p| p.get(a.as_str()))
            .is_some()
    }) {
        return Err(fail_at(
            &["credentials", arg],
            format!(
                "credentials: '{arg}' is also a parameter the model fills; take it out of parameters"
            ),
        ));
    }
    if raw.timeout.is_some_and(|t| !(t > 0.0 && t.is_finite())) {
        return Err(fail(
            None,
            "timeout must be a positive number of seconds".into(),
        ));
    }
    let schema = Schema::compile(&parameters).map_err(|m| {
        // "u.v: pattern does not compile" -> the keys parameters, u, v, pattern.
        let (path, rest) = m.split_once(": ").unwrap_or(("", &m));
        let mut keys = vec!["parameters"];
        keys.extend(
            path.split('.')
                .filter(|k| !k.is_empty() && !k.contains(' ')),
        );
        keys.extend(rest.split_whitespace().next());
        fail_at(&keys, format!("parameters: {m}"))
    })?;
    let entry = raw.entry.unwrap_or(Entry::Client);
    check_entry(&entry).map_err(|m| fail_at(&["entry"], m))?;
    let spec = ToolSpec {
        name,
        description: raw.description,
        parameters,
        permission: raw.permission,
        entry,
        category: raw.category,
        timeout: raw.timeout,
        tags: raw.tags,
        version: raw.version.map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        }),
        read_only: raw.read_only,
        credentials,
    };
    Ok(ToolDef {
        spec,
        schema,
        path: path.to_path_buf(),
    })
}

/// Entry settings that can be checked before any call.
fn check_entry(entry: &Entry) -> Result<(), String> {
    match entry {
        Entry::Builtin { handler } if !builtin::HANDLERS.contains(&handler.as_str()) => {
            Err(format!(
                "entry: there is no built-in handler '{handler}' (there are: {})",
                builtin::HANDLERS.join(", ")
            ))
        }
        Entry::Command { command, .. } if command.trim().is_empty() => {
            Err("entry: command must name a program".into())
        }
        Entry::Http { .. } => http::check_entry(entry),
        _ => Ok(()),
    }
}

/// The line (1-based) where `keys` appear one after the other as keys (`key:`,
/// `"key"`, or `name: key` in the list form); the deepest one found.
pub(crate) fn line_of(text: &str, keys: &[&str]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    let mut found = None;
    for key in keys {
        let patterns = [
            format!("{key}:"),
            format!("\"{key}\""),
            format!("name: {key}"),
        ];
        match (from..lines.len()).find(|&i| patterns.iter().any(|p| lines[i].contains(p.as_str())))
        {
            Some(i) => {
                found = Some(i + 1);
                from = i;
            }
            None => break,
        }
    }
    found
}

/// The parameter a list-form message is about (`parameter 'x' ...`, `item 2 ...`).
fn quoted_name(message: &str) -> &str {
    message
        .split('\'')
        .nth(1)
        .filter(|n| !n.contains(' '))
        .unwrap_or("")
}

pub(crate) fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    match line
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
    {
        Some((position, message)) if position.contains("column") => message.to_string(),
        _ => line.to_string(),
    }
}

/// Keys a parameter of the list form may have besides `name`, `required`, `validation`.
const LIST_FORM_KEYS: [&str; 21] = [
    "type",
    "description",
    "default",
    "enum",
    "items",
    "properties",
    "secret",
    "format",
    "examples",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "additionalProperties",
    "nullable",
    "title",
    "const",
    "form",
];

/// `[{name, type, required, description, default, validation: {...}}]` to a schema.
fn list_form(list: &[Value]) -> Result<Value, String> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let Some(obj) = item.as_object() else {
            return Err(format!("item {} is not a map", i + 1));
        };
        let name = match obj.get("name") {
            Some(Value::String(n)) if !n.trim().is_empty() => n.as_str(),
            None => return Err(format!("item {} has no name", i + 1)),
            Some(other) => {
                return Err(format!(
                    "item {}: name must be text, not {other} (quote it: name: \"{other}\")",
                    i + 1
                ));
            }
        };
        let mut prop = Map::new();
        for (k, v) in obj {
            match k.as_str() {
                "name" => {}
                "required" => {
                    if v.as_bool() == Some(true) {
                        required.push(Value::String(name.to_string()));
                    }
                }
                "validation" => {
                    let Some(rules) = v.as_object() else {
                        return Err(format!("validation of '{name}' is not a map"));
                    };
                    for (rk, rv) in rules {
                        let key = match rk.as_str() {
                            "min" => "minimum",
                            "max" => "maximum",
                            "min_length" => "minLength",
                            "max_length" => "maxLength",
                            other => other,
                        };
                        prop.insert(key.to_string(), rv.clone());
                    }
                }
                key if LIST_FORM_KEYS.contains(&key) => {
                    prop.insert(k.clone(), v.clone());
                }
                other => {
                    return Err(format!(
                        "parameter '{name}' has an unknown key '{other}' (in a {{...}} map, a comma \
                         inside a value splits it: quote the value)"
                    ));
                }
            }
        }
        prop.entry("type").or_insert_with(|| json!("string"));
        // `nullable: true` is the list form's way to write `type: [T, "null"]`.
        if prop.remove("nullable") == Some(Value::Bool(true))
            && let Some(Value::String(t)) = prop.get("type").cloned()
        {
            prop.insert("type".into(), json!([t, "null"]));
        }
        properties.insert(name.to_string(), Value::Object(prop));
    }
    Ok(json!({"type": "object", "properties": properties, "required": required}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn list_form_becomes_schema() {
        let list = serde_json::from_str::<Vec<Value>>(
            r#"[{"name":"url","type":"string","required":true,"validation":{"pattern":"^https?://"}},
                {"name":"timeout","type":"number","default":30,"validation":{"min":1,"max":300}}]"#,
        )
        .unwrap();
        let schema = list_form(&list).unwrap();
        assert_eq!(schema["required"], json!(["url"]));
        assert_eq!(schema["properties"]["timeout"]["minimum"], json!(1));
        assert_eq!(schema["properties"]["url"]["pattern"], json!("^https?://"));
    }
}
