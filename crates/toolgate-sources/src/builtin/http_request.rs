//! `http_request`: one HTTP request chosen by the model (confirm by default), under
//! the network rule: public addresses only, unless `TOOLGATE_HTTP_ALLOW` opens more.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{Handled, spec as builtin_spec, text_arg};
use crate::tool_file::http::{
    Body, DEFAULT_MAX_RESPONSE, Request, Retry, headers_from, parse_method, parse_url, send,
};
use toolgate_tool::net::AllowList;
use toolgate_tool::{Permission, ToolContext, ToolError, ToolSpec};

pub fn spec() -> ToolSpec {
    builtin_spec(
        "http_request",
        "Send an HTTP request and return the response body.",
        Permission::Confirm,
        json!({"type": "object", "properties": {
            "url": {"type": "string", "pattern": "^https?://", "description": "An http or https URL."},
            "method": {"type": "string", "enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"], "default": "GET"},
            "headers": {"type": "object", "description": "Header name -> value."},
            "body": {"type": ["string", "object", "array", "null"], "description": "Text, or JSON to send as application/json."},
            "timeout": {"type": "number", "minimum": 1, "maximum": 120, "default": 30}
        }, "required": ["url"], "additionalProperties": false}),
    )
}

/// The handler of the tool.
pub fn http_request<'a>(ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let body = match args.get("body") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(Body::Text(s.clone())),
            Some(v) => Some(Body::Json(v.clone())),
        };
        let timeout = args.get("timeout").and_then(Value::as_f64).unwrap_or(30.0);
        send(Request {
            method: parse_method(text_arg(&args, "method"))
                .map_err(|e| ToolError::Execution(e.to_string()))?,
            url: parse_url(text_arg(&args, "url"))?,
            headers: headers_from(&args),
            body,
            timeout: Duration::from_secs_f64(timeout),
            max_response: DEFAULT_MAX_RESPONSE,
            // Only what the operator opened: the model cannot widen its own reach.
            allow: AllowList::from_env().map_err(|e| ToolError::Execution(e.to_string()))?,
            retry: Retry::default(),
            files: Some(toolgate_tool::files::FileSink::of(ctx)),
        })
        .await
    })
}
