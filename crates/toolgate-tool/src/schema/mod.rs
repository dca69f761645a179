//! Parameter validation. The fast path checks the JSON Schema subset most tools use:
//! `type` (with `[T, "null"]` for nullable), `enum`, `const`, `pattern`,
//! `minimum`/`maximum`, `exclusiveMinimum`/`exclusiveMaximum`, `multipleOf`,
//! `minLength`/`maxLength`, `items`, `minItems`/`maxItems`, `uniqueItems`, `required`,
//! `properties`, `additionalProperties`, `minProperties`/`maxProperties`, `default`, and
//! toolgate's `secret`; the annotations listed in `tool/keywords.rs` (`description`,
//! `format`, ...) check nothing. A schema is compiled once when its tool is loaded
//! (regexes included); checking a call coerces values the parser's way, fills defaults
//! and reports every error at once, worded for a model.
//! A schema that uses keywords outside the subset (`anyOf`, `oneOf`, `$ref`, ... from a
//! tool file or an MCP server) is checked in full by `full.rs` (the `jsonschema` crate)
//! instead: never unchecked. `tool_file.rs` decides which for a tool file, whose unknown
//! keywords are refused anywhere in the schema (`walk.rs`).

mod check;
mod full;
mod inline;
mod tool_file;
mod walk;

use check::fmt_num;

use regex::Regex;
use serde_json::Value;

use super::keywords;
use toolgate_parse::coerce::Types;

/// A compiled schema node.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The schema as written, for coercion and for prompts.
    raw: Value,
    types: Option<Types>,
    enum_values: Option<Vec<Value>>,
    constant: Option<Value>,
    pattern: Option<Regex>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    multiple_of: Option<f64>,
    min_length: Option<usize>,
    max_length: Option<usize>,
    items: Option<Box<Schema>>,
    min_items: Option<usize>,
    max_items: Option<usize>,
    unique_items: bool,
    properties: Vec<(String, Schema)>,
    required: Vec<String>,
    additional: Additional,
    min_properties: Option<usize>,
    max_properties: Option<usize>,
    default: Option<Value>,
    secret: bool,
    /// The full validator, for a schema the fast path cannot check (see `full.rs`).
    full: Option<full::Full>,
}

#[derive(Debug, Clone)]
enum Additional {
    Allowed,
    Denied,
    Schema(Box<Schema>),
}

/// Why a schema does not compile: the message, and the keys leading to the fault (the
/// property names, `items`, `additionalProperties`, then the keyword), so a tool file
/// can point at the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SchemaError {
    pub keys: Vec<String>,
    pub message: String,
}

impl From<SchemaError> for String {
    fn from(e: SchemaError) -> String {
        e.message
    }
}

/// Max depth of nested schemas, so a hostile file cannot overflow the stack.
const MAX_DEPTH: usize = 32;

/// The place a node is compiled at: its path for messages (`a.b`, `a[]`, `a.*`) and
/// the keys leading to it in the file.
#[derive(Clone, Default)]
struct At {
    path: String,
    keys: Vec<String>,
}

impl At {
    fn child(&self, path: String, key: &str) -> At {
        let mut keys = self.keys.clone();
        keys.push(key.to_string());
        At { path, keys }
    }

    fn err(&self, keyword: Option<&str>, msg: String) -> SchemaError {
        let mut keys = self.keys.clone();
        keys.extend(keyword.map(str::to_string));
        let message = if self.path.is_empty() {
            msg
        } else {
            format!("{}: {msg}", self.path)
        };
        SchemaError { keys, message }
    }
}

impl Schema {
    /// Compiles a schema for the fast path alone; the error names the keyword at fault.
    /// Every keyword is either checked on each call or an annotation; any other is
    /// refused here (see [`Schema::compile_file`] and [`Schema::compile_full`] for
    /// schemas that need the full validator).
    pub fn compile(raw: &Value) -> Result<Schema, SchemaError> {
        Self::compile_located(raw)
    }

    /// [`Schema::compile`], with the keys leading to a fault.
    pub fn compile_located(raw: &Value) -> Result<Schema, SchemaError> {
        Self::compile_at(raw, &At::default(), 0)
    }

