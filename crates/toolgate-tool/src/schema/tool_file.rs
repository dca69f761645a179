//! Compiling the schema a tool file declares: every JSON Schema keyword is accepted,
//! checked by the fast path when it can check them all and by the full validator when
//! it cannot (`anyOf`, `oneOf`, `$ref`, ...), while an unknown or misspelt keyword
//! anywhere, a fault in a plain parameter (`minimum` above `maximum`, a pattern that
//! does not compile) and a default that fails its own schema are still refused, each
//! with the keys leading to it so the file can point at the line.

use serde_json::{Map, Value};

use super::full::{Formats, Full, path_of};
use super::{At, Schema, SchemaError, walk};

impl Schema {
    /// Compiles the schema of a tool file (`parameters:` or `output:`).
    pub fn compile_file(raw: &Value) -> Result<Schema, SchemaError> {
        if !walk::check(raw)? {
            return Self::compile_located(raw);
        }
        // The plain parameters still get the fast path's checks of the file itself.
        if let Some(props) = raw.get("properties").and_then(Value::as_object) {
            for (name, sub) in props.iter().filter(|(_, s)| !walk::needs_full(s)) {
                Self::compile_at(sub, &At::default().child(name.clone(), name), 1)?;
            }
        }
        let full = Full::compile(raw, Formats::Shown).map_err(|e| {
            let pointer = e.instance_path().as_str().to_string();
            located(&pointer, e.to_string())
        })?;
        check_defaults(raw, &full)?;
        Ok(Self::with_full(raw, full))
    }
}

/// A fault at `pointer` inside the schema: its keys (property names and keywords, list
/// positions left out) and the message with the path in front.
fn located(pointer: &str, message: String) -> SchemaError {
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|seg| seg.replace("~1", "/").replace("~0", "~"))
        .filter(|seg| seg != "properties" && !seg.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    let path = path_of(&pointer.replace("/properties/", "/"));
    let message = if path.is_empty() {
        message
    } else {
        format!("{path}: {message}")
    };
    SchemaError { keys, message }
}

