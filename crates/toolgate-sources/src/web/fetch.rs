//! `web_fetch`: GET one URL and return it readable (see `render.rs`), under the HTTP
//! tools' network rule: public addresses only unless `TOOLGATE_HTTP_ALLOW` opens more,
//! each redirect hop checked again, host names resolved once and the request pinned to
//! the addresses that passed; at most `TOOLGATE_FETCH_MAX_BYTES` read, within the call's
//! `timeout`.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::get;
use super::render::{self, Window};
use crate::builtin::{Handled, spec as builtin_spec, text_arg};
use crate::tool_file::http::parse_url;
use toolgate_tool::net::AllowList;
use toolgate_tool::{Permission, ToolContext, ToolError, ToolSpec};

/// The environment variable with the most bytes `web_fetch` reads of one response.
pub const MAX_BYTES_ENV: &str = "TOOLGATE_FETCH_MAX_BYTES";

/// Bytes read of a response when `TOOLGATE_FETCH_MAX_BYTES` is unset: 10 MiB.
pub const DEFAULT_MAX_BYTES: usize = 10 * 1024 * 1024;

/// Characters of text returned when the call does not say.
const DEFAULT_MAX_CHARS: u64 = 20_000;

/// Seconds a fetch may take when the call does not say.
const DEFAULT_TIMEOUT: f64 = 30.0;

/// What the tool asks servers for, in its order of preference.
const ACCEPT: &str = "text/html,application/xhtml+xml,application/pdf;q=0.9,application/json;q=0.9,text/*;q=0.8,image/*;q=0.7,*/*;q=0.5";

pub fn spec() -> ToolSpec {
    let mut s = builtin_spec(
        "web_fetch",
        "Fetch a web page or document by URL. HTML comes back as Markdown (the main content, links kept), PDF as text, JSON as JSON, images as images. Long text comes in windows: max_chars characters from start.",
        Permission::Auto,
        json!({"type": "object", "properties": {
            "url": {"type": "string", "pattern": "^https?://", "description": "An http or https URL."},
            "max_chars": {"type": "integer", "minimum": 100, "maximum": 200000, "default": DEFAULT_MAX_CHARS, "description": "Characters of text returned."},
            "start": {"type": "integer", "minimum": 0, "default": 0, "description": "The first character returned (to read on where an earlier call stopped)."},
            "timeout": {"type": "number", "minimum": 1, "maximum": 120, "default": DEFAULT_TIMEOUT, "description": "Seconds."}
        }, "required": ["url"], "additionalProperties": false}),
    );
    s.read_only = true;
    s.category = Some("http".into());
    s
}

/// The handler of the tool.
pub fn web_fetch<'a>(_ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let url = parse_url(text_arg(&args, "url"))?;
        let number = |key: &str, default: u64| {
            args.get(key)
                .and_then(Value::as_u64)
                .unwrap_or(default)
                .try_into()
                .unwrap_or(usize::MAX)
        };
        let window = Window {
            start: number("start", 0),
            max_chars: number("max_chars", DEFAULT_MAX_CHARS),
        };
        let timeout = args
            .get("timeout")
            .and_then(Value::as_f64)
            .unwrap_or(DEFAULT_TIMEOUT);
        let cap = max_bytes()?;
        // Only what the operator opened: the model cannot widen its own reach.
        let allow = AllowList::from_env().map_err(|e| ToolError::Execution(e.to_string()))?;
        let req = get::get(url, ACCEPT, allow, cap, Duration::from_secs_f64(timeout));
        let page = get::fetch(&req).await?;
        render::output(page, window, cap).await
    })
}

/// The most bytes read of one response: `TOOLGATE_FETCH_MAX_BYTES`, or the default.
pub fn max_bytes() -> Result<usize, ToolError> {
    match std::env::var(MAX_BYTES_ENV) {
        Err(_) => Ok(DEFAULT_MAX_BYTES),
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                ToolError::Execution(format!(
                    "{MAX_BYTES_ENV} must be a number of bytes above 0, not '{v}'"
                ))
            }),
    }
}
