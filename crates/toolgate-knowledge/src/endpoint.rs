//! The HTTP endpoints a knowledge base uses: an OpenAI-compatible `/embeddings` and a
//! Cohere/Jina-shaped `/rerank`, each a base URL and an optional bearer key.

use std::time::Duration;

use crate::KnowledgeError;

/// The default base URL (OpenAI's).
pub const OPENAI_BASE: &str = "https://api.openai.com/v1";

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A base URL (`https://api.openai.com/v1`) and key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Endpoint {
    pub base_url: String,
    pub api_key: Option<String>,
}

impl Endpoint {
    /// The embeddings endpoint from `OPENAI_BASE_URL` and `OPENAI_API_KEY` (as the
    /// OpenAI model provider reads them).
    pub fn embeddings_from_env() -> Endpoint {
        Endpoint {
            base_url: var("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE.to_string()),
            api_key: var("OPENAI_API_KEY"),
        }
    }

    /// The rerank endpoint from `TOOLGATE_RERANK_BASE_URL` and
    /// `TOOLGATE_RERANK_API_KEY`, else the embeddings endpoint's.
    pub fn rerank_from_env() -> Endpoint {
        let fallback = Endpoint::embeddings_from_env();
        Endpoint {
            base_url: var("TOOLGATE_RERANK_BASE_URL").unwrap_or(fallback.base_url),
            api_key: var("TOOLGATE_RERANK_API_KEY").or(fallback.api_key),
        }
    }

    /// POSTs `body` to `{base_url}/{path}` and reads the JSON answer.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, KnowledgeError> {
        let url = format!("{}/{path}", self.base_url.trim_end_matches('/'));
        let fail = |why: String| KnowledgeError::Endpoint(format!("{url}: {why}"));
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let mut req = client.post(&url).json(body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| fail(e.to_string()))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| fail(e.to_string()))?;
        if !status.is_success() {
            let short: String = text.chars().take(300).collect();
            return Err(fail(format!("HTTP {status}: {short}")));
        }
        serde_json::from_str(&text).map_err(|e| fail(format!("the answer is not JSON: {e}")))
    }
}

/// An environment variable, when set and not blank.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
