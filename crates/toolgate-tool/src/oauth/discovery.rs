//! A provider's endpoints: as declared, or read from its authorization server's
//! metadata (RFC 8414 `/.well-known/oauth-authorization-server`, then OpenID Connect's
//! `openid-configuration`), the server found from the issuer or, for a protected
//! resource, from the resource's own metadata (RFC 9728). Discovered endpoints are
//! kept for five minutes in the process.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{OAuthError, OAuthProvider, client};

/// How long discovered endpoints are used before they are read again.
const KEPT: Duration = Duration::from_secs(300);

/// Where the user consents, where codes are exchanged and clients registered, and
/// what the resource asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    pub authorize: String,
    pub token: String,
    /// The dynamic client registration endpoint (RFC 7591), when the server has one.
    pub registration: Option<String>,
    /// The token revocation endpoint (RFC 7009), when the server has one.
    pub revocation: Option<String>,
    /// The scopes the protected resource supports (RFC 9728), asked for when the
    /// provider names none.
    pub scopes: Vec<String>,
    /// The `resource` parameter (RFC 8707) of authorization and token requests.
    pub resource: Option<String>,
}

#[derive(Deserialize)]
struct ServerMetadata {
    #[serde(default)]
    issuer: Option<String>,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    revocation_endpoint: Option<String>,
}

#[derive(Deserialize)]
struct ResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

/// Discovered endpoints by provider, with when they were read.
static FOUND: LazyLock<Mutex<HashMap<String, (Instant, Endpoints)>>> =
    LazyLock::new(Default::default);

impl Endpoints {
    /// The endpoints of `provider`: its own, or discovered from its issuer or resource.
    pub async fn of(provider: &OAuthProvider) -> Result<Endpoints, OAuthError> {
        if let (Some(authorize), Some(token)) = (&provider.authorize_url, &provider.token_url) {
            return Ok(Endpoints {
                authorize: authorize.clone(),
                token: token.clone(),
                registration: None,
                revocation: provider.revoke_url.clone(),
                scopes: Vec::new(),
                resource: provider.resource.clone(),
            });
        }
        let key = serde_json::to_string(provider).unwrap_or_default();
        if let Some(kept) = FOUND.lock().ok().and_then(|f| {
            f.get(&key)
                .filter(|(at, _)| at.elapsed() < KEPT)
                .map(|(_, e)| e.clone())
        }) {
            return Ok(kept);
        }
        let found = discover(provider).await?;
        if let Ok(mut f) = FOUND.lock() {
            f.insert(key, (Instant::now(), found.clone()));
        }
        Ok(found)
    }
}

async fn discover(provider: &OAuthProvider) -> Result<Endpoints, OAuthError> {
    let (issuer, scopes, resource) = match (&provider.issuer, &provider.resource) {
        (Some(issuer), _) => (issuer.clone(), Vec::new(), provider.resource.clone()),
        (None, Some(resource)) => {
            let found = resource_metadata(resource).await?;
            let issuer = found.authorization_servers.first().cloned().ok_or_else(|| {
                OAuthError::Declaration(format!(
                    "the metadata of the protected resource {resource} names no authorization server"
                ))
            })?;
            (issuer, found.scopes_supported, Some(found.resource))
        }
        (None, None) => {
            return Err(OAuthError::Declaration(format!(
                "oauth '{}' has neither both endpoints nor an issuer",
                provider.name
            )));
        }
    };
    let m = server_metadata(&issuer).await?;
    Ok(Endpoints {
        authorize: provider
            .authorize_url
            .clone()
            .unwrap_or(m.authorization_endpoint),
        token: provider.token_url.clone().unwrap_or(m.token_endpoint),
        registration: m.registration_endpoint,
        revocation: provider.revoke_url.clone().or(m.revocation_endpoint),
        scopes,
        resource,
    })
}

/// The well-known URLs of `issuer`'s metadata, in the order RFC 8414 §3.1 and OpenID
/// Connect Discovery give them: the suffix inserted before the issuer's path, then
/// appended to it.
fn server_metadata_urls(issuer: &str) -> Vec<String> {
    let base = issuer.trim_end_matches('/');
    let Ok(url) = url::Url::parse(base) else {
        return vec![format!("{base}/.well-known/oauth-authorization-server")];
    };
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut urls = vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{base}/.well-known/openid-configuration"),
    ];
    urls.dedup();
    urls
}

