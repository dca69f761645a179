//! `web_search`: one query to the search provider the operator configured
//! (`TOOLGATE_SEARCH_PROVIDER`: SearXNG, Brave or Tavily; `TOOLGATE_SEARCH_URL` for the
//! endpoint), answered with a title, URL and snippet per result. The provider's key is a
//! credential (the stored secret `web_search.api_key` for the built-in tool, or any
//! source a tool file names): the model never sees it, and without it the call fails
//! with an error that says how to set it.

mod brave;
pub mod provider;
mod searxng;
mod tavily;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::get;
use crate::builtin::{Handled, spec as builtin_spec, text_arg};
use crate::tool_file::http::{self, Body, Request};
use provider::{Provider, Query};
use toolgate_tool::net::AllowList;
use toolgate_tool::{Credential, Part, Permission, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The environment variable naming the provider: `searxng`, `brave` or `tavily`.
pub const PROVIDER_ENV: &str = "TOOLGATE_SEARCH_PROVIDER";
/// The environment variable with the provider's endpoint (required for SearXNG).
pub const URL_ENV: &str = "TOOLGATE_SEARCH_URL";
/// The stored secret the built-in `web_search` takes its API key from.
pub const KEY_SECRET: &str = "web_search.api_key";
/// The argument the key arrives in (a credential: injected, never the model's).
pub const KEY_ARG: &str = "api_key";

/// Bytes of a provider's answer read, at most.
const MAX_ANSWER: usize = 2 * 1024 * 1024;
/// Seconds a search may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Characters of a provider's error answer shown.
const ERROR_EXCERPT: usize = 500;

/// Every provider: another is a file beside this one and a line here.
pub fn providers() -> [&'static dyn Provider; 3] {
    [&searxng::SearXng, &brave::Brave, &tavily::Tavily]
}

/// The provider `TOOLGATE_SEARCH_PROVIDER` names; `Ok(None)` when it is unset.
pub fn configured() -> Result<Option<&'static dyn Provider>, ToolError> {
    let Ok(name) = std::env::var(PROVIDER_ENV) else {
        return Ok(None);
    };
    let name = name.trim().to_ascii_lowercase();
    if name.is_empty() {
        return Ok(None);
    }
    providers()
        .into_iter()
        .find(|p| p.name() == name)
        .map(Some)
        .ok_or_else(|| {
            ToolError::Execution(format!(
                "{PROVIDER_ENV} names '{name}', which is not a search provider (there are: {})",
                names()
            ))
        })
}

fn names() -> String {
    providers().map(|p| p.name()).join(", ")
}

pub fn spec() -> ToolSpec {
    let mut s = builtin_spec(
        "web_search",
        "Search the web. Returns the title, URL and a snippet of each result.",
        Permission::Auto,
        json!({"type": "object", "properties": {
            "query": {"type": "string", "minLength": 1, "description": "What to search for."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": 10}
        }, "required": ["query"], "additionalProperties": false}),
    );
    s.read_only = true;
    s.category = Some("http".into());
    // The key of a provider that needs one, from the secrets store; none otherwise (a
    // SearXNG instance takes requests without).
    if let Ok(Some(p)) = configured()
        && p.needs_key()
    {
        s.credentials =
            BTreeMap::from([(KEY_ARG.to_string(), Credential::Secret(KEY_SECRET.into()))]);
    }
    s
}

/// The handler of the tool.
pub fn web_search<'a>(_ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let provider = configured()?.ok_or_else(|| {
            ToolError::Execution(format!(
                "web_search has no search provider: the operator sets {PROVIDER_ENV} to one of {} (and {URL_ENV} for SearXNG)",
                names()
            ))
        })?;
        let key = args
            .get(KEY_ARG)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|k| !k.is_empty());
        if provider.needs_key() && key.is_none() {
            return Err(ToolError::MissingCredential(format!(
                "web_search: the {} provider needs an API key, which is not set: store it with `toolgate secrets set {KEY_SECRET}`",
                provider.name()
            )));
        }
        let query = Query {
            text: text_arg(&args, "query").to_string(),
            max_results: args
                .get("max_results")
                .and_then(Value::as_u64)
                .unwrap_or(10)
                .try_into()
                .unwrap_or(10),
        };
        search(provider, &query, key).await
    })
}

/// Asks `provider` and turns its answer into the tool's output.
pub async fn search(
    provider: &dyn Provider,
    query: &Query,
    key: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    let endpoint = endpoint(provider)?;
    let outgoing = provider.request(&endpoint, query, key);
    // The operator chose the endpoint: its host may be reached even when it is local
    // (a SearXNG on this machine); a redirect elsewhere is checked as usual.
    let own = endpoint
        .host_str()
        .zip(endpoint.port_or_known_default())
        .map(|(h, p)| format!("{h}:{p}"));
    let allow = AllowList::from_env()
        .and_then(|a| Ok(a.and(AllowList::parse(own)?)))
        .map_err(|e| ToolError::Execution(e.to_string()))?;
    let req = Request {
        method: outgoing.method,
        url: outgoing.url,
        headers: outgoing.headers,
        body: outgoing.body.map(Body::Json),
        timeout: TIMEOUT,
        max_response: MAX_ANSWER,
        allow,
        retry: http::Retry::default(),
        files: None,
    };
    let answer = get::fetch(&req).await?;
    let name = provider.name();
    let text = String::from_utf8_lossy(&answer.body);
    if !answer.status.is_success() {
        let excerpt: String = text.chars().take(ERROR_EXCERPT).collect();
        return Err(ToolError::Execution(format!(
            "the {name} search API answered HTTP {}: {excerpt}",
            answer.status
        )));
    }
    let json: Value = serde_json::from_str(&text).map_err(|e| {
        ToolError::Execution(format!("the {name} search API answered with no JSON: {e}"))
    })?;
    let mut hits = provider
        .results(&json)
        .map_err(|e| ToolError::Execution(format!("the {name} search API's answer: {e}")))?;
    hits.truncate(query.max_results);
    Ok(ToolOutput {
        parts: vec![Part::Json {
            json: json!({"query": query.text, "provider": name, "results": hits}),
        }],
        is_error: false,
    })
}

/// `TOOLGATE_SEARCH_URL`, or the provider's public endpoint.
fn endpoint(provider: &dyn Provider) -> Result<reqwest::Url, ToolError> {
    let configured = std::env::var(URL_ENV).ok().filter(|u| !u.trim().is_empty());
    let url = match (configured, provider.default_endpoint()) {
        (Some(url), _) => url,
        (None, Some(url)) => url.to_string(),
        (None, None) => {
            return Err(ToolError::Execution(format!(
                "web_search: the {} provider has no public endpoint: the operator sets {URL_ENV} to the instance's URL",
                provider.name()
            )));
        }
    };
    http::parse_url(url.trim()).map_err(|e| ToolError::Execution(format!("{URL_ENV}: {e}")))
}
