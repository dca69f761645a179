//! One tool per operation: path, query, header and cookie parameters and the request
//! body's fields merged into one input schema (a name used in two places gets its
//! place as a prefix: `path_id`, `body_id`), the description from the summary and
//! description, the permission from the method unless the file says otherwise.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::binding::{
    AUTH_PASSWORD, AUTH_TOKEN, AUTH_USERNAME, Binding, BodyBinding, BodyShape, Field, Location,
    Param,
};
use super::document::{Document, Version};
use toolgate_tool::{Credential, Permission, SourceBinding, ToolSpec};

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// What is shared by every operation of a file.
pub struct Common<'a> {
    pub api: &'a str,
    pub base_url: &'a str,
    pub auth: &'a super::binding::Auth,
    pub credentials: &'a BTreeMap<String, Credential>,
    pub permission: Option<Permission>,
    pub permissions: &'a BTreeMap<String, Permission>,
    pub allow_hosts: &'a [String],
    pub timeout: Option<f64>,
    pub max_response: Option<usize>,
    pub headers: &'a BTreeMap<String, String>,
}

/// An operation found in the document: its id and either its tool or why it has none.
pub struct Found {
    pub operation: String,
    pub tool: Result<ToolSpec, String>,
}

/// Every operation of the document, in its order.
pub fn operations(doc: &Document, common: &Common) -> Vec<Found> {
    let mut out = Vec::new();
    let Some(paths) = doc.root.get("paths").and_then(Value::as_object) else {
        return out;
    };
    for (path, item) in paths {
        let Ok(item) = doc.deref(item) else { continue };
        let shared = item.get("parameters").cloned().unwrap_or(json!([]));
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let operation = op
                .get("operationId")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| made_id(method, path));
            let tool = spec(doc, common, path, method, &operation, op, &shared);
            out.push(Found { operation, tool });
        }
    }
    out
}

/// `get_pet_petId` for `GET /pet/{petId}` without an operationId.
fn made_id(method: &str, path: &str) -> String {
    let mut id = method.to_string();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        id.push('_');
        id.push_str(seg.trim_matches(|c| c == '{' || c == '}'));
    }
    clean(&id)
}

/// Letters, digits, `_`, `-` and `.`; anything else becomes `_`.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One input before names are settled.
struct Input {
    place: &'static str,
    name: String,
    schema: Value,
    required: bool,
    /// Where it goes (the argument's name is set later).
    to: To,
}

enum To {
    Param(Location, bool),
    Field,
    Whole,
}

/// The tool of one operation.
fn spec(
    doc: &Document,
    common: &Common,
    path: &str,
    method: &str,
    operation: &str,
    op: &Value,
    shared: &Value,
) -> Result<ToolSpec, String> {
    let params = merged_params(doc, op, shared)?;
    let mut inputs: Vec<Input> = Vec::new();
    let mut body = param_inputs(doc, common, op, params, &mut inputs)?;
    if let Some(rb) = op.get("requestBody") {
        body = Some(request_body(doc, rb, &mut inputs)?);
    }
    let settled = settle(inputs);
    let body = body.map(|(content_type, required)| BodyBinding {
        content_type,
        shape: match settled.whole {
            Some(arg) => BodyShape::Whole(arg),
            None => BodyShape::Fields(settled.fields),
        },
        required,
    });
    let upper = method.to_ascii_uppercase();
    let description = description_of(op, &upper, path);
    let safe = matches!(method, "get" | "head");
    let permission = common
        .permissions
        .get(operation)
        .copied()
        .or(common.permission)
        .unwrap_or(if safe {
            Permission::Auto
        } else {
            Permission::Confirm
        });
    let binding = Binding {
        api: common.api.to_string(),
        operation: operation.to_string(),
        method: upper,
        url: format!("{}{path}", common.base_url),
        params: settled.bound,
        body,
        auth: common.auth.clone(),
        allow_hosts: common.allow_hosts.to_vec(),
        max_response: common.max_response,
        headers: common.headers.clone(),
        check: None,
    };
    Ok(ToolSpec {
        name: format!("{}__{}", common.api, clean(operation)),
        description,
        parameters: json!({
            "type": "object",
            "properties": settled.properties,
            "required": settled.required,
        }),
        permission,
        entry: SourceBinding::entry(
            "openapi",
            format!("openapi:{} {}", binding.method, binding.operation),
            &binding,
        ),
        category: Some("openapi".into()),
        timeout: common.timeout,
        tags: op
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default(),
        version: doc
            .root
            .pointer("/info/version")
            .and_then(Value::as_str)
            .map(String::from),
        read_only: safe,
        output: None,
        credentials: common.credentials.clone(),
        is_final: false,
        hidden: false,
        sandbox: None,
        display: Default::default(),
    })
}

