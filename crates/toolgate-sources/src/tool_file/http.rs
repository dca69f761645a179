//! HTTP for tools: the declarative `http` entry type (URL, query and body templates,
//! filled in `templates.rs`; `${ENV}` credentials in headers) and the request sender
//! it shares with the `http_request` built-in: the network rule checked on every hop
//! (redirects are followed here), retries with backoff, a timeout for the whole call,
//! a response size cap.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Method;
use serde_json::{Map, Value};

use toolgate_tool::files::FileSink;
use toolgate_tool::net::{self, AllowList, Resolve, SystemResolver};
use toolgate_tool::retry::Noted;
use toolgate_tool::{Entry, Part, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

pub(crate) use super::templates::percent_encode;
use super::templates::{arg_text, fill, placeholders};
pub use super::templates::{expand_context, expand_env};

/// Response bytes kept when a tool does not say.
pub const DEFAULT_MAX_RESPONSE: usize = 1024 * 1024;

/// Redirects followed before a request gives up.
pub const MAX_REDIRECTS: usize = 10;

/// Seconds before the first retry when a tool does not say.
pub const DEFAULT_BACKOFF: f64 = 0.5;

/// The longest wait between two tries (a larger `Retry-After` is cut to this).
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A request to send.
pub struct Request {
    pub method: Method,
    pub url: reqwest::Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Body>,
    /// For the whole call: every redirect and retry included.
    pub timeout: Duration,
    pub max_response: usize,
    /// What may be reached although the network rule refuses it.
    pub allow: AllowList,
    pub retry: Retry,
    /// Where a binary body is saved as a file (`None`: it is described, not kept).
    pub files: Option<FileSink>,
}

#[derive(Clone)]
pub enum Body {
    Json(Value),
    Text(String),
}

/// When a failed request is tried again: after a 429, a 5xx or a failed connection,
/// up to `retries` more times, waiting `backoff`, then twice that, and so on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    pub retries: u32,
    pub backoff: Duration,
    /// POST and PATCH too (by default only idempotent methods are retried).
    pub non_idempotent: bool,
}

impl Default for Retry {
    /// No retries.
    fn default() -> Self {
        Self {
            retries: 0,
            backoff: Duration::from_secs_f64(DEFAULT_BACKOFF),
            non_idempotent: false,
        }
    }
}

impl Retry {
    fn applies_to(&self, method: &Method) -> bool {
        let idempotent = matches!(
            *method,
            Method::GET
                | Method::HEAD
                | Method::OPTIONS
                | Method::TRACE
                | Method::PUT
                | Method::DELETE
        );
        self.retries > 0 && (idempotent || self.non_idempotent)
    }

    /// The wait before try `attempt + 1` (`attempt` counts from 0).
    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        retry_after
            .unwrap_or_else(|| self.backoff.saturating_mul(1u32 << attempt.min(16)))
            .min(MAX_BACKOFF)
    }
}

/// Sends `req` and turns the response into an output: JSON as a JSON part, other
/// bodies as text; a status of 400 or more is an error result that still carries the
/// body (the model can read the API's complaint).
///
/// Every hop is checked by the network rule ([`net::check`]) before it connects, and
/// connects only to the addresses that passed; redirects are followed here, each one
/// checked the same way.
pub async fn send(req: Request) -> Result<ToolOutput, ToolError> {
    send_with(req, &SystemResolver).await
}

/// [`send`], with host names looked up by `resolver`.
pub async fn send_with(req: Request, resolver: &dyn Resolve) -> Result<ToolOutput, ToolError> {
    send_noting(req, resolver, None).await
}

/// [`send`] for a call: the last answer's status (or a connection that could not be
/// made) is noted on `ctx`, for the engine's retry policy.
pub async fn send_for(req: Request, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    send_noting(req, &SystemResolver, Some(ctx)).await
}

async fn send_noting(
    req: Request,
    resolver: &dyn Resolve,
    ctx: Option<&ToolContext>,
) -> Result<ToolOutput, ToolError> {
    let timeout = req.timeout;
    tokio::time::timeout(timeout, exchange(&req, resolver, ctx))
        .await
        .unwrap_or(Err(ToolError::Timeout(timeout)))
}

