//! Which values of a call are secret: those under a schema marked `secret: true`, at
//! any depth (properties, array items, additional properties, and the branches of
//! anyOf/oneOf/allOf).

use serde_json::{Map, Value};

use super::MASK;

/// Whether `schema` marks anything secret.
pub fn has_secrets(schema: &Value) -> bool {
    match schema {
        Value::Object(o) => {
            o.get("secret") == Some(&Value::Bool(true)) || o.values().any(has_secrets)
        }
        Value::Array(a) => a.iter().any(has_secrets),
        _ => false,
    }
}

/// The sub-schemas that apply to `value` at `schema`, and what to do with each child.
fn walk(schema: &Value, value: &Value, on_secret: &mut dyn FnMut(&Value)) {
    let Value::Object(s) = schema else { return };
    if s.get("secret") == Some(&Value::Bool(true)) {
        on_secret(value);
        return;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            for b in branches {
                walk(b, value, on_secret);
            }
        }
    }
    match value {
        Value::Object(fields) => {
            let props = s.get("properties").and_then(Value::as_object);
            for (k, v) in fields {
                match props.and_then(|p| p.get(k)) {
                    Some(sub) => walk(sub, v, on_secret),
                    None => {
                        if let Some(extra) = s.get("additionalProperties") {
                            walk(extra, v, on_secret);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = s.get("items") {
                for v in items {
                    walk(sub, v, on_secret);
                }
            }
        }
        _ => {}
    }
}

/// Adds the secret values of `args` to `out`, as text: strings as they are, other
/// values as their JSON (and, for arrays and objects, every string inside too).
pub fn secret_values(schema: &Value, args: &Map<String, Value>, out: &mut Vec<String>) {
    let args = Value::Object(args.clone());
    walk(schema, &args, &mut |v| collect_strings(v, out));
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Null => {}
        Value::Array(a) => {
            out.push(v.to_string());
            a.iter().for_each(|x| collect_strings(x, out));
        }
        Value::Object(o) => {
            out.push(v.to_string());
            o.values().for_each(|x| collect_strings(x, out));
        }
        other => out.push(other.to_string()),
    }
}

/// `args` with every secret value shown as `[secret]`.
pub fn mask_args(schema: &Value, args: &Map<String, Value>) -> Map<String, Value> {
    let mut masked = Value::Object(args.clone());
    mask_in(schema, &mut masked);
    match masked {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn mask_in(schema: &Value, value: &mut Value) {
    let Value::Object(s) = schema else { return };
    if s.get("secret") == Some(&Value::Bool(true)) {
        if !value.is_null() {
            *value = Value::String(MASK.into());
        }
        return;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            for b in branches {
                mask_in(b, value);
            }
        }
    }
    match value {
        Value::Object(fields) => {
            let props = s.get("properties").and_then(Value::as_object);
            for (k, v) in fields.iter_mut() {
                match props.and_then(|p| p.get(k)) {
                    Some(sub) => mask_in(sub, v),
                    None => {
                        if let Some(extra) = s.get("additionalProperties") {
                            mask_in(extra, v);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = s.get("items") {
                items.iter_mut().for_each(|v| mask_in(sub, v));
            }
        }
        _ => {}
    }
}

/// Puts back, wherever `edited` still shows `[secret]` for a secret value, the value
/// `original` has there: a person editing other arguments never sees the secret and
/// need not type it again.
pub fn restore_masked(schema: &Value, edited: &mut Value, original: &Value) {
    let Value::Object(s) = schema else { return };
    if s.get("secret") == Some(&Value::Bool(true)) {
        if edited.as_str() == Some(MASK) {
            *edited = original.clone();
        }
        return;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            for b in branches {
                restore_masked(b, edited, original);
            }
        }
    }
    match (edited, original) {
        (Value::Object(fields), Value::Object(orig)) => {
            let props = s.get("properties").and_then(Value::as_object);
            for (k, v) in fields.iter_mut() {
                let Some(o) = orig.get(k) else { continue };
                match props.and_then(|p| p.get(k)) {
                    Some(sub) => restore_masked(sub, v, o),
                    None => {
                        if let Some(extra) = s.get("additionalProperties") {
                            restore_masked(extra, v, o);
                        }
                    }
                }
            }
        }
        (Value::Array(items), Value::Array(orig)) => {
            if let Some(sub) = s.get("items") {
                for (v, o) in items.iter_mut().zip(orig) {
                    restore_masked(sub, v, o);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "token": {"type": "string", "secret": true},
            "auth": {"type": "object", "properties": {"password": {"type": "string", "secret": true}, "user": {"type": "string"}}},
            "keys": {"type": "array", "items": {"type": "string", "secret": true}},
            "note": {"type": "string"}
        }})
    }

    #[test]
    fn secrets_are_found_and_masked_at_any_depth() {
        let args = json!({"token": "t0k", "auth": {"password": "pw1", "user": "ann"}, "keys": ["k1", "k2"], "note": "hi"});
        let args = args.as_object().unwrap();
        let mut found = Vec::new();
        secret_values(&schema(), args, &mut found);
        found.sort();
        assert_eq!(found, ["k1", "k2", "pw1", "t0k"]);
        let masked = Value::Object(mask_args(&schema(), args));
        assert_eq!(
            masked,
            json!({"token": "[secret]", "auth": {"password": "[secret]", "user": "ann"}, "keys": ["[secret]", "[secret]"], "note": "hi"})
        );
        assert!(has_secrets(&schema()));
        assert!(!has_secrets(
            &json!({"properties": {"a": {"type": "string"}}})
        ));
    }
}
