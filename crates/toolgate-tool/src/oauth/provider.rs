//! The `oauth:` declaration of a provider: its name (what tokens are stored under), its
//! endpoints or the issuer to discover them from, the client id, the client secret as a
//! credential (`${secret:NAME}` or `${env:VAR}`), and the scopes asked for. A provider
//! that guards a protected resource (a remote MCP server) names it: its authorization
//! server is then discovered from the resource (RFC 9728), the `resource` parameter
//! goes with every request (RFC 8707), and with no client id the client registers
//! itself (RFC 7591).

use crate::Credential;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One OAuth provider, as a tool or source file declares it under `oauth:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthProvider {
    /// The provider's name: a user's tokens are stored per tenant, user and this name.
    pub name: String,
    /// The authorization server's issuer URL; its endpoints are discovered
    /// (`/.well-known/oauth-authorization-server`, then `openid-configuration`) unless
    /// both are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The authorization endpoint, where the user consents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorize_url: Option<String>,
    /// The token endpoint, where codes and refresh tokens are exchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// The revocation endpoint (RFC 7009), where a revoked connection's tokens are
    /// revoked too; discovered from the issuer's metadata unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoke_url: Option<String>,
    /// The protected resource the tokens are for (RFC 8707's `resource`); when no
    /// issuer or endpoints are given, its metadata (RFC 9728) names the authorization
    /// server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Empty: registered at the authorization server's registration endpoint (RFC
    /// 7591), once per callback URL, and kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_id: String,
    /// `${secret:NAME}` or `${env:VAR}`; none for a public client (PKCE only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub client_secret: Option<Value>,
    /// The scopes asked for, space-joined in the consent URL.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

impl OAuthProvider {
    /// Checks a declaration when its file is loaded: a name, a client id, endpoints or
    /// an issuer, http(s) URLs, and a client secret that names a source.
    pub fn check(&self) -> Result<(), String> {
        let named = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !named {
            return Err(format!(
                "oauth: name '{}' must be letters, digits, '_', '-' or '.'",
                self.name
            ));
        }
        let given = self.authorize_url.is_some() && self.token_url.is_some();
        if !given && self.issuer.is_none() && self.resource.is_none() {
            return Err(format!(
                "oauth '{}': give both authorize_url and token_url, or issuer to discover them",
                self.name
            ));
        }
        if self.registers() {
            if given && self.issuer.is_none() && self.resource.is_none() {
                return Err(format!(
                    "oauth '{}': client_id is empty; give one, or an issuer whose metadata \
                     offers dynamic client registration",
                    self.name
                ));
            }
            if self.client_secret.is_some() {
                return Err(format!(
                    "oauth '{}': a client_secret needs its client_id",
                    self.name
                ));
            }
        }
        for url in [
            &self.issuer,
            &self.authorize_url,
            &self.token_url,
            &self.revoke_url,
            &self.resource,
        ]
        .into_iter()
        .flatten()
        {
            let ok = url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
            if !ok {
                return Err(format!(
                    "oauth '{}': '{url}' is not an http(s) URL",
                    self.name
                ));
            }
        }
        self.secret().map(|_| ())
    }

    /// Whether the client registers itself (no client id declared).
    pub fn registers(&self) -> bool {
        self.client_id.trim().is_empty()
    }

    /// Where the client secret comes from, if the client has one.
    pub fn secret(&self) -> Result<Option<Credential>, String> {
        self.client_secret
            .as_ref()
            .map(|v| {
                Credential::parse(v)
                    .map_err(|e| format!("oauth '{}': client_secret: {e}", self.name))
            })
            .transpose()
    }
}