/// Tries, and tries again while the tool's retry rule says so.
async fn exchange(
    req: &Request,
    resolver: &dyn Resolve,
    ctx: Option<&ToolContext>,
) -> Result<ToolOutput, ToolError> {
    let note = |n: Noted| {
        if let Some(ctx) = ctx {
            ctx.note(n)
        }
    };
    let retry = req.retry.applies_to(&req.method);
    let mut attempt = 0;
    loop {
        let outcome = follow(req, resolver).await;
        let again = retry && attempt < req.retry.retries;
        match outcome {
            Ok((resp, _)) if again && retryable(resp.status()) => {
                let wait = req.retry.delay(attempt, retry_after(&resp));
                drop(resp);
                tokio::time::sleep(wait).await;
            }
            Err(Failure::Connect(_)) if again => {
                tokio::time::sleep(req.retry.delay(attempt, None)).await;
            }
            Ok((resp, url)) => {
                note(Noted::Status {
                    status: resp.status().as_u16(),
                    retry_after: retry_after(&resp),
                });
                return read(req, resp, &url).await;
            }
            Err(Failure::Connect(e)) => {
                note(Noted::Connect);
                return Err(e);
            }
            Err(Failure::Other(e)) => return Err(e),
        }
        attempt += 1;
    }
}

fn retryable(status: reqwest::StatusCode) -> bool {
    status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// A `Retry-After` in seconds.
fn retry_after(resp: &reqwest::Response) -> Option<Duration> {
    let v = resp.headers().get(reqwest::header::RETRY_AFTER)?;
    toolgate_tool::retry::parse_retry_after(v.to_str().ok()?)
}

/// Why one try failed: a connection that could not be made may be tried again.
pub(crate) enum Failure {
    Connect(ToolError),
    Other(ToolError),
}

impl Failure {
    /// The error, whatever the kind of failure.
    pub(crate) fn into_error(self) -> ToolError {
        match self {
            Failure::Connect(e) | Failure::Other(e) => e,
        }
    }
}

/// One try: the request and its redirects, each hop checked before it connects. The
/// final response, and the URL it came from.
pub(crate) async fn follow(
    req: &Request,
    resolver: &dyn Resolve,
) -> Result<(reqwest::Response, reqwest::Url), Failure> {
    let mut url = req.url.clone();
    let mut method = req.method.clone();
    let mut body = req.body.clone();
    let mut headers = req.headers.clone();
    for _ in 0..=MAX_REDIRECTS {
        let addrs = net::check(&url, &req.allow, resolver)
            .await
            .map_err(Failure::Other)?;
        let client = client_for(&url, addrs).map_err(Failure::Other)?;
        let mut builder = client.request(method.clone(), url.clone());
        for (k, v) in &headers {
            builder = builder.header(k, v);
        }
        // The call's trace goes on with the request (when spans are exported).
        let mut trace = reqwest::header::HeaderMap::new();
        toolgate_telemetry::propagate::inject(&mut trace);
        builder = builder.headers(trace);
        builder = match &body {
            Some(Body::Json(v)) => builder.json(v),
            Some(Body::Text(t)) => builder.body(t.clone()),
            None => builder,
        };
        let resp = builder.send().await.map_err(|e| {
            let err = ToolError::Execution(format!("{method} {url} failed: {e}"));
            if e.is_connect() {
                Failure::Connect(err)
            } else {
                Failure::Other(err)
            }
        })?;
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok());
        let (true, Some(location)) = (matches!(status, 301 | 302 | 303 | 307 | 308), location)
        else {
            return Ok((resp, url));
        };
        let next = url
            .join(location)
            .map_err(|e| {
                ToolError::Execution(format!(
                    "{url} redirected to '{location}', which is not a URL: {e}"
                ))
            })
            .and_then(|u| parse_url(u.as_str()))
            .map_err(Failure::Other)?;
        // 303, and 301/302 after a POST, continue as GET without the body (as browsers do).
        if status == 303 && method != Method::HEAD
            || matches!(status, 301 | 302) && method == Method::POST
        {
            method = Method::GET;
            body = None;
        }
        // Credentials meant for one origin are not handed to another.
        if next.origin() != url.origin() {
            headers.retain(|(k, _)| {
                matches!(
                    k.to_ascii_lowercase().as_str(),
                    "accept" | "accept-language" | "content-type" | "user-agent"
                )
            });
        }
        url = next;
    }
    Err(Failure::Other(ToolError::Execution(format!(
        "{} {} was redirected more than {MAX_REDIRECTS} times",
        req.method, req.url
    ))))
}

/// How many pinned clients are kept for reuse.
const CACHED_CLIENTS: usize = 32;

