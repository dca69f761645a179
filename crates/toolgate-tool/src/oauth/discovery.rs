//! A provider's endpoints: as declared, or read from its issuer's metadata (RFC 8414
//! `/.well-known/oauth-authorization-server`, then OpenID Connect's
//! `/.well-known/openid-configuration`).

use serde::Deserialize;

use super::{OAuthError, OAuthProvider, client};

/// Where the user consents and where codes are exchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    pub authorize: String,
    pub token: String,
}

#[derive(Deserialize)]
struct Metadata {
    authorization_endpoint: String,
    token_endpoint: String,
}

impl Endpoints {
    /// The endpoints of `provider`: its own, or discovered from its issuer.
    pub async fn of(provider: &OAuthProvider) -> Result<Endpoints, OAuthError> {
        if let (Some(authorize), Some(token)) = (&provider.authorize_url, &provider.token_url) {
            return Ok(Endpoints {
                authorize: authorize.clone(),
                token: token.clone(),
            });
        }
        let issuer = provider.issuer.as_deref().ok_or_else(|| {
            OAuthError::Declaration(format!(
                "oauth '{}' has neither both endpoints nor an issuer",
                provider.name
            ))
        })?;
        let base = issuer.trim_end_matches('/');
        let mut tried = Vec::new();
        for well_known in ["oauth-authorization-server", "openid-configuration"] {
            let url = format!("{base}/.well-known/{well_known}");
            match fetch(&url).await {
                Ok(m) => {
                    return Ok(Endpoints {
                        authorize: provider
                            .authorize_url
                            .clone()
                            .unwrap_or(m.authorization_endpoint),
                        token: provider.token_url.clone().unwrap_or(m.token_endpoint),
                    });
                }
                Err(why) => tried.push(format!("{url}: {why}")),
            }
        }
        Err(OAuthError::Unreachable(format!(
            "the metadata of issuer {issuer} could not be read ({})",
            tried.join("; ")
        )))
    }
}

async fn fetch(url: &str) -> Result<Metadata, String> {
    let response = client()
        .map_err(|e| e.to_string())?
        .get(url)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| format!("no answer ({e})"))?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status().as_u16()));
    }
    response
        .json::<Metadata>()
        .await
        .map_err(|e| format!("not authorization server metadata ({e})"))
}
