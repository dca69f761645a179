//! The `openapi:` file in the tools folder: which document, the tools' prefix, the base
//! URL, authentication (values from `${env:VAR}` or `${secret:NAME}`), permissions and
//! the operations to keep. Every key is used or refused.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::binding::{AUTH_PASSWORD, AUTH_TOKEN, AUTH_USERNAME, Auth, Location};
use toolgate_tool::{Credential, Permission};

/// An `openapi:` file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    /// A path (relative to this file) or the document inline.
    pub openapi: Value,
    /// The tools' prefix: `NAME__operationId`. Default: the file's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Overrides the document's servers / host.
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub auth: Option<RawAuth>,
    /// Every operation's permission; default: GET and HEAD auto, the others confirm.
    #[serde(default)]
    pub permission: Option<Permission>,
    /// By operationId, over `permission`.
    #[serde(default)]
    pub permissions: BTreeMap<String, Permission>,
    /// Only these operations (by operationId); default: all.
    #[serde(default)]
    pub operations: Option<Vec<String>>,
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Seconds a call may take.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Bytes of a response body kept.
    #[serde(default)]
    pub max_response: Option<usize>,
    /// Headers every call sends; values may use `${context:user}` (tenant, user,
    /// run_id, conversation_id) and `${VAR}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How a failed call is tried again: `{attempts, backoff, on: [timeout, connect,
    /// 429, 5xx], idempotent}`; only safe operations (GET, HEAD, OPTIONS) are retried
    /// unless `idempotent: true`.
    #[serde(default)]
    pub retry: Option<toolgate_tool::retry::RawRetry>,
    /// How long a safe operation's (GET, HEAD) result is kept and given again for the
    /// same arguments: `{ttl: 10m, secret_arguments: false}`.
    #[serde(default)]
    pub cache: Option<toolgate_tool::cache::RawCache>,
    /// The operation (by operationId) that checks the credentials (`toolgate tools
    /// validate`): a GET, HEAD or OPTIONS that needs no argument.
    #[serde(default)]
    pub validate: Option<String>,
}

/// `auth:` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    #[serde(rename = "type")]
    pub kind: String,
    /// api_key: header, query or cookie (default: the document's apiKey scheme, else header).
    #[serde(default, rename = "in")]
    pub location: Option<String>,
    /// api_key: the header / parameter name (default: the document's, else X-API-Key).
    #[serde(default)]
    pub name: Option<String>,
    /// api_key: the key.
    #[serde(default)]
    pub key: Option<Value>,
    /// bearer: the token.
    #[serde(default)]
    pub token: Option<Value>,
    /// basic: a user name as written, or a source.
    #[serde(default)]
    pub username: Option<Value>,
    #[serde(default)]
    pub password: Option<Value>,
    /// oauth2: the client id registered with the authorization server.
    #[serde(default)]
    pub client_id: Option<String>,
    /// oauth2: `${secret:NAME}` or `${env:VAR}` (none: a public client, PKCE only).
    #[serde(default)]
    pub client_secret: Option<Value>,
    /// oauth2: the scopes asked for (default: every scope the document's flow lists).
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    /// oauth2: the name users' tokens are stored under (default: the API's name), so
    /// that two files of one provider share a user's consent.
    #[serde(default)]
    pub provider: Option<String>,
    /// oauth2: the endpoints, when the document's scheme lacks them or is wrong.
    #[serde(default)]
    pub authorize_url: Option<String>,
    #[serde(default)]
    pub token_url: Option<String>,
}

/// A document's `oauth2` scheme with an authorization-code flow: its endpoints and the
/// scopes it lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OAuthScheme {
    pub authorize_url: Option<String>,
    pub token_url: Option<String>,
    pub scopes: Vec<String>,
}