/// The defaults of the top-level parameters, checked by the full validator: a default
/// is filled in for the model, so it must pass its own schema.
fn check_defaults(raw: &Value, full: &Full) -> Result<(), SchemaError> {
    let Some(props) = raw.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    let defaults: Map<String, Value> = props
        .iter()
        .filter_map(|(k, s)| Some((k.clone(), s.get("default")?.clone())))
        .collect();
    if defaults.is_empty() {
        return Ok(());
    }
    let errors = full.errors(&Value::Object(defaults.clone()));
    for (name, default) in &defaults {
        // Errors about the object as a whole (a required parameter missing) are not the
        // default's; errors inside it are.
        let own = errors.iter().find(|e| {
            e.param == *name
                || e.param.starts_with(&format!("{name}."))
                || e.param.starts_with(&format!("{name}["))
        });
        if let Some(e) = own {
            return Err(SchemaError {
                keys: vec![name.clone(), "default".into()],
                message: format!(
                    "{name}: the default {default} does not pass its own schema: {}",
                    e.message
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// What Pydantic writes for a FastAPI model with optional, union, nested and enum
    /// fields.
    fn pydantic() -> Value {
        json!({
            "$defs": {
                "Unit": {"enum": ["c", "f"], "title": "Unit", "type": "string"},
                "Place": {"properties": {"city": {"title": "City", "type": "string"},
                                         "unit": {"$ref": "#/$defs/Unit"}},
                          "required": ["city"], "title": "Place", "type": "object"}
            },
            "properties": {
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Note"},
                "days": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "title": "Days"},
                "label": {"anyOf": [{"type": "integer"}, {"type": "string"}], "title": "Label"},
                "place": {"$ref": "#/$defs/Place"},
                "tags": {"type": ["array", "string"], "items": {"type": "string"}},
                "shape": {"oneOf": [
                    {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
                    {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}
                ], "discriminator": {"propertyName": "kind"}}
            },
            "required": ["days", "place"],
            "title": "Forecast",
            "type": "object"
        })
    }

    #[test]
    fn a_pydantic_schema_loads_checks_and_coerces() {
        let s = Schema::compile_file(&pydantic()).unwrap();
        assert!(s.full.is_some());
        let ok = s
            .check(args(
                json!({"days": "3", "label": "3", "place": {"city": "Oslo", "unit": "c"}}),
            ))
            .unwrap();
        // JSON arguments: text becomes a number where no string member admits it.
        assert_eq!(ok["days"], json!(3));
        assert_eq!(ok["label"], json!("3"));
        assert_eq!(ok["note"], json!(null));
        let errors = s
            .check(args(
                json!({"days": 0, "place": {"unit": "k"}, "shape": {"kind": "circle"}}),
            ))
            .unwrap_err();
        let params: Vec<&str> = errors.iter().map(|e| e.param.as_str()).collect();
        assert!(params.contains(&"place"), "{errors:?}");
        assert!(params.contains(&"place.unit"), "{errors:?}");
        assert!(params.contains(&"shape"), "{errors:?}");
        // The coercion view has the reference inlined; prompts see the union's types.
        assert_eq!(
            s.coercion_schema()["properties"]["place"]["properties"]["unit"]["enum"],
            json!(["c", "f"])
        );
        let types: Vec<(String, String)> = s
            .properties()
            .map(|(k, p)| (k.to_string(), p.type_name()))
            .collect();
        assert!(
            types.contains(&("note".into(), "string or null".into())),
            "{types:?}"
        );
        assert!(
            types.contains(&("place".into(), "object".into())),
            "{types:?}"
        );
        // `format` stays an annotation in a tool file, as on the fast path.
        let f = Schema::compile_file(&json!({"properties": {
            "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}}}))
        .unwrap();
        assert!(f.check(args(json!({"when": "soon"}))).is_ok());
    }

    #[test]
    fn faults_are_still_refused_with_their_keys() {
        let typo = json!({"properties": {"v": {"oneOf": [{"type": "string", "maxLenght": 3}]}}});
        let e = Schema::compile_file(&typo).unwrap_err();
        assert_eq!(e.keys, ["v", "oneOf", "maxLenght"]);
        let crossed = json!({"properties": {
            "u": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "n": {"type": "integer", "minimum": 5, "maximum": 1}}});
        let e = Schema::compile_file(&crossed).unwrap_err();
        assert_eq!(e.keys, ["n", "minimum"]);
        assert!(
            e.message.starts_with("n: minimum 5 is above maximum 1"),
            "{}",
            e.message
        );
        let bad_type = json!({"properties": {"v": {"anyOf": [{"type": "strin"}]}}});
        let e = Schema::compile_file(&bad_type).unwrap_err();
        assert_eq!(e.keys, ["v", "anyOf", "type"], "{}", e.message);
        assert!(e.message.starts_with("v.anyOf[0].type: "), "{}", e.message);
        let far = json!({"properties": {"v": {"$ref": "https://example.com/x.json"}}});
        assert!(Schema::compile_file(&far).is_err());
        let missing = json!({"properties": {"v": {"$ref": "#/$defs/nope"}}});
        assert!(Schema::compile_file(&missing).is_err());
        let default = json!({"properties": {
            "d": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": "soon"}}});
        let e = Schema::compile_file(&default).unwrap_err();
        assert_eq!(e.keys, ["d", "default"]);
        assert!(
            e.message
                .starts_with("d: the default \"soon\" does not pass its own schema"),
            "{}",
            e.message
        );
    }

    #[test]
    fn pointers_become_keys() {
        let e = located("/properties/a~1b/anyOf/2/type", "bad".into());
        assert_eq!(e.keys, ["a/b", "anyOf", "type"]);
        assert_eq!(e.message, "a/b.anyOf[2].type: bad");
        assert_eq!(located("", "bad".into()).message, "bad");
    }
}
