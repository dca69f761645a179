//! Tavily's search API (`POST /search` with a JSON body, the key as a bearer token):
//! results under `results`, each with `title`, `url`, `content` (the snippet) and a
//! relevance `score`.

use reqwest::{Method, Url};
use serde_json::{Value, json};

use super::provider::{Hit, Outgoing, Provider, Query, hits};

/// Tavily's most results per request.
const MAX_RESULTS: usize = 20;

pub struct Tavily;

impl Provider for Tavily {
    fn name(&self) -> &'static str {
        "tavily"
    }

    fn default_endpoint(&self) -> Option<&'static str> {
        Some("https://api.tavily.com/search")
    }

    fn needs_key(&self) -> bool {
        true
    }

    fn request(&self, endpoint: &Url, query: &Query, key: Option<&str>) -> Outgoing {
        let mut headers = vec![("Accept".to_string(), "application/json".to_string())];
        if let Some(key) = key {
            headers.push(("Authorization".into(), format!("Bearer {key}")));
        }
        Outgoing {
            method: Method::POST,
            url: endpoint.clone(),
            headers,
            body: Some(json!({
                "query": query.text,
                "max_results": query.max_results.min(MAX_RESULTS),
                "search_depth": "basic",
            })),
        }
    }

    /// `{"query", "answer", "images", "results": [{"title", "url", "content", "score",
    /// "raw_content"}], "response_time", ...}`.
    fn results(&self, answer: &Value) -> Result<Vec<Hit>, String> {
        let results = answer
            .get("results")
            .and_then(Value::as_array)
            .ok_or("the answer has no `results` list")?;
        Ok(hits(results, "content"))
    }
}
