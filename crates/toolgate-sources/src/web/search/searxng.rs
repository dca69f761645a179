//! SearXNG's JSON API (`GET /search?q=...&format=json`): a metasearch engine someone runs
//! themselves, so it has no default endpoint and, as a rule, no key (one given goes as a
//! bearer token, for an instance behind a proxy that asks for one). The JSON format must
//! be enabled in the instance's `settings.yml` (`search.formats`), or it answers 403.

use reqwest::{Method, Url};
use serde_json::Value;

use super::provider::{Hit, Outgoing, Provider, Query, hits};

pub struct SearXng;

impl Provider for SearXng {
    fn name(&self) -> &'static str {
        "searxng"
    }

    fn default_endpoint(&self) -> Option<&'static str> {
        None
    }

    fn needs_key(&self) -> bool {
        false
    }

    /// `endpoint` is the instance (`https://searx.example/`) or its search page
    /// (`.../search`).
    fn request(&self, endpoint: &Url, query: &Query, key: Option<&str>) -> Outgoing {
        let mut url = endpoint.clone();
        if !url.path().trim_end_matches('/').ends_with("/search") {
            let path = format!("{}/search", url.path().trim_end_matches('/'));
            url.set_path(&path);
        }
        url.query_pairs_mut()
            .append_pair("q", &query.text)
            .append_pair("format", "json");
        let mut headers = vec![("Accept".to_string(), "application/json".to_string())];
        if let Some(key) = key {
            headers.push(("Authorization".into(), format!("Bearer {key}")));
        }
        Outgoing {
            method: Method::GET,
            url,
            headers,
            body: None,
        }
    }

    /// `{"query", "number_of_results", "results": [{"url", "title", "content", "engine",
    /// ...}], "answers", "suggestions", ...}`.
    fn results(&self, answer: &Value) -> Result<Vec<Hit>, String> {
        let results = answer
            .get("results")
            .and_then(Value::as_array)
            .ok_or("the answer has no `results` list")?;
        Ok(hits(results, "content"))
    }
}
