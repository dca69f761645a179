//! Full JSON Schema for the schemas the fast validator cannot check (`anyOf`, `oneOf`,
//! `$ref`, ...), as MCP servers and tool files write them: compiled once with the
//! `jsonschema` crate, each error reported with its path and reason, like the fast
//! path's, and with the view the parser coerces by (see `inline.rs`).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Schema;
use super::inline::coercion_view;
use crate::ArgError;
use toolgate_parse::coerce::{Types, coerce_json, property};

/// A compiled full validator and the schema's coercion view.
#[derive(Clone)]
pub(super) struct Full {
    validator: Arc<jsonschema::Validator>,
    view: Arc<Value>,
}

impl std::fmt::Debug for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Full(jsonschema)")
    }
}

/// Whether `format` is checked: MCP servers mean their formats; a tool file's `format`
/// is an annotation, as on the fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Formats {
    Checked,
    Shown,
}

impl Full {
    /// Compiles `raw` with every keyword of JSON Schema checked (`format` as `formats`
    /// says); a reference that points outside the schema does not compile.
    pub(super) fn compile(
        raw: &Value,
        formats: Formats,
    ) -> Result<Full, jsonschema::ValidationError<'static>> {
        let validator = jsonschema::options()
            .should_validate_formats(formats == Formats::Checked)
            .build(raw)?;
        Ok(Full {
            validator: Arc::new(validator),
            view: Arc::new(coercion_view(raw)),
        })
    }

    /// Every error of `value`, each at its path (`a.b`, `list[2]`).
    pub(super) fn errors(&self, value: &Value) -> Vec<ArgError> {
        self.validator
            .iter_errors(value)
            .map(|e| ArgError {
                param: path_of(e.instance_path().as_str()),
                message: e.to_string(),
            })
            .collect()
    }

    /// The schema with its references inlined, for coercion.
    pub(super) fn view(&self) -> &Value {
        &self.view
    }
}

/// A JSON pointer (`/when/0/hour`) as the fast path writes paths (`when[0].hour`).
pub(super) fn path_of(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

impl Schema {
    /// Compiles a schema from a source that is not a tool file (an MCP server): the fast
    /// path when it can check every keyword, else the full validator; a schema neither
    /// compiles is refused, never accepted unchecked.
    pub fn compile_full(raw: &Value) -> Result<Schema, super::SchemaError> {
        let fast_error = match Self::compile(raw) {
            Ok(schema) => return Ok(schema),
            Err(e) => e,
        };
        if !raw.is_object() {
            return Err(fast_error);
        }
        let full = Full::compile(raw, Formats::Checked).map_err(|e| super::SchemaError {
            keys: Vec::new(),
            message: e.to_string(),
        })?;
        Ok(Self::with_full(raw, full))
    }

    /// The schema checked by `full`. The shape shown in prompts and help is the coercion
    /// view without what the fast path cannot read; it checks nothing (the full validator
    /// checks every call), and a parameter whose type is a union is shown with it.
    pub(super) fn with_full(raw: &Value, full: Full) -> Schema {
        let view = full.view();
        let mut shape = Self::compile(&shape_of(view)).unwrap_or_else(|_| empty());
        for (name, param) in &mut shape.properties {
            if param.types.is_none() {
                param.types = property(Some(view), name).and_then(Types::of);
            }
        }
        shape.raw = raw.clone();
        shape.full = Some(full);
        shape
    }

    /// The schema the parser coerces this tool's values by: the schema itself, or for
    /// one the full validator checks, its references inlined.
    pub fn coercion_schema(&self) -> &Value {
        self.full.as_ref().map_or(&self.raw, Full::view)
    }

    /// The call's arguments checked by the full validator: top-level values coerced
    /// the parser's way where their type is plain, defaults filled, every error at once.
    pub(super) fn check_full(
        &self,
        full: &Full,
        args: Map<String, Value>,
    ) -> Result<Map<String, Value>, Vec<ArgError>> {
        let mut out = Map::with_capacity(args.len());
        let view = full.view();
        for (key, value) in args {
            let value = match property(Some(view), &key) {
                Some(s) => coerce_json(value, Some(s)).unwrap_or_else(|m| m.kept),
                None => value,
            };
            out.insert(key, value);
        }
        if let Some(props) = self.raw.get("properties").and_then(Value::as_object) {
            for (name, s) in props {
                if !out.contains_key(name)
                    && let Some(d) = s.get("default")
                {
                    out.insert(name.clone(), d.clone());
                }
            }
        }
        let value = Value::Object(out);
        let errors = full.errors(&value);
        match value {
            Value::Object(out) if errors.is_empty() => Ok(out),
            _ => Err(errors),
        }
    }

    /// A value checked by the full validator.
    pub(super) fn check_value_full(full: &Full, value: Value) -> Result<Value, Vec<ArgError>> {
        let errors = full.errors(&value);
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors)
        }
    }
}