/// The path's and the operation's parameters, references followed; an operation's
/// parameter overrides a path-level one of the same name and place.
fn merged_params<'a>(
    doc: &'a Document,
    op: &'a Value,
    shared: &'a Value,
) -> Result<Vec<&'a Value>, String> {
    let mut params: Vec<&Value> = Vec::new();
    for p in shared.as_array().into_iter().flatten().chain(
        op.get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten(),
    ) {
        let p = doc.deref(p)?;
        let key = |v: &Value| (v.get("name").cloned(), v.get("in").cloned());
        params.retain(|q| key(q) != key(p));
        params.push(p);
    }
    Ok(params)
}

/// The inputs of the parameters, added to `inputs`; the body's media type and
/// whether it is required, when a Swagger 2 `body` or `formData` parameter makes one.
fn param_inputs(
    doc: &Document,
    common: &Common,
    op: &Value,
    params: Vec<&Value>,
    inputs: &mut Vec<Input>,
) -> Result<Option<(String, bool)>, String> {
    let mut body: Option<(String, bool)> = None;
    let mut form_fields = false;
    for p in params {
        let name = p
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a parameter has no name")?
            .to_string();
        let place = p.get("in").and_then(Value::as_str).unwrap_or_default();
        let required = p.get("required").and_then(Value::as_bool) == Some(true);
        let mut schema = param_schema(doc, p)?;
        if let Some(d) = p.get("description").and_then(Value::as_str)
            && let Some(o) = schema.as_object_mut()
        {
            o.entry("description").or_insert_with(|| json!(d));
        }
        // The API's own authentication header is set from its credential, not by the model.
        if place == "header"
            && common
                .auth
                .header()
                .is_some_and(|h| h.eq_ignore_ascii_case(&name))
        {
            continue;
        }
        let (place, to) = match place {
            "path" => ("path", To::Param(Location::Path, true)),
            "query" => ("query", To::Param(Location::Query, explode(doc, p))),
            "header" => ("header", To::Param(Location::Header, true)),
            "cookie" => ("cookie", To::Param(Location::Cookie, true)),
            "body" => {
                body = Some((json_type(doc, op), required));
                add_body(inputs, schema, required);
                continue;
            }
            "formData" => {
                if p.get("type").and_then(Value::as_str) == Some("file") {
                    return Err(format!(
                        "parameter '{name}' is a file upload, which is not supported"
                    ));
                }
                form_fields = true;
                ("body", To::Field)
            }
            other => {
                return Err(format!(
                    "parameter '{name}' is in '{other}', which is not a place"
                ));
            }
        };
        inputs.push(Input {
            place,
            name,
            schema,
            required: required || place == "path",
            to,
        });
    }
    if form_fields {
        body = Some(("application/x-www-form-urlencoded".into(), false));
    }
    Ok(body)
}

/// OpenAPI 3's `requestBody`: its inputs added to `inputs`; its media type (JSON,
/// then form, then text) and whether it is required.
fn request_body(
    doc: &Document,
    rb: &Value,
    inputs: &mut Vec<Input>,
) -> Result<(String, bool), String> {
    let rb = doc.deref(rb)?;
    let required = rb.get("required").and_then(Value::as_bool) == Some(true);
    let content = rb.get("content").and_then(Value::as_object);
    let chosen = content.and_then(|c| {
        c.iter()
            .find(|(t, _)| t.contains("json"))
            .or_else(|| {
                c.iter()
                    .find(|(t, _)| *t == "application/x-www-form-urlencoded")
            })
            .or_else(|| c.iter().find(|(t, _)| t.starts_with("text/")))
    });
    match chosen {
        Some((media, m)) => {
            let schema = match m.get("schema") {
                Some(s) => doc.schema(s)?,
                None => json!({}),
            };
            add_body(inputs, schema, required);
            Ok((media.clone(), required))
        }
        None => {
            let kinds: Vec<&String> = content.into_iter().flat_map(|c| c.keys()).collect();
            Err(format!(
                "its request body is {kinds:?}; only JSON, form and text bodies are supported"
            ))
        }
    }
}