/// A client for one hop: it connects only to `addrs` (what the network rule passed
/// for `url`'s host), follows no redirect by itself and uses no proxy (a proxy would
/// connect where it likes).
///
/// A host name gets a client pinned to it and to exactly these addresses; when the
/// host resolves the same way again, that client (and its open connections) is used
/// again. URLs with an address for a host need no resolver and share one client.
fn client_for(
    url: &reqwest::Url,
    mut addrs: Vec<std::net::SocketAddr>,
) -> Result<reqwest::Client, ToolError> {
    type Pins = Vec<((String, Vec<std::net::SocketAddr>), reqwest::Client)>;
    static CLIENTS: Mutex<Pins> = Mutex::new(Vec::new());
    let name = match url.host() {
        Some(url::Host::Domain(name)) => name.to_string(),
        _ => String::new(),
    };
    if name.is_empty() {
        addrs.clear();
    }
    addrs.sort();
    let key = (name, addrs);
    // A panic while holding the lock leaves a list that is still usable.
    let mut clients = CLIENTS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(i) = clients.iter().position(|(k, _)| *k == key) {
        let entry = clients.remove(i);
        let client = entry.1.clone();
        clients.push(entry);
        return Ok(client);
    }
    let mut builder = reqwest::Client::builder()
        .user_agent("toolgate")
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    if !key.0.is_empty() {
        builder = builder.dns_resolver(Arc::new(net::Pinned::new(&key.0, key.1.clone())));
    }
    let client = builder
        .build()
        .map_err(|e| ToolError::Execution(format!("the HTTP client could not start: {e}")))?;
    if clients.len() >= CACHED_CLIENTS {
        clients.remove(0);
    }
    clients.push((key, client.clone()));
    Ok(client)
}

/// The response as a tool output, its body kept up to the tool's cap.
async fn read(
    req: &Request,
    mut resp: reqwest::Response,
    url: &reqwest::Url,
) -> Result<ToolOutput, ToolError> {
    let status = resp.status();
    let header = |name| {
        resp.headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    let resp_type = header(reqwest::header::CONTENT_TYPE);
    let name = header(reqwest::header::CONTENT_DISPOSITION)
        .and_then(|d| toolgate_tool::files::disposition_name(&d));
    let mut body = Vec::new();
    let mut total = 0usize;
    let fail =
        |e: reqwest::Error| ToolError::Execution(format!("{} {url} failed: {e}", req.method));
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
    let content_type = resp_type.unwrap_or_default();
    // An error's body is for the model to read, never kept as a file.
    let files = req.files.as_ref().filter(|_| status.is_success());
    let kept = Kept {
        files,
        max: req.max_response,
        truncated,
        total,
    };
    out.parts
        .push(body_part(&kept, &body, &content_type, name.as_deref())?);
    Ok(out)
}

/// How much of a body was read, and where a binary one may be saved.
struct Kept<'a> {
    files: Option<&'a FileSink>,
    max: usize,
    truncated: bool,
    total: usize,
}

/// A response body as a part: JSON as JSON, text as text (its truncation noted), an
/// image as an image part, anything else as a file saved in the run's workspace (when
/// the request has somewhere to save it, and the body came whole).
fn body_part(
    kept: &Kept<'_>,
    body: &[u8],
    content_type: &str,
    name: Option<&str>,
) -> Result<Part, ToolError> {
    let Kept {
        files,
        max,
        truncated,
        total,
    } = *kept;
    let json_type = content_type.contains("json");
    if json_type
        && !truncated
        && let Ok(json) = serde_json::from_slice::<Value>(body)
    {
        return Ok(Part::Json { json });
    }
    let mime = toolgate_tool::files::essence(content_type);
    let textual = toolgate_tool::files::is_textual(&mime)
        || (mime.is_empty() && std::str::from_utf8(body).is_ok());
    if !textual {
        if truncated {
            return Ok(Part::Text {
                text: format!(
                    "[a {mime} body of {total} bytes, over the tool's max_response of {max} bytes: not kept]"
                ),
            });
        }
        if let Some(files) = files {
            return files.part(body, &mime, name);
        }
        return Ok(Part::Text {
            text: format!("[a {mime} body of {total} bytes: not kept]"),
        });
    }
    let mut text = String::from_utf8_lossy(body).into_owned();
    if truncated {
        text.push_str(&format!(
            "\n[response truncated: {} of {total} bytes shown]",
            body.len()
        ));
    }
    Ok(Part::Text { text })
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

/// An HTTP method, any case.
pub fn parse_method(method: &str) -> Result<Method, MethodError> {
    Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|_| MethodError(method.to_string()))
}

/// Text that is not an HTTP method.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not an HTTP method")]
pub struct MethodError(pub String);

impl From<MethodError> for String {
    fn from(e: MethodError) -> String {
        e.to_string()
    }
}

/// Why an `http` entry is refused when its tool file is loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpEntryError {
    /// `method` is not an HTTP method.
    #[error(transparent)]
    Method(#[from] MethodError),
    /// An `allow_hosts` entry is not an address, network or host name.
    #[error("entry allow_hosts: {0}")]
    AllowHosts(toolgate_tool::net::AllowListError),
    /// More retries than [`MAX_RETRIES`].
    #[error("entry retries must be at most {MAX_RETRIES}")]
    Retries,
    /// A negative or non-finite backoff.
    #[error("entry backoff must be a number of seconds, 0 or more")]
    Backoff,
    /// An `oauth:` declaration that is incomplete.
    #[error("{0}")]
    OAuth(String),
    /// A URL that is not http(s) nor starts with a variable.
    #[error("entry url '{0}' must start with http:// or https://")]
    Url(String),
    /// A body that is neither `json` nor a map.
    #[error("entry body must be \"json\" or a map of field templates")]
    Body,
}

