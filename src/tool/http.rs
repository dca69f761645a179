//! HTTP for tools: the declarative `http` entry type (URL, query and body templates
//! filled from the arguments, `${ENV}` credentials in headers) and the request sender
//! it shares with the `http_request` built-in (timeout, response size cap).

use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Method;
use serde_json::{Map, Value};

use super::output::{Part, ToolError, ToolOutput};
use super::runnable::{Tool, ToolContext};
use super::spec::{Entry, ToolSpec};

/// Response bytes kept when a tool does not say.
pub const DEFAULT_MAX_RESPONSE: usize = 1024 * 1024;

/// One client for every HTTP tool (connection reuse); `None` if TLS cannot start.
static CLIENT: LazyLock<Option<reqwest::Client>> = LazyLock::new(|| {
    reqwest::Client::builder()
        .user_agent("toolgate")
        .build()
        .ok()
});

/// A request to send.
pub struct Request {
    pub method: Method,
    pub url: reqwest::Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Body>,
    pub timeout: Duration,
    pub max_response: usize,
}

pub enum Body {
    Json(Value),
    Text(String),
}

/// Sends `req` and turns the response into an output: JSON as a JSON part, other
/// bodies as text; a status of 400 or more is an error result that still carries the
/// body (the model can read the API's complaint).
pub async fn send(req: Request) -> Result<ToolOutput, ToolError> {
    let client = CLIENT
        .as_ref()
        .ok_or_else(|| ToolError::Execution("the HTTP client could not start (TLS)".into()))?;
    let url = req.url.to_string();
    let mut builder = client
        .request(req.method.clone(), req.url)
        .timeout(req.timeout);
    for (k, v) in &req.headers {
        builder = builder.header(k, v);
    }
    builder = match req.body {
        Some(Body::Json(v)) => builder.json(&v),
        Some(Body::Text(t)) => builder.body(t),
        None => builder,
    };
    let fail = |e: reqwest::Error| {
        if e.is_timeout() {
            ToolError::Timeout(req.timeout)
        } else {
            ToolError::Execution(format!("{} {url} failed: {e}", req.method))
        }
    };
    let mut resp = builder.send().await.map_err(fail)?;
    let status = resp.status();
    let json_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.contains("json"));
    let mut body = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = resp.chunk().await.map_err(fail)? {
        total += chunk.len();
        let room = req.max_response.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    let truncated = total > body.len();
    let mut out = ToolOutput::default();
    if !status.is_success() {
        out.is_error = true;
        out.parts.push(Part::Text {
            text: format!("HTTP {status} from {} {url}", req.method),
        });
    }
    let parsed = (json_type && !truncated)
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten();
    match parsed {
        Some(json) => out.parts.push(Part::Json { json }),
        None => {
            let mut text = String::from_utf8_lossy(&body).into_owned();
            if truncated {
                text.push_str(&format!(
                    "\n[response truncated: {} of {total} bytes shown]",
                    body.len()
                ));
            }
            out.parts.push(Part::Text { text });
        }
    }
    Ok(out)
}

/// Parses and checks an `http` or `https` URL.
pub fn parse_url(url: &str) -> Result<reqwest::Url, ToolError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| ToolError::Execution(format!("'{url}' is not a valid URL: {e}")))?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(ToolError::Execution(format!(
            "only http and https URLs are allowed, not {other}:"
        ))),
    }
}

pub fn parse_method(method: &str) -> Result<Method, String> {
    Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|_| format!("'{method}' is not an HTTP method"))
}

/// Replaces `${VAR}` with the environment variable.
pub fn expand_env(template: &str) -> Result<String, ToolError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        let value = std::env::var(name).map_err(|_| {
            ToolError::Execution(format!("the environment variable {name} is not set"))
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The parameters a `{name}` template refers to.
fn placeholders(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            names.push(name);
        }
        rest = &after[end + 1..];
    }
    names
}