/// The inputs under their argument names, and where each goes.
struct Settled {
    properties: Map<String, Value>,
    required: Vec<Value>,
    bound: Vec<Param>,
    fields: Vec<Field>,
    whole: Option<String>,
}

/// Settles argument names: a name used in two places gets its place as a prefix, and
/// none takes the name of an auth argument.
fn settle(inputs: Vec<Input>) -> Settled {
    let mut taken: Vec<String> = vec![
        AUTH_TOKEN.into(),
        AUTH_USERNAME.into(),
        AUTH_PASSWORD.into(),
    ];
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for i in &inputs {
        *count.entry(clean(&i.name)).or_default() += 1;
    }
    let mut out = Settled {
        properties: Map::new(),
        required: Vec::new(),
        bound: Vec::new(),
        fields: Vec::new(),
        whole: None,
    };
    for i in inputs {
        let base = clean(&i.name);
        let mut arg = if count[&base] > 1 {
            format!("{}_{base}", i.place)
        } else {
            base
        };
        while taken.contains(&arg) {
            arg.push('_');
        }
        taken.push(arg.clone());
        out.properties.insert(arg.clone(), i.schema);
        if i.required {
            out.required.push(json!(arg));
        }
        match i.to {
            To::Param(location, explode) => out.bound.push(Param {
                arg,
                name: i.name,
                location,
                explode,
            }),
            To::Field => out.fields.push(Field { arg, name: i.name }),
            To::Whole => out.whole = Some(arg),
        }
    }
    out
}

/// The summary and the description, or `METHOD /path` when there is neither.
fn description_of(op: &Value, upper: &str, path: &str) -> String {
    let description = [op.get("summary"), op.get("description")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    if description.is_empty() {
        format!("{upper} {path}")
    } else {
        description
    }
}

/// A request body's inputs: an object's properties one by one (read-only ones left
/// out), anything else as one `body` argument.
fn add_body(inputs: &mut Vec<Input>, schema: Value, required: bool) {
    let props = schema.get("properties").and_then(Value::as_object);
    let is_object = schema.get("type").is_none_or(|t| t == "object");
    match props {
        Some(props) if is_object && !props.is_empty() => {
            let needed: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, s) in props {
                if s.get("readOnly") == Some(&Value::Bool(true)) {
                    continue;
                }
                inputs.push(Input {
                    place: "body",
                    name: name.clone(),
                    schema: s.clone(),
                    required: required && needed.contains(&name.as_str()),
                    to: To::Field,
                });
            }
        }
        _ => inputs.push(Input {
            place: "body",
            name: "body".into(),
            schema,
            required,
            to: To::Whole,
        }),
    }
}

/// A parameter's schema: OpenAPI 3's `schema` (or `content`), or Swagger 2's keys on
/// the parameter itself.
fn param_schema(doc: &Document, p: &Value) -> Result<Value, super::RefError> {
    if let Some(s) = p.get("schema") {
        return doc.schema(s);
    }
    if let Some(s) = p
        .get("content")
        .and_then(Value::as_object)
        .and_then(|c| c.values().next())
        .and_then(|m| m.get("schema"))
    {
        return doc.schema(s);
    }
    if doc.version == Version::Swagger2 {
        let mut s = Map::new();
        for (k, v) in p.as_object().into_iter().flatten() {
            if !matches!(
                k.as_str(),
                "name" | "in" | "required" | "description" | "collectionFormat" | "allowEmptyValue"
            ) {
                s.insert(k.clone(), v.clone());
            }
        }
        return doc.schema(&Value::Object(s));
    }
    Ok(json!({"type": "string"}))
}

/// Whether an array in the query repeats its name (`a=1&a=2`).
fn explode(doc: &Document, p: &Value) -> bool {
    match doc.version {
        Version::Swagger2 => p.get("collectionFormat").and_then(Value::as_str) == Some("multi"),
        Version::OpenApi3 => p.get("explode").and_then(Value::as_bool).unwrap_or(
            p.get("style")
                .and_then(Value::as_str)
                .is_none_or(|s| s == "form"),
        ),
    }
}

/// Swagger 2's body media type: JSON when the operation (or the document) accepts it.
fn json_type(doc: &Document, op: &Value) -> String {
    let consumes = op
        .get("consumes")
        .or_else(|| doc.root.get("consumes"))
        .and_then(Value::as_array);
    consumes
        .and_then(|c| {
            c.iter()
                .filter_map(Value::as_str)
                .find(|t| t.contains("json"))
        })
        .unwrap_or("application/json")
        .to_string()
}
