//! The token endpoint (RFC 6749 §4.1.3 and §6): a code exchanged with its PKCE
//! verifier, a refresh token exchanged for new tokens; the client authenticated with
//! HTTP Basic when it has a secret. Its errors become sentences that say what to do;
//! none carries a token or the endpoint's raw body.

use serde::{Deserialize, Serialize};

use super::{ClientAuth, Endpoints, OAuthProvider, client};

/// A user's tokens for one provider. Prints as `[secret]`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix milliseconds; none when the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// The scopes granted, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The client they were issued to, when toolgate registered it (RFC 7591): they are
    /// refreshed as that client, whatever the callback URL is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokens([secret])")
    }
}

impl Tokens {
    /// Whether they are to be refreshed before use at `now` (ms).
    pub fn expiring(&self, now: i64) -> bool {
        self.expires_at
            .is_some_and(|at| at - super::REFRESH_MARGIN_MS <= now)
    }
}

/// Why OAuth failed, in words for a person or the model.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("{0}")]
    Declaration(String),
    #[error("the authorization server could not be reached: {0}")]
    Unreachable(String),
    /// The token endpoint answered with an OAuth error.
    #[error("{0}")]
    Refused(String),
    /// The token endpoint does not know the client (`invalid_client`): a registered
    /// client it forgot, or a declared one that is wrong.
    #[error("{0}")]
    UnknownClient(String),
    #[error("the client secret is not available: {0}")]
    Secret(String),
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<i64>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// Exchanges an authorization `code` (with its PKCE `verifier`).
pub async fn exchange_code(
    provider: &OAuthProvider,
    endpoints: &Endpoints,
    client_auth: &ClientAuth,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<Tokens, OAuthError> {
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
    ];
    post(provider, endpoints, client_auth, &form).await
}

/// New tokens for a refresh token; the old refresh token is kept when the server
/// does not rotate it.
pub async fn refresh(
    provider: &OAuthProvider,
    endpoints: &Endpoints,
    client_auth: &ClientAuth,
    old: &Tokens,
) -> Result<Tokens, OAuthError> {
    let refresh_token = old.refresh_token.as_deref().ok_or_else(|| {
        OAuthError::Refused(format!(
            "the access to {} expired and no refresh token was issued: the user must connect again",
            provider.name
        ))
    })?;
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ];
    let mut new = post(provider, endpoints, client_auth, &form).await?;
    if new.refresh_token.is_none() {
        new.refresh_token = old.refresh_token.clone();
    }
    new.client_id = old.client_id.clone();
    new.client_secret = old.client_secret.clone();
    Ok(new)
}

async fn post(
    provider: &OAuthProvider,
    endpoints: &Endpoints,
    client_auth: &ClientAuth,
    form: &[(&str, &str)],
) -> Result<Tokens, OAuthError> {
    let mut request = client()?
        .post(&endpoints.token)
        .header("Accept", "application/json");
    let mut fields: Vec<(&str, &str)> = form.to_vec();
    match &client_auth.secret {
        Some(secret) => request = request.basic_auth(&client_auth.id, Some(secret)),
        None => fields.push(("client_id", &client_auth.id)),
    }
    if let Some(resource) = &endpoints.resource {
        fields.push(("resource", resource));
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&fields)
        .finish();
    let response = request
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| {
            OAuthError::Unreachable(format!("{}: {}", endpoints.token, e.without_url()))
        })?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| OAuthError::Unreachable(e.without_url().to_string()))?;
    if status.is_success() {
        let answer: TokenAnswer = serde_json::from_slice(&body).map_err(|_| {
            OAuthError::Refused(format!(
                "the token endpoint of {} answered HTTP {status} without an access token",
                provider.name
            ))
        })?;
        let now = toolgate_protocol::clock::now_ms();
        return Ok(Tokens {
            access_token: answer.access_token,
            refresh_token: answer.refresh_token,
            expires_at: answer.expires_in.map(|s| now + s * 1000),
            scope: answer.scope,
            client_id: None,
            client_secret: None,
        });
    }
    let why = refusal(&provider.name, status.as_u16(), &body);
    let code = serde_json::from_slice::<ErrorAnswer>(&body).map(|e| e.error);
    if code.is_ok_and(|c| c == "invalid_client") {
        return Err(OAuthError::UnknownClient(why));
    }
    Err(OAuthError::Refused(why))
}

/// The sentence for a token endpoint's error answer (RFC 6749 §5.2).
fn refusal(provider: &str, status: u16, body: &[u8]) -> String {
    let Ok(e) = serde_json::from_slice::<ErrorAnswer>(body) else {
        return format!("the token endpoint of {provider} failed with HTTP {status}");
    };
    let what = match e.error.as_str() {
        "invalid_grant" => {
            "the authorization was refused: the code or refresh token is expired, used or revoked; the user must connect again"
        }
        "invalid_client" => {
            "the token endpoint refused the client id or client secret; check the oauth declaration"
        }
        "unauthorized_client" => "the client is not allowed this grant by the authorization server",
        "unsupported_grant_type" => "the token endpoint does not support this grant",
        "invalid_scope" => {
            "the scopes asked for are unknown to the authorization server or not allowed"
        }
        _ => "the token endpoint refused the request",
    };
    let detail = e
        .error_description
        .filter(|d| d.len() <= 200)
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    format!("{provider}: {what} [{}]{detail}", e.error)
}
