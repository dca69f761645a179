//! A search provider: how a query becomes its HTTP request, and its answer our results.
//! Each provider is a file beside this one and a line in `PROVIDERS` (`mod.rs`); the
//! sending (network rule, caps, timeout) and the output are the tool's.

use reqwest::{Method, Url};
use serde::Serialize;
use serde_json::Value;

/// One result: what every provider gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub title: String,
    pub url: String,
    /// The provider's excerpt, as plain text (markup and entities removed).
    pub snippet: String,
}

/// What the tool was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub text: String,
    /// Results wanted (the tool keeps at most this many of what comes back).
    pub max_results: usize,
}

/// A request to a provider, before the tool sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub method: Method,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    /// A JSON body.
    pub body: Option<Value>,
}

/// A web search API.
pub trait Provider: Send + Sync {
    /// Its name, as `TOOLGATE_SEARCH_PROVIDER` spells it.
    fn name(&self) -> &'static str;

    /// The endpoint used when `TOOLGATE_SEARCH_URL` is unset; `None` when there is no
    /// public one (a SearXNG instance is always someone's own).
    fn default_endpoint(&self) -> Option<&'static str>;

    /// Whether it takes requests only with an API key.
    fn needs_key(&self) -> bool;

    /// The request for `query` at `endpoint`, with `key` when there is one.
    fn request(&self, endpoint: &Url, query: &Query, key: Option<&str>) -> Outgoing;

    /// The results in a successful answer; an answer of another shape is an error
    /// saying what was missing.
    fn results(&self, answer: &Value) -> Result<Vec<Hit>, String>;
}

/// The `title`, `url` and snippet (from field `snippet`) of each object in `items`;
/// an item without a URL is skipped.
pub(crate) fn hits(items: &[Value], snippet: &str) -> Vec<Hit> {
    items
        .iter()
        .filter_map(|item| {
            let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
            let url = field("url").trim();
            (!url.is_empty()).then(|| Hit {
                title: plain(field("title")),
                url: url.to_string(),
                snippet: plain(field(snippet)),
            })
        })
        .collect()
}

/// `text` without markup (`<strong>` in Brave's snippets) and with its entities
/// decoded (an HTML parser reads it), its white space collapsed.
pub(crate) fn plain(text: &str) -> String {
    if !text.contains(['<', '&']) {
        return text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let doc = dom_query::Document::from(text);
    let read = doc.select("body").text();
    read.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_lose_their_markup_and_entities() {
        assert_eq!(
            plain("The <strong>Rust</strong> &amp; its\n  book &lt;3"),
            "The Rust & its book <3"
        );
        assert_eq!(plain("a < b"), "a < b");
    }
}
