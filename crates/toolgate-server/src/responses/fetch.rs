//! Fetching an attachment behind an `https` URL (`input_image`, `input_file`): under
//! the same network rule as HTTP tools (no loopback, private or metadata addresses
//! unless `TOOLGATE_HTTP_ALLOW` opens them), the host pinned to the addresses that
//! passed, no redirects, a size cap and a timeout.

use std::sync::Arc;
use std::time::Duration;

use toolgate_tool::net::{self, AllowList, SystemResolver};

/// How long a fetch may take, whole.
const TIMEOUT: Duration = Duration::from_secs(20);

/// The body at `url`, at most `cap` bytes; the error is a sentence for the client.
pub async fn get(url: &str, cap: usize) -> Result<Vec<u8>, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("'{url}' is not a URL: {e}"))?;
    if parsed.scheme() != "https" {
        return Err(format!("'{url}' is not an https URL"));
    }
    let allow = AllowList::from_env()?;
    let addrs = net::check(&parsed, &allow, &SystemResolver)
        .await
        .map_err(|e| e.to_string())?;
    let mut builder = reqwest::Client::builder()
        .user_agent("toolgate")
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(TIMEOUT);
    if let Some(url::Host::Domain(name)) = parsed.host() {
        builder = builder.dns_resolver(Arc::new(net::Pinned::new(name, addrs)));
    }
    let client = builder
        .build()
        .map_err(|e| format!("the HTTP client could not start: {e}"))?;
    let mut resp = client
        .get(parsed)
        .send()
        .await
        .map_err(|e| format!("GET {url} failed: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("GET {url} answered {}", resp.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("GET {url} failed while reading: {e}"))?
    {
        if body.len() + chunk.len() > cap {
            return Err(format!("{url} is larger than {cap} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
