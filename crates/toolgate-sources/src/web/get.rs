//! One request of the web tools, through the HTTP tools' sender (the network rule on
//! every hop, addresses pinned, no proxy, redirects followed and re-checked), its body
//! read up to a cap and no further, the whole exchange within a time limit.

use std::time::Duration;

use reqwest::{StatusCode, Url};

use crate::tool_file::http::{self, Request};
use toolgate_tool::ToolError;
use toolgate_tool::net::{Resolve, SystemResolver};

/// A response, read.
pub(crate) struct Fetched {
    /// The URL it came from (after redirects).
    pub url: Url,
    pub status: StatusCode,
    /// `Content-Type`, lower case, without parameters (`text/html`).
    pub media_type: Option<String>,
    /// The `charset` parameter of `Content-Type`, lower case.
    pub charset: Option<String>,
    /// At most the request's `max_response` bytes.
    pub body: Vec<u8>,
    /// The server had more than `body`: the rest was not read.
    pub cut: bool,
}

/// Sends `req` (its `timeout` bounds everything: redirects, the body) and reads the
/// body up to `req.max_response` bytes.
pub(crate) async fn fetch(req: &Request) -> Result<Fetched, ToolError> {
    fetch_with(req, &SystemResolver).await
}

/// [`fetch`], with host names looked up by `resolver`.
pub(crate) async fn fetch_with(
    req: &Request,
    resolver: &dyn Resolve,
) -> Result<Fetched, ToolError> {
    let timeout = req.timeout;
    tokio::time::timeout(timeout, exchange(req, resolver))
        .await
        .unwrap_or(Err(ToolError::Timeout(timeout)))
}

async fn exchange(req: &Request, resolver: &dyn Resolve) -> Result<Fetched, ToolError> {
    let (mut resp, url) = http::follow(req, resolver)
        .await
        .map_err(http::Failure::into_error)?;
    let status = resp.status();
    let (media_type, charset) = content_type(&resp);
    let mut body = Vec::new();
    let mut cut = false;
    let fail = |e: reqwest::Error| ToolError::Execution(format!("reading {url} failed: {e}"));
    while let Some(chunk) = resp.chunk().await.map_err(fail)? {
        let room = req.max_response.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        url,
        status,
        media_type,
        charset,
        body,
        cut,
    })
}

/// The media type and charset of a response's `Content-Type`.
fn content_type(resp: &reqwest::Response) -> (Option<String>, Option<String>) {
    let Some(value) = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return (None, None);
    };
    let mut parts = value.split(';');
    let media = parts
        .next()
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty());
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_ascii_lowercase())
    });
    (media, charset)
}

/// A GET of `url` with `accept`, for the web tools.
pub(crate) fn get(
    url: Url,
    accept: &str,
    allow: toolgate_tool::net::AllowList,
    max_response: usize,
    timeout: Duration,
) -> Request {
    Request {
        method: reqwest::Method::GET,
        url,
        headers: vec![("Accept".into(), accept.into())],
        body: None,
        timeout,
        max_response,
        allow,
        retry: http::Retry::default(),
        files: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::net::SocketAddr;

    use async_trait::async_trait;
    use toolgate_tool::net::AllowList;

    use super::*;

    /// Every name resolves to one private address.
    struct Intranet;

    #[async_trait]
    impl Resolve for Intranet {
        async fn lookup(&self, _host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
            Ok(vec![SocketAddr::from(([10, 1, 2, 3], port))])
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_inside_is_refused_before_connecting() {
        let url = Url::parse("https://docs.example/guide").unwrap();
        let req = get(
            url,
            "*/*",
            AllowList::default(),
            1024,
            Duration::from_secs(5),
        );
        let Err(err) = fetch_with(&req, &Intranet).await else {
            panic!("fetched");
        };
        assert!(
            matches!(&err, ToolError::BlockedAddress { address, .. } if address == "10.1.2.3"),
            "{err}"
        );
    }
}
