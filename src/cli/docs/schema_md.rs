//! A JSON Schema as Markdown: a table of an object's fields (name, type, whether it is
//! required, description), and a section for each named definition it refers to.

use serde_json::{Map, Value};

/// One cell's text: no line breaks, no `|` that would end the cell.
pub fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The name a `$ref` points at (`#/$defs/Entry` -> `Entry`).
fn ref_name(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

/// A Markdown anchor for definition `name` (a heading `### name`).
pub fn anchor(name: &str) -> String {
    name.to_lowercase()
}

/// The type of `schema` in a few words: `string`, `integer`, `list of string`,
/// `"auto" \| "confirm"`, a link to a definition, or alternatives joined by "or".
pub fn type_of(schema: &Value) -> String {
    let Some(obj) = schema.as_object() else {
        return if schema == &Value::Bool(true) {
            "any".into()
        } else {
            "none".into()
        };
    };
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let name = ref_name(r);
        return format!("[{name}](#{})", anchor(name));
    }
    if let Some(c) = obj.get("const") {
        return format!("`{c}`");
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        let words: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return words.join(" or ");
    }
    if let Some([only]) = obj
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        return type_of(only);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = obj.get(key).and_then(Value::as_array) {
            let alts: Vec<String> = alts.iter().map(type_of).filter(|t| t != "null").collect();
            if !alts.is_empty() {
                return alts.join(" or ");
            }
        }
    }
    match obj.get("type") {
        Some(Value::String(t)) => simple_type(t, obj),
        Some(Value::Array(ts)) => {
            let ts: Vec<String> = ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .map(|t| simple_type(t, obj))
                .collect();
            ts.join(" or ")
        }
        _ => "any".into(),
    }
}

/// `t` with what its items or values are.
fn simple_type(t: &str, obj: &Map<String, Value>) -> String {
    match t {
        "array" => match obj.get("items") {
            Some(items) => format!("list of {}", type_of(items)),
            None => "list".into(),
        },
        "object" => match obj.get("additionalProperties") {
            Some(v) if v.is_object() => format!("map of {}", type_of(v)),
            _ => "map".into(),
        },
        other => other.into(),
    }
}

/// The description of `schema`, with its range, pattern and default when it has them.
fn describe(schema: &Value) -> String {
    let mut text = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut add = |s: String| {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&s);
    };
    if let Some(min) = schema.get("minimum").filter(|m| m.as_f64() != Some(0.0)) {
        add(format!("At least {min}."));
    }
    let unset = |d: &Value| match d {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    if let Some(d) = schema.get("default").filter(|d| !unset(d)) {
        add(format!("Default: `{d}`."));
    }
    cell(&text)
}

/// The table of the fields of object schema `schema` (empty when it has none).
pub fn fields_table(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from("| Field | Type | Required | Description |\n|---|---|---|---|\n");
    for (name, prop) in props {
        let req = if required.contains(&name.as_str()) {
            "yes"
        } else {
            ""
        };
        out.push_str(&format!(
            "| `{name}` | {} | {req} | {} |\n",
            cell(&type_of(prop)),
            describe(prop)
        ));
    }
    out
}

/// A section for each named definition: its description, then its fields, its
/// variants (each with its fields), or its values.
pub fn definitions(defs: &Map<String, Value>, level: &str) -> String {
    let mut out = String::new();
    for (name, def) in defs {
        out.push_str(&format!("{level} {name}\n\n"));
        if let Some(d) = def.get("description").and_then(Value::as_str) {
            out.push_str(&format!("{}\n\n", d.trim()));
        }
        out.push_str(&body(def));
    }
    out
}

/// The fields of `def`, or its variants, or its type.
fn body(def: &Value) -> String {
    let table = fields_table(def);
    if !table.is_empty() {
        return format!("{table}\n");
    }
    let variants = def
        .get("oneOf")
        .or_else(|| def.get("anyOf"))
        .and_then(Value::as_array);
    match variants {
        Some(vs) if vs.iter().any(|v| v.get("properties").is_some()) => {
            let mut out = String::new();
            for v in vs {
                let tag = v
                    .pointer("/properties/type/const")
                    .map(|t| format!("`type: {}`", t.as_str().unwrap_or_default()))
                    .unwrap_or_else(|| type_of(v));
                let about = v.get("description").and_then(Value::as_str).unwrap_or("");
                out.push_str(&format!("- {tag}: {}\n\n", cell(about)));
                let table = fields_table(v);
                if !table.is_empty() {
                    out.push_str(&format!("{table}\n"));
                }
            }
            out
        }
        _ => format!("Type: {}\n\n", type_of(def)),
    }
}