    fn compile_at(raw: &Value, at: &At, depth: usize) -> Result<Schema, SchemaError> {
        if depth > MAX_DEPTH {
            return Err(at.err(None, "schemas nest too deep".into()));
        }
        let Some(obj) = raw.as_object() else {
            return Err(at.err(None, "a schema must be a map".into()));
        };
        if let Some((key, why)) = obj
            .keys()
            .find_map(|k| keywords::refusal(k).map(|why| (k, why)))
        {
            return Err(at.err(Some(key), why));
        }
        let types = match obj.get("type") {
            None => None,
            Some(t) => Some(types_of(raw, t).ok_or_else(|| {
                at.err(
                    Some("type"),
                    format!(
                        "unknown type {t} (types: string, integer, number, boolean, array, \
                         object, null)"
                    ),
                )
            })?),
        };
        let number = |key: &str| number_at(obj, at, key);
        let count = |key: &str| count_at(obj, at, key);
        let flag = |key: &str| flag_at(obj, at, key);
        let pattern = pattern_at(obj, at)?;
        let enum_values = match obj.get("enum") {
            None => None,
            Some(Value::Array(list)) if !list.is_empty() => Some(list.clone()),
            Some(_) => return Err(at.err(Some("enum"), "enum must be a non-empty list".into())),
        };
        let items = match obj.get("items") {
            None => None,
            Some(v) => Some(Box::new(Self::compile_at(
                v,
                &at.child(format!("{}[]", at.path), "items"),
                depth + 1,
            )?)),
        };
        let properties = Self::properties_at(obj, at, depth)?;
        let required = required_at(obj, at, &properties)?;
        let additional = Self::additional_at(obj, at, depth)?;
        let multiple_of = number("multipleOf")?;
        if multiple_of.is_some_and(|m| m <= 0.0) {
            return Err(at.err(Some("multipleOf"), "multipleOf must be more than 0".into()));
        }
        let schema = Schema {
            raw: raw.clone(),
            types,
            enum_values,
            constant: obj.get("const").cloned(),
            pattern,
            minimum: number("minimum")?,
            maximum: number("maximum")?,
            exclusive_minimum: number("exclusiveMinimum")?,
            exclusive_maximum: number("exclusiveMaximum")?,
            multiple_of,
            min_length: count("minLength")?,
            max_length: count("maxLength")?,
            items,
            min_items: count("minItems")?,
            max_items: count("maxItems")?,
            unique_items: flag("uniqueItems")?,
            properties,
            required,
            additional,
            min_properties: count("minProperties")?,
            max_properties: count("maxProperties")?,
            default: obj.get("default").cloned(),
            secret: flag("secret")?,
            full: None,
        };
        schema.check_bounds(at)?;
        schema.check_default(at)?;
        Ok(schema)
    }

    /// The `properties` of a schema, each compiled at its own path.
    fn properties_at(
        obj: &serde_json::Map<String, Value>,
        at: &At,
        depth: usize,
    ) -> Result<Vec<(String, Schema)>, SchemaError> {
        let mut properties = Vec::new();
        if let Some(props) = obj.get("properties") {
            let Some(props) = props.as_object() else {
                return Err(at.err(Some("properties"), "properties must be a map".into()));
            };
            for (k, v) in props {
                let sub = if at.path.is_empty() {
                    k.clone()
                } else {
                    format!("{}.{k}", at.path)
                };
                properties.push((
                    k.clone(),
                    Self::compile_at(v, &at.child(sub, k), depth + 1)?,
                ));
            }
        }
        Ok(properties)
    }

    /// `additionalProperties`: allowed when absent or `true`, denied when `false`, else
    /// a schema every other property meets.
    fn additional_at(
        obj: &serde_json::Map<String, Value>,
        at: &At,
        depth: usize,
    ) -> Result<Additional, SchemaError> {
        Ok(match obj.get("additionalProperties") {
            None | Some(Value::Bool(true)) => Additional::Allowed,
            Some(Value::Bool(false)) => Additional::Denied,
            Some(v) => Additional::Schema(Box::new(Self::compile_at(
                v,
                &at.child(format!("{}.*", at.path), "additionalProperties"),
                depth + 1,
            )?)),
        })
    }

