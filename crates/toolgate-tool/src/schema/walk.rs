//! The walk over a whole schema as a tool file writes it, every subschema included
//! (`anyOf` members, `$defs`, `items`, ...): an unknown or misspelt keyword anywhere is
//! refused with the keys leading to it, as is a `$ref` that points to nothing in the
//! schema, and the walk tells whether the schema needs the full validator (a keyword only
//! it checks, a `true`/`false` schema, a tuple `items`).

use serde_json::Value;

use super::inline::resolve;
use super::{At, MAX_DEPTH, SchemaError};
use crate::keywords::{Keyword, keyword};

/// Keywords whose value is one schema.
const ONE: [&str; 10] = [
    "items",
    "additionalProperties",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
];

/// Keywords whose value is a list of schemas.
const LIST: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];

/// Keywords whose value maps names to schemas.
const MAP: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Checks every key of `raw` and its subschemas; `Ok(true)` when the schema needs the
/// full validator.
pub(super) fn check(raw: &Value) -> Result<bool, SchemaError> {
    let mut walk = Walk {
        root: raw,
        full: false,
    };
    walk.node(raw, &At::default(), 0)?;
    Ok(walk.full)
}

/// Whether `raw` needs the full validator (its keywords unchecked).
pub(super) fn needs_full(raw: &Value) -> bool {
    let mut walk = Walk {
        root: raw,
        full: false,
    };
    // A fault is reported by `check`; here it only matters whether the fast path may try.
    walk.node(raw, &At::default(), 0)
        .map_or(true, |()| walk.full)
}

struct Walk<'a> {
    /// The schema references point into.
    root: &'a Value,
    /// Something only the full validator checks was met.
    full: bool,
}

impl Walk<'_> {
    fn node(&mut self, raw: &Value, at: &At, depth: usize) -> Result<(), SchemaError> {
        if depth > MAX_DEPTH {
            return Err(at.err(None, "schemas nest too deep".into()));
        }
        let obj = match raw {
            Value::Object(obj) => obj,
            // `true` / `false` as a whole schema: JSON Schema allows it, the fast path does not.
            Value::Bool(_) => {
                self.full = true;
                return Ok(());
            }
            _ => return Err(at.err(None, "a schema must be a map".into())),
        };
        for (key, value) in obj {
            match keyword(key) {
                Keyword::Unknown(why) => return Err(at.err(Some(key), why)),
                Keyword::FullOnly => self.full = true,
                Keyword::Checked | Keyword::Annotation => {}
            }
            let k = key.as_str();
            if k == "$ref" {
                self.reference(value, at)?;
            }
            if k == "else" || ONE.contains(&k) {
                match value {
                    // `additionalProperties: false` and tuple `items` lists.
                    Value::Bool(_) if k == "additionalProperties" => {}
                    Value::Array(list) if k == "items" => {
                        self.full = true;
                        self.each(list, at, key, depth)?;
                    }
                    _ => {
                        let path = match k {
                            "items" => format!("{}[]", at.path),
                            "additionalProperties" => format!("{}.*", at.path),
                            _ => join(&at.path, key),
                        };
                        self.node(value, &at.child(path, key), depth + 1)?;
                    }
                }
            } else if LIST.contains(&k) {
                let Value::Array(list) = value else {
                    return Err(at.err(Some(key), format!("{key} must be a list of schemas")));
                };
                self.each(list, at, key, depth)?;
            } else if MAP.contains(&k) {
                let Value::Object(map) = value else {
                    return Err(at.err(Some(key), format!("{key} must be a map")));
                };
                for (name, sub) in map {
                    let path = if k == "properties" {
                        join(&at.path, name)
                    } else {
                        join(&join(&at.path, key), name)
                    };
                    let mut keys = at.clone();
                    if k != "properties" {
                        keys = keys.child(keys.path.clone(), key);
                    }
                    self.node(sub, &keys.child(path, name), depth + 1)?;
                }
            } else if k == "dependencies"
                && let Value::Object(map) = value
            {
                // Draft 7: a list of names (nothing to walk) or a schema.
                for (name, sub) in map.iter().filter(|(_, v)| v.is_object()) {
                    let path = join(&join(&at.path, key), name);
                    self.node(sub, &at.child(path, name), depth + 1)?;
                }
            } else if matches!(k, "exclusiveMinimum" | "exclusiveMaximum") && value.is_boolean() {
                // Draft 4's boolean form: the full validator reads the schema's draft.
                self.full = true;
            }
        }
        Ok(())
    }

    fn each(
        &mut self,
        list: &[Value],
        at: &At,
        key: &str,
        depth: usize,
    ) -> Result<(), SchemaError> {
        for (i, sub) in list.iter().enumerate() {
            let path = format!("{}[{i}]", join(&at.path, key));
            self.node(sub, &at.child(path, key), depth + 1)?;
        }
        Ok(())
    }

    /// A `$ref` must point inside the schema, at something that is there.
    fn reference(&self, value: &Value, at: &At) -> Result<(), SchemaError> {
        let why = match value.as_str() {
            None => "$ref must be text (a pointer such as #/$defs/Name)".to_string(),
            Some(r) if !r.starts_with('#') => format!(
                "$ref {r:?} points outside the schema; a tool file's references are local \
             (#/$defs/Name)"
            ),
            Some(r) if resolve(self.root, r).is_none() => {
                format!("$ref {r:?} points to nothing in this schema")
            }
            Some(_) => return Ok(()),
        };
        Err(at.err(Some("$ref"), why))
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_schemas_stay_on_the_fast_path() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string"}},
                       "additionalProperties": false});
        assert!(!check(&s).unwrap());
    }

    #[test]
    fn union_refs_booleans_and_tuples_need_the_full_validator() {
        for s in [
            json!({"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}),
            json!({"properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}),
            json!({"properties": {"a": true}}),
            json!({"properties": {"a": {"items": [{"type": "string"}]}}}),
            json!({"properties": {"a": {"type": "number", "exclusiveMinimum": true}}}),
        ] {
            assert!(check(&s).unwrap(), "{s}");
        }
    }

    #[test]
    fn a_typo_deep_inside_is_refused_with_its_keys() {
        let s = json!({"properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer", "minimun": 1}]}}});
        let e = check(&s).unwrap_err();
        assert_eq!(e.keys, ["v", "anyOf", "minimun"]);
        assert!(
            e.message
                .starts_with("v.anyOf[1]: minimun: unknown keyword (did you mean minimum?)"),
            "{}",
            e.message
        );
        let e = check(&json!({"properties": {"v": {"$ref": "#/$defs/nope"}}})).unwrap_err();
        assert_eq!(e.keys, ["v", "$ref"]);
        assert_eq!(
            e.message,
            "v: $ref \"#/$defs/nope\" points to nothing in this schema"
        );
        assert!(check(&json!({"items": {"$ref": "other.json#/a"}})).is_err());
        let s = json!({"$defs": {"when": {"type": "object", "properties": {"hour": {"typ": "integer"}}}}});
        let e = check(&s).unwrap_err();
        assert_eq!(e.keys, ["$defs", "when", "hour", "typ"]);
        assert!(
            e.message.starts_with("$defs.when.hour: typ:"),
            "{}",
            e.message
        );
        assert!(check(&json!({"anyOf": {"type": "string"}})).is_err());
        assert!(check(&json!({"properties": {"a": 3}})).is_err());
    }
}
