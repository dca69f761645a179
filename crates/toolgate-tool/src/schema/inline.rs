//! The schema the parser coerces by, for a schema the full validator checks: local
//! `$ref`s (`#/$defs/..`, `#/definitions/..`, any `#/` pointer) replaced by what they
//! point to and `allOf` members merged into their parent, so that coercion and prompts
//! see plain types and unions. A recursive schema stops after a few levels (untyped
//! there), and the number of references expanded is capped, so the view stays small.

use serde_json::{Map, Value};

/// References followed inside one another before a recursive schema stops.
const MAX_REF_DEPTH: usize = 8;
/// References expanded in one schema at most.
const MAX_EXPANSIONS: usize = 256;

/// `root` with its local references inlined and its `allOf`s merged; `$defs` and
/// `definitions` are left out (nothing points into the view).
pub(super) fn coercion_view(root: &Value) -> Value {
    let mut budget = MAX_EXPANSIONS;
    let mut out = view(root, root, 0, &mut budget);
    if let Value::Object(map) = &mut out {
        map.remove("$defs");
        map.remove("definitions");
    }
    out
}

fn view(node: &Value, root: &Value, depth: usize, budget: &mut usize) -> Value {
    let Value::Object(obj) = node else {
        return node.clone();
    };
    // What the reference points to, then the node's own keys over it, then its
    // `allOf` members under both.
    let mut out = Map::new();
    if let Some(target) = obj.get("$ref").and_then(Value::as_str)
        && let Some(found) = resolve(root, target)
        && depth < MAX_REF_DEPTH
        && *budget > 0
    {
        *budget -= 1;
        if let Value::Object(found) = view(found, root, depth + 1, budget) {
            out = found;
        }
    }
    let sub = |v: &Value, budget: &mut usize| view(v, root, depth, budget);
    for (key, value) in obj {
        let value = match key.as_str() {
            "$ref" | "$defs" | "definitions" | "allOf" => continue,
            "properties" | "patternProperties" => match value {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(k, v)| (k.clone(), sub(v, budget)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" | "additionalProperties" | "additionalItems" => sub(value, budget),
            "anyOf" | "oneOf" | "prefixItems" => match value {
                Value::Array(list) => Value::Array(list.iter().map(|v| sub(v, budget)).collect()),
                other => other.clone(),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    if let Some(Value::Array(members)) = obj.get("allOf") {
        for member in members {
            if let Value::Object(m) = sub(member, budget) {
                merge(&mut out, m);
            }
        }
    }
    Value::Object(out)
}

/// Adds an `allOf` member's keys to `out`: properties are joined, `required` lists
/// added up, any other key kept as `out` has it.
fn merge(out: &mut Map<String, Value>, member: Map<String, Value>) {
    for (key, value) in member {
        match (out.get_mut(&key), value) {
            (Some(Value::Object(have)), Value::Object(more)) if key == "properties" => {
                for (k, v) in more {
                    have.entry(k).or_insert(v);
                }
            }
            (Some(Value::Array(have)), Value::Array(more)) if key == "required" => {
                for name in more {
                    if !have.contains(&name) {
                        have.push(name);
                    }
                }
            }
            (Some(_), _) => {}
            (None, value) => {
                out.insert(key, value);
            }
        }
    }
}

/// What a local reference (`#`, `#/$defs/a`, `#/definitions/a%20b`) points to.
pub(super) fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    if !pointer.contains('%') {
        return root.pointer(pointer);
    }
    root.pointer(&percent_decode(pointer)?)
}

/// `%XX` escapes of a URI fragment decoded; `None` when they do not make UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn refs_are_inlined_and_defs_left_out() {
        let s = json!({
            "type": "object",
            "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]},
                      "Place": {"type": "object", "properties": {"unit": {"$ref": "#/$defs/Unit"}}}},
            "properties": {
                "at": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
                "unit": {"$ref": "#/$defs/Unit", "description": "Which."}
            }
        });
        let v = coercion_view(&s);
        assert!(v.get("$defs").is_none());
        assert_eq!(
            v["properties"]["unit"],
            json!({"type": "string", "enum": ["c", "f"], "description": "Which."})
        );
        assert_eq!(
            v["properties"]["at"]["anyOf"][0]["properties"]["unit"]["type"],
            "string"
        );
    }

    #[test]
    fn all_of_members_are_merged() {
        let s = json!({
            "definitions": {"Base": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}},
            "properties": {"x": {"allOf": [{"$ref": "#/definitions/Base"},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]}], "description": "d"}}
        });
        let x = &coercion_view(&s)["properties"]["x"];
        assert_eq!(x["type"], "object");
        assert_eq!(x["required"], json!(["a", "b"]));
        assert_eq!(x["properties"]["b"]["type"], "string");
        assert_eq!(x["description"], "d");
    }

    #[test]
    fn recursion_stops_and_unknown_refs_are_untyped() {
        let s = json!({
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "properties": {"tree": {"$ref": "#/$defs/Node"}, "odd": {"$ref": "#/$defs/Nope"},
                           "far": {"$ref": "https://example.com/s.json"},
                           "spaced": {"$ref": "#/$defs/A%20B"}},
            "$defs2": {}
        });
        let mut s = s;
        s["$defs"]["A B"] = json!({"type": "boolean"});
        let v = coercion_view(&s);
        let mut node = &v["properties"]["tree"];
        let mut levels = 0;
        while let Some(next) = node.pointer("/properties/children/items") {
            node = next;
            levels += 1;
        }
        assert_eq!(levels, MAX_REF_DEPTH);
        assert_eq!(v["properties"]["odd"], json!({}));
        assert_eq!(v["properties"]["far"], json!({}));
        assert_eq!(v["properties"]["spaced"]["type"], "boolean");
    }
}