    /// A lower bound above its upper bound can never be met: the file is wrong.
    fn check_bounds(&self, at: &At) -> Result<(), SchemaError> {
        let pairs: [(&str, Option<f64>, &str, Option<f64>); 4] = [
            ("minimum", self.minimum, "maximum", self.maximum),
            (
                "minLength",
                self.min_length.map(|n| n as f64),
                "maxLength",
                self.max_length.map(|n| n as f64),
            ),
            (
                "minItems",
                self.min_items.map(|n| n as f64),
                "maxItems",
                self.max_items.map(|n| n as f64),
            ),
            (
                "minProperties",
                self.min_properties.map(|n| n as f64),
                "maxProperties",
                self.max_properties.map(|n| n as f64),
            ),
        ];
        for (low_key, low, high_key, high) in pairs {
            if let (Some(low), Some(high)) = (low, high)
                && low > high
            {
                return Err(at.err(
                    Some(low_key),
                    format!(
                        "{low_key} {} is above {high_key} {}: no value can pass",
                        fmt_num(low),
                        fmt_num(high)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A default is filled in for the model, so it must pass its own schema.
    fn check_default(&self, at: &At) -> Result<(), SchemaError> {
        let Some(default) = &self.default else {
            return Ok(());
        };
        let mut errors = Vec::new();
        self.check_value(default.clone(), "", &mut errors);
        match errors.first() {
            None => Ok(()),
            Some(first) => Err(at.err(
                Some("default"),
                format!("the default {default} does not pass its own schema: {first}"),
            )),
        }
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
}

/// The types `type` names, when every name is one of JSON Schema's seven.
fn types_of(raw: &Value, t: &Value) -> Option<Types> {
    const NAMES: [&str; 7] = [
        "string", "integer", "number", "boolean", "array", "object", "null",
    ];
    let known = |v: &Value| v.as_str().is_some_and(|s| NAMES.contains(&s));
    let ok = match t {
        Value::String(_) => known(t),
        Value::Array(list) => !list.is_empty() && list.iter().all(known),
        _ => false,
    };
    if ok { Types::of(raw) } else { None }
}

/// A keyword whose value must be a number, `None` when absent.
fn number_at(
    obj: &serde_json::Map<String, Value>,
    at: &At,
    key: &str,
) -> Result<Option<f64>, SchemaError> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| at.err(Some(key), format!("{key} must be a number"))),
    }
}

/// A keyword whose value must be a whole number, `None` when absent.
fn count_at(
    obj: &serde_json::Map<String, Value>,
    at: &At,
    key: &str,
) -> Result<Option<usize>, SchemaError> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(|n| Some(n as usize))
            .ok_or_else(|| at.err(Some(key), format!("{key} must be a whole number"))),
    }
}

/// A keyword whose value must be a bool, false when absent.
fn flag_at(obj: &serde_json::Map<String, Value>, at: &At, key: &str) -> Result<bool, SchemaError> {
    match obj.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(at.err(Some(key), format!("{key} must be true or false"))),
    }
}

/// `pattern`, compiled; the error gives the regex's own word on what is wrong.
fn pattern_at(obj: &serde_json::Map<String, Value>, at: &At) -> Result<Option<Regex>, SchemaError> {
    match obj.get("pattern") {
        None => Ok(None),
        Some(Value::String(p)) => Regex::new(p).map(Some).map_err(|e| {
            // regex's message spans lines; its last line says what is wrong.
            let text = e.to_string();
            let why = text
                .lines()
                .last()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_string();
            at.err(
                Some("pattern"),
                format!("pattern {p:?} does not compile: {why}"),
            )
        }),
        Some(_) => Err(at.err(Some("pattern"), "pattern must be text".into())),
    }
}

/// `required`: a list of names, each among the properties when there are any.
fn required_at(
    obj: &serde_json::Map<String, Value>,
    at: &At,
    properties: &[(String, Schema)],
) -> Result<Vec<String>, SchemaError> {
    let required: Vec<String> = match obj.get("required") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| at.err(Some("required"), "required must list names".into()))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(at.err(
                Some("required"),
                "required must be a list of parameter names (the list form of parameters \
                 takes required: true)"
                    .into(),
            ));
        }
    };
    for name in &required {
        if !properties.is_empty() && !properties.iter().any(|(k, _)| k == name) {
            return Err(at.err(
                Some("required"),
                format!("'{name}' is required but not among the properties"),
            ));
        }
    }
    Ok(required)
}