impl RawAuth {
    /// The keys of the other types, and whether each is set.
    fn plain_keys(&self) -> [(&'static str, bool); 6] {
        [
            ("in", self.location.is_some()),
            ("name", self.name.is_some()),
            ("key", self.key.is_some()),
            ("token", self.token.is_some()),
            ("username", self.username.is_some()),
            ("password", self.password.is_some()),
        ]
    }

    /// The keys only `oauth2` takes, and whether each is set.
    fn oauth_keys(&self) -> [(&'static str, bool); 6] {
        [
            ("client_id", self.client_id.is_some()),
            ("client_secret", self.client_secret.is_some()),
            ("scopes", self.scopes.is_some()),
            ("provider", self.provider.is_some()),
            ("authorize_url", self.authorize_url.is_some()),
            ("token_url", self.token_url.is_some()),
        ]
    }

    /// `oauth2`: the provider, from these keys and the document's scheme.
    fn oauth_provider(
        &self,
        api: &str,
        scheme: Option<&OAuthScheme>,
    ) -> Result<toolgate_tool::oauth::OAuthProvider, String> {
        let scheme = scheme.cloned().unwrap_or_default();
        let provider = toolgate_tool::oauth::OAuthProvider {
            name: self.provider.clone().unwrap_or_else(|| api.to_string()),
            issuer: None,
            resource: None,
            revoke_url: None,
            authorize_url: self.authorize_url.clone().or(scheme.authorize_url),
            token_url: self.token_url.clone().or(scheme.token_url),
            client_id: self
                .client_id
                .clone()
                .ok_or("auth: oauth2 needs `client_id:` (the client registered with the authorization server)")?,
            client_secret: self.client_secret.clone(),
            scopes: self.scopes.clone().unwrap_or(scheme.scopes),
        };
        if provider.authorize_url.is_none() || provider.token_url.is_none() {
            return Err("auth: oauth2: the document has no oauth2 scheme with an authorization-code flow (authorizationUrl, tokenUrl); give authorize_url and token_url".into());
        }
        provider.check().map_err(|m| format!("auth: {m}"))?;
        Ok(provider)
    }
}

/// `auth: {type: oauth2}`: the user's token from the provider its keys and the
/// document's scheme make (no key of the other types).
fn read_oauth(raw: &RawAuth, doc: &DocAuth, api: &str) -> Result<Auth, String> {
    if let Some((f, _)) = raw.plain_keys().iter().find(|(_, set)| *set) {
        return Err(format!("auth: oauth2 takes no `{f}:`"));
    }
    let provider = raw.oauth_provider(api, doc.oauth.as_ref())?;
    Ok(Auth::OAuth2 {
        provider: Box::new(provider),
    })
}

/// What the document says of authentication: its first apiKey scheme (`in`, `name`)
/// and its first oauth2 authorization-code scheme, for defaults.
#[derive(Debug, Default)]
pub struct DocAuth {
    pub api_key: Option<(String, String)>,
    pub oauth: Option<OAuthScheme>,
}

/// The binding's auth and the credentials it needs, or why `auth:` is wrong. `api` is
/// the API's name (an oauth2 provider's default name).
pub fn read_auth(
    raw: Option<&RawAuth>,
    doc: DocAuth,
    api: &str,
) -> Result<(Auth, BTreeMap<String, Credential>), String> {
    let mut creds = BTreeMap::new();
    let Some(raw) = raw else {
        return Ok((Auth::None, creds));
    };
    if raw.kind == "oauth2" {
        return Ok((read_oauth(raw, &doc, api)?, creds));
    }
    if let Some((f, _)) = raw.oauth_keys().iter().find(|(_, set)| *set) {
        return Err(format!(
            "auth: {} takes no `{f}:` (only oauth2 does)",
            raw.kind
        ));
    }
    let scheme = doc.api_key;
    let source = |field: &str, v: &Option<Value>| -> Result<Credential, String> {
        let v = v
            .as_ref()
            .ok_or_else(|| format!("auth: {} needs `{field}:`", raw.kind))?;
        Credential::parse(v).map_err(|e| format!("auth: {field}: {e}"))
    };
    let unused = |fields: &[(&str, bool)]| -> Result<(), String> {
        match fields.iter().find(|(_, set)| *set) {
            Some((f, _)) => Err(format!("auth: {} takes no `{f}:`", raw.kind)),
            None => Ok(()),
        }
    };
    let auth = match raw.kind.as_str() {
        "none" => {
            unused(&raw.plain_keys())?;
            Auth::None
        }
        "api_key" => {
            unused(&[
                ("token", raw.token.is_some()),
                ("username", raw.username.is_some()),
                ("password", raw.password.is_some()),
            ])?;
            creds.insert(AUTH_TOKEN.to_string(), source("key", &raw.key)?);
            let (doc_in, doc_name) = scheme.unzip();
            let location = match raw.location.as_deref().or(doc_in.as_deref()) {
                None | Some("header") => Location::Header,
                Some("query") => Location::Query,
                Some("cookie") => Location::Cookie,
                Some(other) => {
                    return Err(format!(
                        "auth: in must be header, query or cookie, not '{other}'"
                    ));
                }
            };
            let name = raw
                .name
                .clone()
                .or(doc_name)
                .unwrap_or_else(|| "X-API-Key".to_string());
            Auth::ApiKey { location, name }
        }
        "bearer" => {
            unused(&[
                ("in", raw.location.is_some()),
                ("name", raw.name.is_some()),
                ("key", raw.key.is_some()),
                ("username", raw.username.is_some()),
                ("password", raw.password.is_some()),
            ])?;
            creds.insert(AUTH_TOKEN.to_string(), source("token", &raw.token)?);
            Auth::Bearer
        }
        "basic" => {
            unused(&[
                ("in", raw.location.is_some()),
                ("name", raw.name.is_some()),
                ("key", raw.key.is_some()),
                ("token", raw.token.is_some()),
            ])?;
            creds.insert(
                AUTH_PASSWORD.to_string(),
                source("password", &raw.password)?,
            );
            let username = match &raw.username {
                None => return Err("auth: basic needs `username:`".into()),
                Some(Value::String(s)) if !s.trim_start().starts_with("${") => Some(s.clone()),
                Some(v) => {
                    let c = Credential::parse(v).map_err(|e| format!("auth: username: {e}"))?;
                    creds.insert(AUTH_USERNAME.to_string(), c);
                    None
                }
            };
            Auth::Basic { username }
        }
        other => {
            return Err(format!(
                "auth: type must be none, api_key, bearer, basic or oauth2, not '{other}'"
            ));
        }
    };
    Ok((auth, creds))
}