async fn server_metadata(issuer: &str) -> Result<ServerMetadata, OAuthError> {
    let mut tried = Vec::new();
    for url in server_metadata_urls(issuer) {
        match fetch::<ServerMetadata>(&url).await {
            Ok(m) => {
                let said = m.issuer.as_deref().map(|i| i.trim_end_matches('/'));
                if said.is_some_and(|said| said != issuer.trim_end_matches('/')) {
                    return Err(OAuthError::Declaration(format!(
                        "the metadata at {url} is of issuer {}, not {issuer}",
                        said.unwrap_or_default()
                    )));
                }
                return Ok(m);
            }
            Err(why) => tried.push(format!("{url}: {why}")),
        }
    }
    Err(OAuthError::Unreachable(format!(
        "the metadata of issuer {issuer} could not be read ({})",
        tried.join("; ")
    )))
}

/// The metadata of the protected resource at `resource` (RFC 9728): where its 401
/// challenge says (`resource_metadata`), else its well-known URL (the resource's path
/// appended, then the root). It must be the metadata of this resource.
async fn resource_metadata(resource: &str) -> Result<ResourceMetadata, OAuthError> {
    let url = url::Url::parse(resource)
        .map_err(|e| OAuthError::Declaration(format!("the resource {resource}: {e}")))?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if let Some(said) = challenged(resource).await {
        urls.push(said);
    }
    urls.push(format!(
        "{origin}/.well-known/oauth-protected-resource{path}"
    ));
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls.dedup();
    let mut tried = Vec::new();
    for at in urls {
        match fetch::<ResourceMetadata>(&at).await {
            Ok(m) => {
                let of = m.resource.trim_end_matches('/');
                if !resource.trim_end_matches('/').starts_with(of) || of.is_empty() {
                    return Err(OAuthError::Declaration(format!(
                        "the protected resource metadata at {at} is of {}, not {resource}",
                        m.resource
                    )));
                }
                return Ok(m);
            }
            Err(why) => tried.push(format!("{at}: {why}")),
        }
    }
    Err(OAuthError::Unreachable(format!(
        "the protected resource metadata of {resource} could not be read ({})",
        tried.join("; ")
    )))
}

/// The `resource_metadata` URL of the challenge `resource` answers a request without
/// a token with (401 and `WWW-Authenticate: Bearer resource_metadata="..."`).
async fn challenged(resource: &str) -> Option<String> {
    let answer = client()
        .ok()?
        .get(resource)
        .header("Accept", "application/json, text/event-stream")
        .send()
        .await
        .ok()?;
    if answer.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    let header = answer
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()?;
    parameter(header, "resource_metadata")
}

/// A parameter of a `WWW-Authenticate` challenge (RFC 9110 §11.2), quoted or not.
pub fn parameter(header: &str, name: &str) -> Option<String> {
    let mut rest = header;
    while let Some(at) = rest.find(name) {
        let before = rest[..at].chars().last();
        let after = rest[at + name.len()..].trim_start();
        rest = &rest[at + name.len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let Some(value) = after.strip_prefix('=') else {
            continue;
        };
        let value = value.trim_start();
        return Some(match value.strip_prefix('"') {
            Some(quoted) => quoted.split('"').next().unwrap_or_default().to_string(),
            None => value
                .split([',', ' '])
                .next()
                .unwrap_or_default()
                .to_string(),
        });
    }
    None
}

async fn fetch<T: serde::de::DeserializeOwned>(url: &str) -> Result<T, String> {
    let response = client()
        .map_err(|e| e.to_string())?
        .get(url)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| format!("no answer ({})", e.without_url()))?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status().as_u16()));
    }
    response
        .json::<T>()
        .await
        .map_err(|e| format!("not the metadata expected ({})", e.without_url()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_read_quoted_or_not() {
        let h = r#"Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            parameter(h, "resource_metadata").as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            parameter("Bearer realm=x, scope=a", "scope").as_deref(),
            Some("a")
        );
        assert_eq!(parameter("Bearer my_scope=\"a\"", "scope"), None);
    }

    #[test]
    fn an_issuer_with_a_path_has_its_metadata_under_the_root() {
        assert_eq!(
            server_metadata_urls("https://h/tenant1/"),
            [
                "https://h/.well-known/oauth-authorization-server/tenant1",
                "https://h/.well-known/openid-configuration/tenant1",
                "https://h/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_urls("http://127.0.0.1:9"),
            [
                "http://127.0.0.1:9/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9/.well-known/openid-configuration",
            ]
        );
    }
}
