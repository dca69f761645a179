//! Parameter validation against the JSON Schema subset tool files use: `type` (with
//! `[T, "null"]` for nullable), `enum`, `pattern`, `minimum`/`maximum`,
//! `minLength`/`maxLength`, `items`, `minItems`/`maxItems`, `required`, `properties`,
//! `additionalProperties`, `default`, and toolgate's `secret`. A schema is compiled
//! once when its tool is loaded (regexes included); checking a call coerces values the
//! parser's way, fills defaults and reports every error at once, worded for a model.

use regex::Regex;
use serde_json::{Map, Value};

use super::output::ArgError;
use crate::parse::coerce::{Types, coerce_json};

/// A compiled schema node.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The schema as written, for coercion and for prompts.
    raw: Value,
    types: Option<Types>,
    enum_values: Option<Vec<Value>>,
    pattern: Option<Regex>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    min_length: Option<usize>,
    max_length: Option<usize>,
    items: Option<Box<Schema>>,
    min_items: Option<usize>,
    max_items: Option<usize>,
    properties: Vec<(String, Schema)>,
    required: Vec<String>,
    additional: Additional,
    default: Option<Value>,
    secret: bool,
}

#[derive(Debug, Clone)]
enum Additional {
    Allowed,
    Denied,
    Schema(Box<Schema>),
}

/// Max depth of nested schemas, so a hostile file cannot overflow the stack.
const MAX_DEPTH: usize = 32;

impl Schema {
    /// Compiles a schema; the error names the keyword at fault.
    pub fn compile(raw: &Value) -> Result<Schema, String> {
        Self::compile_at(raw, "", 0)
    }

