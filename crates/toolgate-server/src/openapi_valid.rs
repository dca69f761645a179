//! The last pass over the OpenAPI document before it is served: what OpenAPI 3.1 and
//! the client generators need that the derived document leaves out. Every response gets
//! a `description` (required by the specification); free-form objects say so
//! (`additionalProperties: true`, a map in generated clients, not an empty record);
//! call arguments and tool parameters are JSON objects; and request bodies carry
//! examples a property-based tester's stateful phase can use (an agent that exists).

use serde_json::{Map, Value, json};

/// The agent every example names: `examples/agents/assistant.yaml`, which
/// `examples/serve/agents` and the tests serve.
pub const EXAMPLE_AGENT: &str = "assistant";

/// `doc` made valid OpenAPI 3.1 and typed for client generators.
pub fn finish(mut doc: Value) -> Value {
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for (method, operation) in item.iter_mut() {
                let Some(operation) = operation.as_object_mut() else {
                    continue;
                };
                bound_path_parameters(operation);
                if let Some(responses) = operation
                    .get_mut("responses")
                    .and_then(Value::as_object_mut)
                {
                    add_refusals(method, responses);
                    describe_responses(responses);
                }
            }
        }
    }
    if let Some(components) = doc.get_mut("components").and_then(Value::as_object_mut) {
        if let Some(responses) = components
            .get_mut("responses")
            .and_then(Value::as_object_mut)
        {
            describe_responses(responses);
        }
        if let Some(schemas) = components.get_mut("schemas").and_then(Value::as_object_mut) {
            type_loose_values(schemas);
            add_examples(schemas);
        }
    }
    open_free_form_objects(&mut doc);
    doc
}

/// A path parameter names a run, a conversation, a tool or an agent: 1 to 256
/// characters, no control character (what `PathId` takes; anything else is a 400).
fn bound_path_parameters(operation: &mut Map<String, Value>) {
    let Some(parameters) = operation
        .get_mut("parameters")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for parameter in parameters.iter_mut() {
        if parameter.get("in").and_then(Value::as_str) != Some("path") {
            continue;
        }
        let Some(schema) = parameter.get_mut("schema").and_then(Value::as_object_mut) else {
            continue;
        };
        if schema.get("type").and_then(Value::as_str) == Some("string")
            && !schema.contains_key("pattern")
        {
            schema.insert("minLength".into(), json!(1));
            schema.insert("maxLength".into(), json!(256));
            schema.insert(
                "pattern".into(),
                json!("^[^\\u0000-\\u001f\\u007f-\\u009f]*$"),
            );
        }
    }
}

/// The refusals every operation may answer, documented where the handler's own list
/// leaves them out: 400 (a path or query the extractors refuse) and, for state changes,
/// 415 (the server's guard wants `Content-Type: application/json` or its client header).
fn add_refusals(method: &str, responses: &mut Map<String, Value>) {
    let error = |description: &str| {
        json!({"description": description,
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}})
    };
    if !responses.contains_key("400") {
        responses.insert(
            "400".into(),
            error("Bad Request: a path or query the server does not take"),
        );
    }
    if matches!(method, "post" | "put" | "patch" | "delete") && !responses.contains_key("415") {
        responses.insert(
            "415".into(),
            error("Unsupported Media Type: a state change needs Content-Type: application/json (or the client header)"),
        );
    }
}

/// A `description` for each response without one: the status's reason phrase.
fn describe_responses(responses: &mut Map<String, Value>) {
    for (status, response) in responses.iter_mut() {
        let Some(response) = response.as_object_mut() else {
            continue;
        };
        if response.contains_key("$ref") {
            continue;
        }
        let missing = response
            .get("description")
            .and_then(Value::as_str)
            .is_none_or(|d| d.trim().is_empty());
        if missing {
            response.insert("description".into(), json!(reason(status)));
        }
    }
}

/// The reason phrase of an HTTP status as the document writes it (`200`, `4XX`, `default`).
fn reason(status: &str) -> String {
    let known = match status {
        "200" => "OK",
        "201" => "Created",
        "202" => "Accepted",
        "204" => "No Content",
        "400" => "Bad Request: the error object says what is wrong",
        "401" => "Unauthorized: a missing or wrong bearer key",
        "403" => "Forbidden",
        "404" => "Not Found",
        "405" => "Method Not Allowed",
        "409" => "Conflict: the run is not in a state that allows this",
        "410" => "Gone",
        "413" => "Payload Too Large",
        "415" => "Unsupported Media Type",
        "422" => "Unprocessable Entity",
        "429" => "Too Many Requests",
        "500" => "Internal Server Error",
        "502" => "Bad Gateway: the model failed",
        "503" => "Service Unavailable",
        "504" => "Gateway Timeout",
        "default" => "An error object",
        _ => "",
    };
    if known.is_empty() {
        format!("HTTP {status}")
    } else {
        known.to_string()
    }
}

/// Call arguments and tool parameters, derived from `serde_json::Value` (no type at
/// all: `unknown` in generated clients), typed as the JSON objects they always are.
fn type_loose_values(schemas: &mut Map<String, Value>) {
    let fields: [(&str, &str, bool); 4] = [
        ("CallRecord", "arguments", false),
        ("RequiredItem", "arguments", false),
        ("MessageCall", "arguments", true),
        ("ToolInfo", "parameters", false),
    ];
    for (schema, field, nullable) in fields {
        let Some(property) = schemas
            .get_mut(schema)
            .and_then(|s| s.get_mut("properties"))
            .and_then(|p| p.get_mut(field))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if property.contains_key("type") || property.contains_key("$ref") {
            continue;
        }
        let kind = if nullable {
            json!(["object", "null"])
        } else {
            json!("object")
        };
        property.insert("type".into(), kind);
        property.insert("additionalProperties".into(), json!(true));
    }
}

