//! An OpenAPI 3.x or Swagger 2.0 document: read from a file or given inline, its
//! version, its base URL, `$ref`s followed, and its schemas turned into the JSON Schema
//! toolgate checks (references inlined, recursion cut, OpenAPI's own keywords such as
//! `nullable`, `xml` and `example` translated or dropped).

use std::path::Path;

use serde_json::{Map, Value, json};

/// How deep schemas are inlined; a reference deeper than this, or back into itself,
/// becomes an unchecked object.
const MAX_DEPTH: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Swagger2,
    OpenApi3,
}

/// A parsed document and its version.
#[derive(Debug, Clone)]
pub struct Document {
    pub root: Value,
    pub version: Version,
}

/// Reads `source`: a path (relative to `dir`) to a JSON or YAML file, or the document
/// itself.
pub fn read(source: &Value, dir: &Path) -> Result<Document, String> {
    let root = match source {
        Value::String(p) => {
            let path = dir.join(p);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("openapi: cannot read {}: {e}", path.display()))?;
            parse_text(&text).map_err(|e| format!("openapi: {}: {e}", path.display()))?
        }
        Value::Object(_) => source.clone(),
        _ => return Err("openapi: must be the path of a document or the document itself".into()),
    };
    let version = version_of(&root)?;
    if !root.get("paths").is_some_and(Value::is_object) {
        return Err("openapi: the document has no paths".into());
    }
    Ok(Document { root, version })
}

/// JSON when it starts like JSON, else YAML.
pub fn parse_text(text: &str) -> Result<Value, String> {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| format!("line {}: {e}", e.line()))
    } else {
        serde_saphyr::from_str(text).map_err(|e| toolgate_tool::folder::first_line(&e.to_string()))
    }
}

fn version_of(root: &Value) -> Result<Version, String> {
    let text = |k: &str| match root.get(k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    if let Some(v) = text("swagger") {
        return if v.starts_with('2') {
            Ok(Version::Swagger2)
        } else {
            Err(format!("swagger: version {v} is not supported (2.0 is)"))
        };
    }
    match text("openapi") {
        Some(v) if v.starts_with("3.") => Ok(Version::OpenApi3),
        Some(v) => Err(format!("openapi: version {v} is not supported (3.x is)")),
        None => Err("the document has neither `openapi: 3.x` nor `swagger: \"2.0\"`".into()),
    }
}

/// A `$ref` that cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    /// A reference to another document.
    #[error("$ref '{0}' points outside the document, which is not supported")]
    Outside(String),
    /// A reference to nothing in this one.
    #[error("$ref '{0}' points at nothing")]
    Nothing(String),
    /// References that lead to each other.
    #[error("a chain of $refs does not end")]
    Endless,
}

impl From<RefError> for String {
    fn from(e: RefError) -> String {
        e.to_string()
    }
}

