//! Checking one call's arguments against a compiled [`Schema`]: values coerced the
//! parser's way, defaults filled, every error collected and worded for a model.

use serde_json::{Map, Value};

use super::{Additional, Schema};
use crate::ArgError;
use toolgate_parse::coerce::{Types, coerce_json};

impl Schema {
    /// Validates one value (a tool's output, say): the value as coerced, or every error,
    /// each with its path inside the value (empty for the value itself).
    pub fn check_value_of(&self, value: Value) -> Result<Value, Vec<ArgError>> {
        if let Some(full) = &self.full {
            return Self::check_value_full(full, value);
        }
        let mut errors = Vec::new();
        let out = self.check_value(value, "", &mut errors);
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    /// Validates a call's arguments: coerces, fills defaults, and returns every error.
    pub fn check(&self, args: Map<String, Value>) -> Result<Map<String, Value>, Vec<ArgError>> {
        if let Some(full) = &self.full {
            return self.check_full(full, args);
        }
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
        let len = out.len();
        let mut push = |message: String| {
            errors.push(ArgError {
                param: path.to_string(),
                message,
            })
        };
        if let Some(min) = self.min_properties.filter(|&m| len < m) {
            push(format!("must have at least {min} fields, got {len}"));
        }
        if let Some(max) = self.max_properties.filter(|&m| len > m) {
            push(format!("must have at most {max} fields, got {len}"));
        }
        out
    }

    pub(super) fn check_value(
        &self,
        value: Value,
        path: &str,
        errors: &mut Vec<ArgError>,
    ) -> Value {
        let mut push = |message: String| {
            errors.push(ArgError {
                param: path.to_string(),
                message,
            })
        };
        let value = match coerce_json(value, Some(&self.raw)) {
            Ok(v) => v,
            // A list or an object of the right kind with a wrong part inside: the parts
            // are checked below, each error at its own path.
            Err(m) if self.holds(&m.kept) => m.kept,
            Err(m) => {
                push(format!("must be {}, got {}", m.expected, describe(&m.kept)));
                return m.kept;
            }
        };
        if let Some(constant) = self.constant.as_ref().filter(|c| **c != value) {
            push(format!("must be {constant}, got {}", describe(&value)));
        }
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
                if let Some(min) = self.exclusive_minimum.filter(|&m| f <= m) {
                    push(format!("must be more than {}, got {n}", fmt_num(min)));
                }
                if let Some(max) = self.exclusive_maximum.filter(|&m| f >= m) {
                    push(format!("must be less than {}, got {n}", fmt_num(max)));
                }
                if let Some(step) = self.multiple_of.filter(|&m| !is_multiple(f, m)) {
                    push(format!("must be a multiple of {}, got {n}", fmt_num(step)));
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
                if self.unique_items
                    && let Some(i) = (1..len).find(|&i| list[..i].contains(&list[i]))
                {
                    push(format!(
                        "must not repeat an item, but item {i} repeats {}",
                        describe(&list[i])
                    ));
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
    /// `value` is a list or an object and this schema's type allows it.
    fn holds(&self, value: &Value) -> bool {
        let Some(types) = self.types else {
            return false;
        };
        match value {
            Value::Array(_) => types.has(Types::ARRAY),
            Value::Object(_) => types.has(Types::OBJECT),
            _ => false,
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

/// `f` is a whole multiple of `step`, allowing for binary fractions (`0.3` of `0.1`).
fn is_multiple(f: f64, step: f64) -> bool {
    let q = f / step;
    (q - q.round()).abs() < 1e-9
}

pub(super) fn fmt_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}