/// An empty schema: allows anything.
fn empty() -> Schema {
    Schema {
        raw: Value::Object(Map::new()),
        types: None,
        enum_values: None,
        constant: None,
        pattern: None,
        minimum: None,
        maximum: None,
        exclusive_minimum: None,
        exclusive_maximum: None,
        multiple_of: None,
        min_length: None,
        max_length: None,
        items: None,
        min_items: None,
        max_items: None,
        unique_items: false,
        properties: Vec::new(),
        required: Vec::new(),
        additional: super::Additional::Allowed,
        min_properties: None,
        max_properties: None,
        default: None,
        secret: false,
        full: None,
    }
}

/// `raw` with the keywords the fast path cannot read taken out, nested schemas too; a
/// property whose shape still does not compile keeps only its description.
fn shape_of(raw: &Value) -> Value {
    let Some(obj) = raw.as_object() else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (k, v) in obj {
        match k.as_str() {
            "properties" => {
                let props = v
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(name, s)| {
                                let shaped = shape_of(s);
                                let shaped = if Schema::compile(&shaped).is_ok() {
                                    shaped
                                } else {
                                    let mut only = Map::new();
                                    if let Some(d) = s.get("description") {
                                        only.insert("description".into(), d.clone());
                                    }
                                    Value::Object(only)
                                };
                                (name.clone(), shaped)
                            })
                            .collect::<Map<_, _>>()
                    })
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" if v.is_object() => {
                out.insert(k.clone(), shape_of(v));
            }
            "additionalProperties" | "required" => {
                out.insert(k.clone(), v.clone());
            }
            key if super::keywords::refusal(key).is_none() && key != "default" => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn pointers_become_paths() {
        assert_eq!(path_of(""), "");
        assert_eq!(path_of("/when/0/hour"), "when[0].hour");
        assert_eq!(path_of("/a~1b"), "a/b");
    }

    #[test]
    fn any_of_is_checked_fully() {
        let s = Schema::compile_full(&json!({
            "type": "object",
            "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
            "required": ["v"]
        }))
        .unwrap();
        assert!(s.check(args(json!({"v": "x"}))).is_ok());
        assert!(s.check(args(json!({"v": 3}))).is_ok());
        let errors = s.check(args(json!({"v": [1]}))).unwrap_err();
        assert_eq!(errors[0].param, "v");
        let errors = s.check(args(json!({}))).unwrap_err();
        assert!(
            errors[0].message.contains("\"v\" is a required property"),
            "{errors:?}"
        );
        // The shape for prompts still lists the parameter.
        assert_eq!(s.properties().map(|(k, _)| k).collect::<Vec<_>>(), ["v"]);
    }

    #[test]
    fn refs_and_consts_are_checked_with_paths() {
        let s = Schema::compile_full(&json!({
            "type": "object",
            "$defs": {"when": {"type": "object", "properties": {
                "hour": {"type": "integer", "maximum": 23},
                "kind": {"const": "local"}
            }, "required": ["hour"]}},
            "properties": {"at": {"type": "array", "items": {"$ref": "#/$defs/when"}}}
        }))
        .unwrap();
        assert!(
            s.check(args(json!({"at": [{"hour": 3, "kind": "local"}]})))
                .is_ok()
        );
        let errors = s
            .check(args(
                json!({"at": [{"hour": 3}, {"hour": 30, "kind": "utc"}]}),
            ))
            .unwrap_err();
        let params: Vec<&str> = errors.iter().map(|e| e.param.as_str()).collect();
        assert!(params.contains(&"at[1].hour"), "{errors:?}");
        assert!(params.contains(&"at[1].kind"), "{errors:?}");
    }

    #[test]
    fn a_plain_schema_keeps_the_fast_path() {
        let s = Schema::compile_full(
            &json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        )
        .unwrap();
        assert!(s.full.is_none());
        // The fast path coerces text the parser's way.
        assert_eq!(s.check(args(json!({"n": "4"}))).unwrap()["n"], json!(4));
    }

    #[test]
    fn a_broken_schema_is_refused() {
        let err = Schema::compile_full(&json!({
            "type": "object",
            "properties": {"v": {"$ref": "https://example.com/other.json"}}
        }))
        .unwrap_err();
        assert!(!err.message.is_empty());
        assert!(Schema::compile_full(&json!({"anyOf": "no"})).is_err());
    }
}
