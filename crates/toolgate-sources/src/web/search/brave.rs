//! Brave's Web Search API (`GET /res/v1/web/search?q=...&count=N`, the key in
//! `X-Subscription-Token`): results under `web.results`, snippets in `description` with
//! the query's words in `<strong>`.

use reqwest::{Method, Url};
use serde_json::Value;

use super::provider::{Hit, Outgoing, Provider, Query, hits};

/// Brave's most results per request.
const MAX_COUNT: usize = 20;

pub struct Brave;

impl Provider for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }

    fn default_endpoint(&self) -> Option<&'static str> {
        Some("https://api.search.brave.com/res/v1/web/search")
    }

    fn needs_key(&self) -> bool {
        true
    }

    fn request(&self, endpoint: &Url, query: &Query, key: Option<&str>) -> Outgoing {
        let mut url = endpoint.clone();
        url.query_pairs_mut()
            .append_pair("q", &query.text)
            .append_pair("count", &query.max_results.min(MAX_COUNT).to_string());
        let mut headers = vec![("Accept".to_string(), "application/json".to_string())];
        if let Some(key) = key {
            headers.push(("X-Subscription-Token".into(), key.to_string()));
        }
        Outgoing {
            method: Method::GET,
            url,
            headers,
            body: None,
        }
    }

    /// `{"type": "search", "query": {...}, "web": {"type": "search", "results": [{"title",
    /// "url", "description", ...}]}, ...}`; no `web` at all when nothing was found.
    fn results(&self, answer: &Value) -> Result<Vec<Hit>, String> {
        if answer.get("type").and_then(Value::as_str) != Some("search") {
            return Err("the answer is not a search response (no \"type\": \"search\")".into());
        }
        let Some(web) = answer.get("web") else {
            return Ok(Vec::new());
        };
        let results = web
            .get("results")
            .and_then(Value::as_array)
            .ok_or("the answer's `web` has no `results` list")?;
        Ok(hits(results, "description"))
    }
}
