//! `reference/http-api.md`: the routes of `toolgate serve`, read from the server's
//! OpenAPI document (the one `GET /openapi.json` serves).

use serde_json::{Map, Value};

use super::schema_md::{cell, definitions, type_of};

/// The page: each operation (method, path, what it does, its parameters, body and
/// answers), then the schemas they refer to.
pub fn page(doc: &Value) -> String {
    let mut out = String::from(
        "# HTTP API\n\n\
         The routes `toolgate serve` answers, from its OpenAPI document: a running server \
         serves the same document at `GET /openapi.json`. Authentication, roles and tenants \
         are described in the how-to guides.\n\n",
    );
    if let Some(d) = doc.pointer("/info/description").and_then(Value::as_str) {
        out.push_str(&format!("{}\n\n", d.trim()));
    }
    out.push_str("## Operations\n\n");
    let empty = Map::new();
    let paths = doc
        .get("paths")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap_or(&empty) {
            if op.is_object() && method != "parameters" {
                operation(&method.to_uppercase(), path, op, &mut out);
            }
        }
    }
    if let Some(schemas) = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
    {
        out.push_str("## Schemas\n\n");
        out.push_str(&definitions(schemas, "###"));
    }
    out
}

/// One operation's section.
fn operation(method: &str, path: &str, op: &Value, out: &mut String) {
    out.push_str(&format!("### `{method} {path}`\n\n"));
    for key in ["summary", "description"] {
        if let Some(t) = op.get(key).and_then(Value::as_str) {
            out.push_str(&format!("{}\n\n", t.trim()));
        }
    }
    if let Some(params) = op.get("parameters").and_then(Value::as_array)
        && !params.is_empty()
    {
        out.push_str("| Parameter | In | Type | Required | Description |\n|---|---|---|---|---|\n");
        for p in params {
            let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default();
            let required = if p.get("required") == Some(&Value::Bool(true)) {
                "yes"
            } else {
                ""
            };
            out.push_str(&format!(
                "| `{}` | {} | {} | {required} | {} |\n",
                text("name"),
                text("in"),
                cell(&p.get("schema").map(type_of).unwrap_or_default()),
                cell(text("description"))
            ));
        }
        out.push('\n');
    }
    if let Some(content) = op
        .pointer("/requestBody/content")
        .and_then(Value::as_object)
    {
        for (media, body) in content {
            let t = body.get("schema").map(type_of).unwrap_or_default();
            out.push_str(&format!("Request body (`{media}`): {t}\n\n"));
        }
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        out.push_str("| Status | Description | Body |\n|---|---|---|\n");
        for (status, r) in responses {
            let body = r
                .get("content")
                .and_then(Value::as_object)
                .map(|c| {
                    c.iter()
                        .map(|(m, b)| {
                            let t = b.get("schema").map(type_of).unwrap_or_default();
                            format!("`{m}` {t}")
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            let d = r
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            out.push_str(&format!("| {status} | {} | {} |\n", cell(d), cell(&body)));
        }
        out.push('\n');
    }
}
