//! The list form of a tool file's `parameters:` (a list of named parameters with
//! `required`, `validation` and `nullable`), turned into the JSON Schema the tool is
//! checked against.

use serde_json::{Map, Value, json};

use super::keywords;

/// Keys a parameter of the list form may have besides `name`, `required`,
/// `validation` and `nullable`: JSON Schema keywords, which the compiled schema then
/// checks or refuses like any other, and `form` (see `credentials`).
const LIST_FORM_KEYS: [&str; 20] = [
    "type",
    "description",
    "default",
    "enum",
    "const",
    "items",
    "properties",
    "additionalProperties",
    "secret",
    "format",
    "examples",
    "title",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "form",
];

/// The rules `validation:` may hold, as written (snake_case or JSON Schema's own
/// names), and the keyword each becomes.
const RULES: [(&str, &str); 27] = [
    ("min", "minimum"),
    ("max", "maximum"),
    ("minimum", "minimum"),
    ("maximum", "maximum"),
    ("exclusive_min", "exclusiveMinimum"),
    ("exclusive_max", "exclusiveMaximum"),
    ("exclusive_minimum", "exclusiveMinimum"),
    ("exclusive_maximum", "exclusiveMaximum"),
    ("exclusiveMinimum", "exclusiveMinimum"),
    ("exclusiveMaximum", "exclusiveMaximum"),
    ("multiple_of", "multipleOf"),
    ("multipleOf", "multipleOf"),
    ("min_length", "minLength"),
    ("max_length", "maxLength"),
    ("minLength", "minLength"),
    ("maxLength", "maxLength"),
    ("pattern", "pattern"),
    ("enum", "enum"),
    ("min_items", "minItems"),
    ("max_items", "maxItems"),
    ("minItems", "minItems"),
    ("maxItems", "maxItems"),
    ("unique_items", "uniqueItems"),
    ("uniqueItems", "uniqueItems"),
    ("min_properties", "minProperties"),
    ("max_properties", "maxProperties"),
    ("const", "const"),
];

/// A list-form fault: the message and the keys leading to it (the parameter's name,
/// then the key at fault).
#[derive(Debug)]
pub struct ListError {
    pub keys: Vec<String>,
    pub message: String,
}

/// `[{name, type, required, description, default, validation: {...}}]` to a schema.
pub fn list_form(list: &[Value]) -> Result<Value, ListError> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let Some(obj) = item.as_object() else {
            return Err(fail(&[], format!("item {} is not a map", i + 1)));
        };
        let name = item_name(i, obj)?;
        if properties.contains_key(name) {
            return Err(fail(&[name], format!("parameter '{name}' is listed twice")));
        }
        let (prop, is_required) = read_item(name, obj)?;
        if is_required {
            required.push(Value::String(name.to_string()));
        }
        properties.insert(name.to_string(), Value::Object(prop));
    }
    Ok(json!({"type": "object", "properties": properties, "required": required}))
}

/// A fault at `keys`.
fn fail(keys: &[&str], message: String) -> ListError {
    ListError {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        message,
    }
}

/// The `name` of item `i` (counted from 0): non-empty text.
fn item_name(i: usize, obj: &Map<String, Value>) -> Result<&str, ListError> {
    match obj.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => Ok(n.as_str()),
        None => Err(fail(&[], format!("item {} has no name", i + 1))),
        Some(other) => Err(fail(
            &[],
            format!(
                "item {}: name must be text, not {other} (quote it: name: \"{other}\")",
                i + 1
            ),
        )),
    }
}

/// One parameter's schema from its item, and whether it is required.
fn read_item(
    name: &str,
    obj: &Map<String, Value>,
) -> Result<(Map<String, Value>, bool), ListError> {
    let mut prop = Map::new();
    let mut nullable = false;
    let mut required = false;
    for (k, v) in obj {
        match k.as_str() {
            "name" => {}
            "required" => match v {
                Value::Bool(b) => required = *b,
                other => {
                    return Err(fail(
                        &[name, "required"],
                        format!("required of '{name}' must be true or false, not {other}"),
                    ));
                }
            },
            "nullable" => match v {
                Value::Bool(b) => nullable = *b,
                other => {
                    return Err(fail(
                        &[name, "nullable"],
                        format!("nullable of '{name}' must be true or false, not {other}"),
                    ));
                }
            },
            "validation" => validation_rules(name, v, &mut prop)?,
            key if LIST_FORM_KEYS.contains(&key) => {
                if prop.insert(k.clone(), v.clone()).is_some() {
                    return Err(fail(
                        &[name, k],
                        format!(
                            "parameter '{name}': {k} is given twice (beside type and \
                             under validation)"
                        ),
                    ));
                }
            }
            other => {
                return Err(fail(
                    &[name, other],
                    format!(
                        "parameter '{name}' has an unknown key '{other}' (keys: name, \
                         required, nullable, validation, {}; in a {{...}} map, a comma \
                         inside a value splits it: quote the value)",
                        LIST_FORM_KEYS.join(", ")
                    ),
                ));
            }
        }
    }
    prop.entry("type").or_insert_with(|| json!("string"));
    // `nullable: true` is the list form's way to write `type: [T, "null"]`.
    if nullable && let Some(Value::String(t)) = prop.get("type").cloned() {
        prop.insert("type".into(), json!([t, "null"]));
    }
    Ok((prop, required))
}

/// An item's `validation:` map, its rules added to `prop` under their keywords.
fn validation_rules(name: &str, v: &Value, prop: &mut Map<String, Value>) -> Result<(), ListError> {
    let Some(rules) = v.as_object() else {
        return Err(fail(
            &[name, "validation"],
            format!("validation of '{name}' is not a map"),
        ));
    };
    for (rk, rv) in rules {
        let Some((_, key)) = RULES.iter().find(|(alias, _)| alias == rk) else {
            return Err(fail(&[name, rk], unknown_rule(name, rk)));
        };
        if prop.insert(key.to_string(), rv.clone()).is_some() {
            return Err(fail(
                &[name, rk],
                format!(
                    "parameter '{name}': {key} is given twice (as {rk} under \
                     validation, and beside it or under another name)"
                ),
            ));
        }
    }
    Ok(())
}

/// Why `rule` is not a validation rule, with the nearest one when it looks misspelt.
fn unknown_rule(name: &str, rule: &str) -> String {
    if keywords::ANNOTATIONS.contains(&rule) {
        return format!(
            "validation of '{name}': {rule} is an annotation toolgate does not check; write \
             it beside type, not under validation"
        );
    }
    let folded = |s: &str| s.replace('_', "").to_lowercase();
    let hint = RULES
        .iter()
        .find(|(alias, _)| folded(alias) == folded(rule))
        .map(|(alias, _)| alias.to_string())
        .or_else(|| {
            keywords::nearest(rule)
                .and_then(|k| RULES.iter().find(|(_, kw)| *kw == k))
                .map(|(alias, _)| alias.to_string())
        })
        .map(|a| format!(" (did you mean {a}?)"))
        .unwrap_or_default();
    let all: Vec<&str> = RULES
        .iter()
        .map(|(a, _)| *a)
        .filter(|a| !a.chars().any(|c| c.is_ascii_uppercase()))
        .collect();
    format!(
        "validation of '{name}': unknown rule '{rule}'{hint}; rules: {} (or JSON Schema's \
         camelCase names)",
        all.join(", ")
    )
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