/// A conversation id as `check_conversation_id` takes it.
const CONVERSATION_ID: &str = "^[A-Za-z0-9._:@+=/-]{1,128}$";

/// Examples a client (or schemathesis's stateful phase) can send as they are.
fn add_examples(schemas: &mut Map<String, Value>) {
    if let Some(conversation) = schemas
        .get_mut("CreateRun")
        .and_then(|s| s.get_mut("properties"))
        .and_then(|p| p.get_mut("conversation_id"))
        .and_then(Value::as_object_mut)
        && !conversation.contains_key("pattern")
    {
        conversation.insert("pattern".into(), json!(CONVERSATION_ID));
    }
    let examples = [
        (
            "CreateRun",
            json!({"agent": EXAMPLE_AGENT, "input": "Work out 2+3*4."}),
        ),
        (
            "CreateResponse",
            json!({"model": format!("agent:{EXAMPLE_AGENT}"), "input": "Work out 2+3*4."}),
        ),
    ];
    for (name, example) in examples {
        let Some(schema) = schemas.get_mut(name).and_then(Value::as_object_mut) else {
            continue;
        };
        schema.insert("examples".into(), json!([example]));
        if name == "CreateRun"
            && let Some(agent) = schema
                .get_mut("properties")
                .and_then(|p| p.get_mut("agent"))
                .and_then(Value::as_object_mut)
        {
            agent.insert("examples".into(), json!([EXAMPLE_AGENT]));
        }
    }
}

/// The component every free-form object refers to.
const JSON_OBJECT: &str = "JsonObject";

/// Every free-form object (an object schema that names no properties) becomes a
/// reference to one `JsonObject` component with `additionalProperties: true`: a map in
/// generated clients (not an empty record), and one model rather than an inline one per
/// place (openapi-python-client drops inline models it names twice).
fn open_free_form_objects(doc: &mut Value) {
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        for schema in schemas.values_mut() {
            if free_form(schema).is_none() {
                lift(schema);
            } else if let Some(map) = schema.as_object_mut() {
                map.insert("additionalProperties".into(), Value::Bool(true));
            }
        }
        schemas.insert(
            JSON_OBJECT.into(),
            json!({"type": "object", "additionalProperties": true, "description": "Any JSON object."}),
        );
    }
    if let Some(paths) = doc.get_mut("paths") {
        lift(paths);
    }
}

/// Whether `schema` is a free-form object: `Some(nullable)`.
fn free_form(schema: &Value) -> Option<bool> {
    let map = schema.as_object()?;
    let nullable = match map.get("type")? {
        Value::String(t) if t == "object" => false,
        Value::Array(ts)
            if ts.len() == 2 && ts.contains(&json!("object")) && ts.contains(&json!("null")) =>
        {
            true
        }
        _ => return None,
    };
    let open = match map.get("additionalProperties") {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    };
    let plain = map.keys().all(|k| {
        matches!(
            k.as_str(),
            "type" | "additionalProperties" | "propertyNames" | "description"
        )
    });
    (open && plain).then_some(nullable)
}

/// Replaces the free-form objects inside `value` with references to `JsonObject`.
fn lift(value: &mut Value) {
    let children: Vec<&mut Value> = match value {
        Value::Object(map) => map.values_mut().collect(),
        Value::Array(items) => items.iter_mut().collect(),
        _ => return,
    };
    for child in children {
        match free_form(child) {
            Some(nullable) => {
                let reference = json!({"$ref": format!("#/components/schemas/{JSON_OBJECT}")});
                let mut new = Map::new();
                if let Some(d) = child.get("description") {
                    new.insert("description".into(), d.clone());
                }
                if nullable {
                    new.insert("anyOf".into(), json!([reference, {"type": "null"}]));
                } else {
                    new.insert("$ref".into(), reference["$ref"].clone());
                }
                *child = Value::Object(new);
            }
            None => lift(child),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn responses_are_described_and_free_form_objects_opened() {
        let doc = finish(json!({
            "openapi": "3.1.0",
            "paths": {"/x": {"get": {"responses": {
                "200": {"content": {}},
                "404": {"description": "kept"}
            }}}},
            "components": {"schemas": {
                "M": {"type": "object", "properties": {"m": {"type": "object"}}},
                "CallRecord": {"type": "object", "properties": {"arguments": {"description": "a"}}}
            }}
        }));
        assert_eq!(
            doc["paths"]["/x"]["get"]["responses"]["200"]["description"],
            "OK"
        );
        assert_eq!(
            doc["paths"]["/x"]["get"]["responses"]["404"]["description"],
            "kept"
        );
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["M"]["properties"]["m"]["$ref"],
            "#/components/schemas/JsonObject"
        );
        assert_eq!(schemas["JsonObject"]["additionalProperties"], true);
        assert!(schemas["M"].get("additionalProperties").is_none());
        assert_eq!(
            schemas["CallRecord"]["properties"]["arguments"]["$ref"],
            "#/components/schemas/JsonObject"
        );
    }
}