    fn compile_at(raw: &Value, path: &str, depth: usize) -> Result<Schema, String> {
        let at = |msg: String| {
            if path.is_empty() {
                msg
            } else {
                format!("{path}: {msg}")
            }
        };
        if depth > MAX_DEPTH {
            return Err(at("schemas nest too deep".into()));
        }
        let Some(obj) = raw.as_object() else {
            return Err(at("a schema must be a map".into()));
        };
        let types = match obj.get("type") {
            None => None,
            Some(t) => Some(Types::of(raw).ok_or_else(|| at(format!("unknown type {t}")))?),
        };
        let number = |key: &str| -> Result<Option<f64>, String> {
            match obj.get(key) {
                None => Ok(None),
                Some(v) => v
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| at(format!("{key} must be a number"))),
            }
        };
        let count = |key: &str| -> Result<Option<usize>, String> {
            match obj.get(key) {
                None => Ok(None),
                Some(v) => v
                    .as_u64()
                    .map(|n| Some(n as usize))
                    .ok_or_else(|| at(format!("{key} must be a whole number"))),
            }
        };
        let pattern = match obj.get("pattern") {
            None => None,
            Some(Value::String(p)) => {
                Some(Regex::new(p).map_err(|e| {
                    // regex's message spans lines; its last line says what is wrong.
                    let text = e.to_string();
                    let why = text
                        .lines()
                        .last()
                        .unwrap_or_default()
                        .trim_start_matches("error: ")
                        .to_string();
                    at(format!("pattern {p:?} does not compile: {why}"))
                })?)
            }
            Some(_) => return Err(at("pattern must be text".into())),
        };
        let enum_values = match obj.get("enum") {
            None => None,
            Some(Value::Array(list)) if !list.is_empty() => Some(list.clone()),
            Some(_) => return Err(at("enum must be a non-empty list".into())),
        };
        let items = match obj.get("items") {
            None => None,
            Some(v) => Some(Box::new(Self::compile_at(
                v,
                &format!("{path}[]"),
                depth + 1,
            )?)),
        };
        let mut properties = Vec::new();
        if let Some(props) = obj.get("properties") {
            let Some(props) = props.as_object() else {
                return Err(at("properties must be a map".into()));
            };
            for (k, v) in props {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                properties.push((k.clone(), Self::compile_at(v, &sub, depth + 1)?));
            }
        }
        let required = match obj.get("required") {
            None => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| at("required must list names".into()))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(at("required must be a list".into())),
        };
        for name in &required {
            if !properties.is_empty() && !properties.iter().any(|(k, _)| k == name) {
                return Err(at(format!(
                    "'{name}' is required but not among the properties"
                )));
            }
        }
        let additional = match obj.get("additionalProperties") {
            None | Some(Value::Bool(true)) => Additional::Allowed,
            Some(Value::Bool(false)) => Additional::Denied,
            Some(v) => Additional::Schema(Box::new(Self::compile_at(
                v,
                &format!("{path}.*"),
                depth + 1,
            )?)),
        };
        let secret = match obj.get("secret") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(at("secret must be true or false".into())),
        };
        Ok(Schema {
            raw: raw.clone(),
            types,
            enum_values,
            pattern,
            minimum: number("minimum")?,
            maximum: number("maximum")?,
            min_length: count("minLength")?,
            max_length: count("maxLength")?,
            items,
            min_items: count("minItems")?,
            max_items: count("maxItems")?,
            properties,
            required,
            additional,
            default: obj.get("default").cloned(),
            secret,
        })
    }

    /// The schema as written.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// The parameters (top-level properties) in the order they were written.
    pub fn properties(&self) -> impl Iterator<Item = (&str, &Schema)> {
        self.properties.iter().map(|(k, s)| (k.as_str(), s))
    }

    pub fn is_required(&self, name: &str) -> bool {
        self.required.iter().any(|r| r == name)
    }

    pub fn default_value(&self) -> Option<&Value> {
        self.default.as_ref()
    }

    pub fn description(&self) -> Option<&str> {
        self.raw.get("description").and_then(Value::as_str)
    }

    pub fn enum_values(&self) -> Option<&[Value]> {
        self.enum_values.as_deref()
    }

    /// `string`, `integer or null`; `any` without a type.
    pub fn type_name(&self) -> String {
        self.types
            .map_or_else(|| "any".to_string(), Types::describe)
    }

    pub fn item_schema(&self) -> Option<&Schema> {
        self.items.as_deref()
    }

    /// Names of the parameters marked `secret: true`.
    pub fn secret_params(&self) -> Vec<&str> {
        self.properties
            .iter()
            .filter(|(_, s)| s.secret)
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// Validates a call's arguments: coerces, fills defaults, and returns every error.
    pub fn check(&self, args: Map<String, Value>) -> Result<Map<String, Value>, Vec<ArgError>> {
        let mut errors = Vec::new();
        let out = self.check_object(args, "", &mut errors);
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    fn check_object(
        &self,
        mut args: Map<String, Value>,
        path: &str,
        errors: &mut Vec<ArgError>,
    ) -> Map<String, Value> {
        let join = |k: &str| {
            if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            }
        };
        for (name, schema) in &self.properties {
            if !args.contains_key(name)
                && let Some(d) = &schema.default
            {
                args.insert(name.clone(), d.clone());
            }
        }
        for name in &self.required {
            if !args.contains_key(name) {
                let ty = self
                    .properties
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, s)| format!(" ({})", s.type_name()))
                    .unwrap_or_default();
                errors.push(ArgError {
                    param: join(name),
                    message: format!("is required{ty} but was not given"),
                });
            }
        }
        let mut out = Map::with_capacity(args.len());
        for (key, value) in args {
            let known = self
                .properties
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, s)| s);
            let schema = match (known, &self.additional) {
                (Some(s), _) => Some(s),
                (None, Additional::Schema(s)) => Some(&**s),
                (None, Additional::Allowed) => None,
                (None, Additional::Denied) => {
                    let names: Vec<&str> =
                        self.properties.iter().map(|(k, _)| k.as_str()).collect();
                    errors.push(ArgError {
                        param: join(&key),
                        message: format!(
                            "is not a parameter of this tool; it takes: {}",
                            if names.is_empty() {
                                "no parameters".to_string()
                            } else {
                                names.join(", ")
                            }
                        ),
                    });
                    continue;
                }
            };
            let value = match schema {
                Some(s) => s.check_value(value, &join(&key), errors),
                None => value,
            };
            out.insert(key, value);
        }
        out
    }

    fn check_value(&self, value: Value, path: &str, errors: &mut Vec<ArgError>) -> Value {
        let mut push = |message: String| {
            errors.push(ArgError {
                param: path.to_string(),
                message,
            })
        };
        let value = match coerce_json(value, Some(&self.raw)) {
            Ok(v) => v,
            Err(m) => {
                push(format!("must be {}, got {}", m.expected, describe(&m.kept)));
                return m.kept;
            }
        };
        if let Some(allowed) = &self.enum_values
            && !allowed.contains(&value)
        {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            push(format!(
                "must be one of {}, got {}",
                list.join(", "),
                describe(&value)
            ));
        }
        match value {
            Value::String(ref s) => {
                let len = s.chars().count();
                if let Some(min) = self.min_length.filter(|&m| len < m) {
                    push(format!("must be at least {min} characters long, got {len}"));
                }
                if let Some(max) = self.max_length.filter(|&m| len > m) {
                    push(format!("must be at most {max} characters long, got {len}"));
                }
                if let Some(re) = self.pattern.as_ref().filter(|re| !re.is_match(s)) {
                    push(format!(
                        "must match the pattern {}, got {}",
                        re.as_str(),
                        describe(&value)
                    ));
                }
                value
            }
            Value::Number(ref n) => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if let Some(min) = self.minimum.filter(|&m| f < m) {
                    push(format!("must be at least {}, got {n}", fmt_num(min)));
                }
                if let Some(max) = self.maximum.filter(|&m| f > m) {
                    push(format!("must be at most {}, got {n}", fmt_num(max)));
                }
                value
            }
            Value::Array(list) => {
                let len = list.len();
                if let Some(min) = self.min_items.filter(|&m| len < m) {
                    push(format!("must have at least {min} items, got {len}"));
                }
                if let Some(max) = self.max_items.filter(|&m| len > m) {
                    push(format!("must have at most {max} items, got {len}"));
                }
                match &self.items {
                    Some(item) => Value::Array(
                        list.into_iter()
                            .enumerate()
                            .map(|(i, v)| item.check_value(v, &format!("{path}[{i}]"), errors))
                            .collect(),
                    ),
                    None => Value::Array(list),
                }
            }
            Value::Object(map) => Value::Object(self.check_object(map, path, errors)),
            other => other,
        }
    }
}

/// A value as a model reads it in a message: short, typed.
fn describe(v: &Value) -> String {
    let text = v.to_string();
    let kind = match v {
        Value::Null => return "null".into(),
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    let shown: String = text.chars().take(40).collect();
    let cut = if shown.len() < text.len() { "…" } else { "" };
    format!("{kind} {shown}{cut}")
}

fn fmt_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

/// A copy of `args` with the secret parameters replaced, for logs and records.
pub fn redact(args: &Map<String, Value>, secret: &[&str]) -> Map<String, Value> {
    args.iter()
        .map(|(k, v)| {
            let v = if secret.contains(&k.as_str()) {
                Value::String("[secret]".into())
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect()
}