fn arg_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Fills `{name}` from `args`; `encode` percent-encodes values (for URL paths).
/// `None` when a referenced parameter is absent.
fn fill(template: &str, args: &Map<String, Value>, encode: bool) -> Option<String> {
    let mut out = template.to_string();
    for name in placeholders(template) {
        let value = arg_text(args.get(name)?);
        let value = if encode {
            percent_encode(&value)
        } else {
            value
        };
        out = out.replace(&format!("{{{name}}}"), &value);
    }
    Some(out)
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Checks an `http` entry when its tool file is loaded.
pub fn check_entry(entry: &Entry) -> Result<(), String> {
    let Entry::Http {
        url, method, body, ..
    } = entry
    else {
        return Ok(());
    };
    parse_method(method)?;
    if !(url.starts_with("http://") || url.starts_with("https://") || url.starts_with("${")) {
        return Err(format!(
            "entry url '{url}' must start with http:// or https://"
        ));
    }
    match body {
        None | Some(Value::Object(_)) => Ok(()),
        Some(Value::String(s)) if s == "json" => Ok(()),
        Some(_) => Err("entry body must be \"json\" or a map of field templates".into()),
    }
}

/// A tool defined by an `http` entry.
pub struct HttpTool {
    spec: ToolSpec,
}

impl HttpTool {
    pub fn new(spec: ToolSpec) -> Self {
        Self { spec }
    }

    /// The request a call makes.
    pub fn request(&self, args: &Map<String, Value>) -> Result<Request, ToolError> {
        let Entry::Http {
            url,
            method,
            query,
            headers,
            body,
            max_response,
        } = &self.spec.entry
        else {
            return Err(ToolError::Execution("not an http tool".into()));
        };
        let mut used: Vec<&str> = placeholders(url);
        let url = fill(&expand_env(url)?, args, true).ok_or_else(|| {
            ToolError::Execution(format!(
                "the URL of '{}' needs parameters that were not given",
                self.spec.name
            ))
        })?;
        let mut url = parse_url(&url)?;
        {
            let mut pairs = url.query_pairs_mut();
            for (key, template) in query {
                used.extend(placeholders(template));
                if let Some(value) = fill(template, args, false) {
                    pairs.append_pair(key, &value);
                }
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        let body = match body {
            None => None,
            Some(Value::String(s)) if s == "json" => {
                let rest: Map<String, Value> = args
                    .iter()
                    .filter(|(k, _)| !used.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Some(Body::Json(Value::Object(rest)))
            }
            Some(Value::Object(fields)) => {
                let mut out = Map::new();
                for (field, template) in fields {
                    let value = match template {
                        // A template that is exactly `{name}` keeps the argument's type.
                        Value::String(t)
                            if placeholders(t).len() == 1
                                && t.starts_with('{')
                                && t.ends_with('}') =>
                        {
                            args.get(&t[1..t.len() - 1]).cloned()
                        }
                        Value::String(t) => fill(t, args, false).map(Value::String),
                        other => Some(other.clone()),
                    };
                    if let Some(v) = value {
                        out.insert(field.clone(), v);
                    }
                }
                Some(Body::Json(Value::Object(out)))
            }
            Some(_) => None,
        };
        let headers = headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand_env(v)?)))
            .collect::<Result<Vec<_>, ToolError>>()?;
        Ok(Request {
            method: parse_method(method).map_err(ToolError::Execution)?,
            url,
            headers,
            body,
            timeout: self.spec.timeout_or_default(),
            max_response: max_response.unwrap_or(DEFAULT_MAX_RESPONSE),
        })
    }
}

#[async_trait]
impl Tool for HttpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        send(self.request(&args)?).await
    }
}

/// Headers given as a JSON object by a model (`http_request`).
pub fn headers_from(args: &Map<String, Value>) -> Vec<(String, String)> {
    args.get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), arg_text(v)))
                .collect::<BTreeMap<_, _>>()
        })
        .unwrap_or_default()
        .into_iter()
        .collect()
}
