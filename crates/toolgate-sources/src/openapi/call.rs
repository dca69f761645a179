//! Calling one OpenAPI operation: the arguments placed where the binding says, the
//! API's authentication added, and the request sent by the `http` entry's sender (the
//! same network rule on every hop, the same size cap). A status of 400 or more is an
//! error result carrying the status and an excerpt of the body.

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Map, Value};

use super::binding::{
    AUTH_PASSWORD, AUTH_TOKEN, AUTH_USERNAME, Auth, Binding, BodyShape, Location,
};
use crate::tool_file::http::{self, Body, DEFAULT_MAX_RESPONSE, Request, Retry, percent_encode};
use toolgate_tool::net::AllowList;
use toolgate_tool::{Entry, Part, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Characters of a failed response's body kept in the error result.
pub const ERROR_EXCERPT: usize = 2000;

/// The tool of one operation.
pub struct OpenApiTool {
    spec: ToolSpec,
    /// The operation, read back from the spec's binding once.
    binding: Result<Binding, String>,
}

impl OpenApiTool {
    pub fn new(spec: ToolSpec) -> Self {
        let binding = match &spec.entry {
            Entry::Source(b) if b.source == "openapi" => b.decode().map_err(|e| e.to_string()),
            _ => Err("not an OpenAPI tool".into()),
        };
        Self { spec, binding }
    }

    fn binding(&self) -> Result<&Binding, ToolError> {
        self.binding
            .as_ref()
            .map_err(|e| ToolError::Execution(e.clone()))
    }
}

#[async_trait]
impl Tool for OpenApiTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let binding = self.binding()?;
        let send = |token: Option<String>| {
            let args = args.clone();
            async move {
                let mut req = request(&self.spec, binding, args)?;
                for (name, template) in &binding.headers {
                    req.headers
                        .push((name.clone(), http::expand_context(template, &ctx.run)?));
                }
                if let Some(token) = token {
                    req.headers
                        .push(("Authorization".into(), format!("Bearer {token}")));
                }
                req.files = Some(toolgate_tool::files::FileSink::of(ctx));
                http::send_for(req, ctx).await.map(excerpt_on_error)
            }
        };
        match &binding.auth {
            Auth::OAuth2 { provider } => {
                toolgate_tool::oauth::as_user(ctx, &self.spec.name, provider, |t| send(Some(t)))
                    .await
            }
            _ => send(None).await,
        }
    }

    fn user_oauth(&self) -> Option<toolgate_tool::oauth::OAuthProvider> {
        match &self.binding.as_ref().ok()?.auth {
            Auth::OAuth2 { provider } => Some((**provider).clone()),
            _ => None,
        }
    }

    fn checks_credentials(&self) -> bool {
        self.binding.as_ref().is_ok_and(|b| b.check.is_some())
    }

    /// The operation the API's file names under `validate:`, called with the
    /// credentials: an answer below 400 is valid, any other the refusal.
    async fn validate(
        &self,
        ctx: &ToolContext,
        credentials: Map<String, Value>,
    ) -> Option<Result<toolgate_tool::Verdict, ToolError>> {
        let check = self.binding.as_ref().ok()?.check.as_deref()?;
        let sent = async {
            let mut req = request(&self.spec, check, credentials)?;
            for (name, template) in &check.headers {
                req.headers
                    .push((name.clone(), http::expand_context(template, &ctx.run)?));
            }
            req.retry = Retry::default();
            http::send(req).await
        };
        Some(
            sent.await
                .map(|out| crate::tool_file::verdict_of(excerpt_on_error(out))),
        )
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The request one call makes. `args` are checked against the tool's schema, its
/// credentials included.
pub fn request(
    spec: &ToolSpec,
    b: &Binding,
    mut args: Map<String, Value>,
) -> Result<Request, ToolError> {
    let token = args.remove(AUTH_TOKEN).map(|v| text_of(&v));
    let user = args.remove(AUTH_USERNAME).map(|v| text_of(&v));
    let password = args.remove(AUTH_PASSWORD).map(|v| text_of(&v));
    let mut url = b.url.clone();
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut cookies: Vec<String> = Vec::new();
    for p in &b.params {
        let Some(v) = args.get(&p.arg) else { continue };
        match p.location {
            Location::Path => {
                url = url.replace(&format!("{{{}}}", p.name), &percent_encode(&text_of(v)))
            }
            Location::Query => match v {
                Value::Array(items) if p.explode => {
                    query.extend(items.iter().map(|i| (p.name.clone(), text_of(i))))
                }
                Value::Array(items) => query.push((
                    p.name.clone(),
                    items.iter().map(text_of).collect::<Vec<_>>().join(","),
                )),
                other => query.push((p.name.clone(), text_of(other))),
            },
            Location::Header => headers.push((p.name.clone(), text_of(v))),
            Location::Cookie => cookies.push(format!("{}={}", p.name, text_of(v))),
        }
    }
    if let Some(missing) = b
        .params
        .iter()
        .find(|p| p.location == Location::Path && url.contains(&format!("{{{}}}", p.name)))
    {
        return Err(ToolError::Execution(format!(
            "'{}' needs the path parameter '{}'",
            spec.name, missing.arg
        )));
    }
    match &b.auth {
        Auth::None => {}
        Auth::ApiKey { location, name } => {
            let key = token.ok_or_else(|| missing_credential(spec, "the API key"))?;
            match location {
                Location::Header => headers.push((name.clone(), key)),
                Location::Cookie => cookies.push(format!("{name}={key}")),
                Location::Query | Location::Path => query.push((name.clone(), key)),
            }
        }
        Auth::Bearer => {
            let token = token.ok_or_else(|| missing_credential(spec, "the bearer token"))?;
            headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        // The user's token is added by the tool's call, per user.
        Auth::OAuth2 { .. } => {}
        Auth::Basic { username } => {
            let user = user
                .or_else(|| username.clone())
                .ok_or_else(|| missing_credential(spec, "the user name"))?;
            let password = password.unwrap_or_default();
            let pair =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            headers.push(("Authorization".into(), format!("Basic {pair}")));
        }
    }
    if !cookies.is_empty() {
        headers.push(("Cookie".into(), cookies.join("; ")));
    }
    let mut url = http::parse_url(&url)?;
    if !query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for (k, v) in &query {
            pairs.append_pair(k, v);
        }
    }
    let body = match &b.body {
        None => None,
        Some(body) => {
            let value = match &body.shape {
                BodyShape::Whole(arg) => args.get(arg).cloned(),
                BodyShape::Fields(fields) => {
                    let obj: Map<String, Value> = fields
                        .iter()
                        .filter_map(|f| args.get(&f.arg).map(|v| (f.name.clone(), v.clone())))
                        .collect();
                    (!obj.is_empty() || body.required).then_some(Value::Object(obj))
                }
            };
            match value {
                None => None,
                Some(v) => {
                    headers.push(("Content-Type".into(), body.content_type.clone()));
                    Some(encode_body(&body.content_type, v))
                }
            }
        }
    };
    headers.push(("Accept".into(), "application/json, */*;q=0.5".into()));
    let allow = AllowList::parse(&b.allow_hosts)
        .map_err(|e| ToolError::Execution(e.to_string()))?
        .and(AllowList::from_env().map_err(|e| ToolError::Execution(e.to_string()))?);
    Ok(Request {
        method: http::parse_method(&b.method).map_err(|e| ToolError::Execution(e.to_string()))?,
        url,
        headers,
        body,
        timeout: spec.timeout_or_default(),
        max_response: b.max_response.unwrap_or(DEFAULT_MAX_RESPONSE),
        allow,
        retry: Retry::default(),
        files: None,
    })
}

fn missing_credential(spec: &ToolSpec, what: &str) -> ToolError {
    ToolError::MissingCredential(format!(
        "tool '{}' has no value for {what} of its API",
        spec.name
    ))
}

/// A body in its media type: JSON as JSON, a form as `a=1&b=2`, anything else as text.
fn encode_body(content_type: &str, v: Value) -> Body {
    if content_type.contains("json") {
        return Body::Json(v);
    }
    if content_type == "application/x-www-form-urlencoded" {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        if let Value::Object(fields) = &v {
            for (k, v) in fields {
                form.append_pair(k, &text_of(v));
            }
        }
        return Body::Text(form.finish());
    }
    Body::Text(text_of(&v))
}

/// A failed call's output: the status line, then at most [`ERROR_EXCERPT`] characters
/// of the body.
fn excerpt_on_error(mut out: ToolOutput) -> ToolOutput {
    if !out.is_error || out.parts.len() < 2 {
        return out;
    }
    let rest: Vec<Part> = out.parts.split_off(1);
    let body = ToolOutput {
        parts: rest,
        is_error: false,
    }
    .to_text();
    let mut text: String = body.chars().take(ERROR_EXCERPT).collect();
    if text.len() < body.len() {
        text.push_str(&format!(" [... {} bytes in all]", body.len()));
    }
    out.parts.push(Part::Text { text });
    out
}