impl From<HttpEntryError> for String {
    fn from(e: HttpEntryError) -> String {
        e.to_string()
    }
}

/// The most retries a tool file may ask for.
pub const MAX_RETRIES: u32 = 10;

/// Checks an `http` entry when its tool file is loaded.
pub fn check_entry(entry: &Entry) -> Result<(), HttpEntryError> {
    let Entry::Http {
        url,
        method,
        body,
        allow_hosts,
        retries,
        backoff,
        validate,
        oauth,
        ..
    } = entry
    else {
        return Ok(());
    };
    if let Some(provider) = oauth {
        provider.check().map_err(HttpEntryError::OAuth)?;
    }
    parse_method(method)?;
    if let Some(check) = validate {
        parse_method(&check.method)?;
    }
    AllowList::parse(allow_hosts).map_err(HttpEntryError::AllowHosts)?;
    if *retries > MAX_RETRIES {
        return Err(HttpEntryError::Retries);
    }
    if backoff.is_some_and(|b| !(b.is_finite() && b >= 0.0)) {
        return Err(HttpEntryError::Backoff);
    }
    if !(url.starts_with("http://") || url.starts_with("https://") || url.starts_with("${")) {
        return Err(HttpEntryError::Url(url.clone()));
    }
    match body {
        None | Some(Value::Object(_)) => Ok(()),
        Some(Value::String(s)) if s == "json" => Ok(()),
        Some(_) => Err(HttpEntryError::Body),
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
    pub fn request(
        &self,
        args: &Map<String, Value>,
        context: &toolgate_tool::RunContext,
    ) -> Result<Request, ToolError> {
        let Entry::Http {
            url,
            method,
            query,
            headers,
            body,
            max_response,
            allow_hosts,
            retries,
            backoff,
            retry_non_idempotent,
            ..
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
            .map(|(k, v)| Ok((k.clone(), expand_context(v, context)?)))
            .collect::<Result<Vec<_>, ToolError>>()?;
        Ok(Request {
            method: parse_method(method).map_err(|e| ToolError::Execution(e.to_string()))?,
            url,
            headers,
            body,
            timeout: self.spec.timeout_or_default(),
            max_response: max_response.unwrap_or(DEFAULT_MAX_RESPONSE),
            allow: AllowList::parse(allow_hosts)
                .map_err(|e| ToolError::Execution(e.to_string()))?
                .and(AllowList::from_env().map_err(|e| ToolError::Execution(e.to_string()))?),
            retry: Retry {
                retries: *retries,
                backoff: Duration::from_secs_f64(backoff.unwrap_or(DEFAULT_BACKOFF)),
                non_idempotent: *retry_non_idempotent,
            },
            files: None,
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
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let Entry::Http {
            oauth: Some(provider),
            ..
        } = &self.spec.entry
        else {
            let mut req = self.request(&args, &ctx.run)?;
            req.files = Some(FileSink::of(ctx));
            return send_for(req, ctx).await;
        };
        toolgate_tool::oauth::as_user(ctx, &self.spec.name, provider, |token| {
            self.send_as(&args, ctx, token)
        })
        .await
    }

    fn checks_credentials(&self) -> bool {
        matches!(
            &self.spec.entry,
            Entry::Http {
                validate: Some(_),
                ..
            }
        )
    }

    fn user_oauth(&self) -> Option<toolgate_tool::oauth::OAuthProvider> {
        match &self.spec.entry {
            Entry::Http { oauth: Some(p), .. } => Some((**p).clone()),
            _ => None,
        }
    }

    async fn validate(
        &self,
        ctx: &ToolContext,
        credentials: Map<String, Value>,
    ) -> Option<Result<toolgate_tool::Verdict, ToolError>> {
        self.check(ctx, &credentials).await
    }
}

impl HttpTool {
    /// The call sent with the user's `token` as a bearer token.
    async fn send_as(
        &self,
        args: &Map<String, Value>,
        ctx: &ToolContext,
        token: String,
    ) -> Result<ToolOutput, ToolError> {
        let mut req = self.request(args, &ctx.run)?;
        req.headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        req.headers
            .push(("Authorization".into(), format!("Bearer {token}")));
        req.files = Some(FileSink::of(ctx));
        send_for(req, ctx).await
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