impl Document {
    /// The target of a local reference (`#/components/schemas/Pet`).
    pub fn target(&self, reference: &str) -> Result<&Value, RefError> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| RefError::Outside(reference.to_string()))?;
        self.root
            .pointer(pointer)
            .ok_or_else(|| RefError::Nothing(reference.to_string()))
    }

    /// `v` with a `$ref` (to a parameter, a request body, ...) followed, chains included.
    pub fn deref<'a>(&'a self, mut v: &'a Value) -> Result<&'a Value, RefError> {
        for _ in 0..32 {
            match v.get("$ref").and_then(Value::as_str) {
                Some(r) => v = self.target(r)?,
                None => return Ok(v),
            }
        }
        Err(RefError::Endless)
    }

    /// The API's base URL: Swagger's scheme, host and basePath, or OpenAPI's first
    /// server with its variables at their defaults. `None` when the document gives
    /// none, or only a relative one.
    pub fn base_url(&self) -> Option<String> {
        let url = match self.version {
            Version::Swagger2 => {
                let host = self.root.get("host")?.as_str()?;
                let scheme = self
                    .root
                    .get("schemes")
                    .and_then(|s| s.get(0))
                    .and_then(Value::as_str)
                    .unwrap_or("https");
                let base = self
                    .root
                    .get("basePath")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                format!("{scheme}://{host}{base}")
            }
            Version::OpenApi3 => {
                let server = self.root.get("servers")?.get(0)?;
                let mut url = server.get("url")?.as_str()?.to_string();
                if let Some(vars) = server.get("variables").and_then(Value::as_object) {
                    for (name, var) in vars {
                        if let Some(d) = var.get("default").and_then(Value::as_str) {
                            url = url.replace(&format!("{{{name}}}"), d);
                        }
                    }
                }
                url
            }
        };
        (url.starts_with("http://") || url.starts_with("https://"))
            .then(|| url.trim_end_matches('/').to_string())
    }

    /// `raw` as toolgate's JSON Schema: references inlined, OpenAPI's keywords
    /// translated.
    pub fn schema(&self, raw: &Value) -> Result<Value, RefError> {
        self.schema_at(raw, &mut Vec::new())
    }

    fn schema_at(&self, raw: &Value, stack: &mut Vec<String>) -> Result<Value, RefError> {
        if let Some(r) = raw.get("$ref").and_then(Value::as_str) {
            if stack.iter().any(|s| s == r) || stack.len() >= MAX_DEPTH {
                let name = r.rsplit('/').next().unwrap_or(r);
                return Ok(json!({"type": "object", "description": format!("a {name}")}));
            }
            let target = self.target(r)?;
            stack.push(r.to_string());
            let out = self.schema_at(target, stack);
            stack.pop();
            return out;
        }
        let Some(obj) = raw.as_object() else {
            // `items: true` and the like: kept as written.
            return Ok(raw.clone());
        };
        let mut out = Map::new();
        let mut nullable = false;
        for (k, v) in obj {
            match k.as_str() {
                "properties" => {
                    let mut props = Map::new();
                    for (name, s) in v.as_object().into_iter().flatten() {
                        props.insert(name.clone(), self.schema_at(s, stack)?);
                    }
                    out.insert(k.clone(), Value::Object(props));
                }
                "items" | "not" | "additionalProperties" if v.is_object() => {
                    out.insert(k.clone(), self.schema_at(v, stack)?);
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let list = v
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|s| self.schema_at(s, stack))
                        .collect::<Result<Vec<_>, _>>()?;
                    out.insert(k.clone(), Value::Array(list));
                }
                "nullable" | "x-nullable" => nullable = v.as_bool() == Some(true),
                // OpenAPI's own annotations: not JSON Schema, nothing to check.
                "xml" | "example" | "externalDocs" | "discriminator" => {}
                // OpenAPI 3.0 / Swagger: `exclusiveMinimum: true` beside `minimum`.
                "exclusiveMinimum" | "exclusiveMaximum" if v.is_boolean() => {
                    let bound = if k == "exclusiveMinimum" {
                        "minimum"
                    } else {
                        "maximum"
                    };
                    if v.as_bool() == Some(true)
                        && let Some(b) = obj.get(bound)
                    {
                        out.insert(k.clone(), b.clone());
                    }
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        for (exclusive, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if obj.get(exclusive) == Some(&Value::Bool(true)) {
                out.remove(bound);
            }
        }
        merge_all_of(&mut out);
        if nullable && let Some(Value::String(t)) = out.get("type").cloned() {
            out.insert("type".into(), json!([t, "null"]));
        }
        Ok(Value::Object(out))
    }
}

/// `allOf` of plain object schemas (the usual way to extend a schema) merged into one
/// object schema, which the fast validator can check; any other `allOf` is kept.
fn merge_all_of(out: &mut Map<String, Value>) {
    let Some(Value::Array(parts)) = out.get("allOf") else {
        return;
    };
    let plain = parts.iter().all(|p| {
        p.as_object().is_some_and(|o| {
            o.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "type" | "properties" | "required" | "description" | "title"
                )
            }) && o.get("type").is_none_or(|t| t == "object")
        })
    });
    if !plain {
        return;
    }
    let parts = parts.clone();
    out.remove("allOf");
    let mut props = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for p in &parts {
        for (k, v) in p
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            props.insert(k.clone(), v.clone());
        }
        for r in p
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !required.contains(r) {
                required.push(r.clone());
            }
        }
        if let Some(d) = p.get("description") {
            out.entry("description").or_insert_with(|| d.clone());
        }
    }
    out.insert("type".into(), json!("object"));
    let existing = out
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(existing) = existing.as_object_mut() {
        existing.extend(props);
    }
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn references_are_inlined_and_recursion_is_cut() {
        let doc = Document {
            root: json!({"openapi": "3.0.3", "paths": {}, "components": {"schemas": {
                "Node": {"type": "object", "nullable": true, "xml": {"name": "n"},
                         "properties": {"next": {"$ref": "#/components/schemas/Node"},
                                        "n": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}}}
            }}}),
            version: Version::OpenApi3,
        };
        let s = doc
            .schema(&json!({"$ref": "#/components/schemas/Node"}))
            .unwrap();
        assert_eq!(s["type"], json!(["object", "null"]));
        assert!(s.get("xml").is_none());
        assert_eq!(s["properties"]["next"]["type"], "object");
        assert!(s["properties"]["next"].get("properties").is_none());
        assert_eq!(
            s["properties"]["n"],
            json!({"type": "integer", "exclusiveMinimum": 0})
        );
        assert!(doc.schema(&json!({"$ref": "other.json#/X"})).is_err());
    }

    #[test]
    fn all_of_objects_merge() {
        let doc = Document {
            root: json!({"swagger": "2.0", "paths": {}, "definitions": {
                "Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
            }}),
            version: Version::Swagger2,
        };
        let s = doc
            .schema(&json!({"allOf": [{"$ref": "#/definitions/Base"},
                {"properties": {"name": {"type": "string"}}, "required": ["name"]}]}))
            .unwrap();
        assert_eq!(s["required"], json!(["id", "name"]));
        assert_eq!(s["properties"]["name"]["type"], "string");
    }
}
