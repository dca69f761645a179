//! Dynamic client registration (RFC 7591): toolgate registers itself at an
//! authorization server that offers it, as a public client using PKCE with its one
//! callback URL, and gets a client id (and a secret, when the server gives one). The
//! caller keeps the registration; nothing here logs the secret.

use serde::Deserialize;
use serde_json::json;

use super::{OAuthError, client};

/// The client a registration made. Prints without its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientAuth {
    pub id: String,
    pub secret: Option<String>,
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientAuth")
            .field("id", &self.id)
            .field("secret", &self.secret.as_ref().map(|_| "[secret]"))
            .finish()
    }
}

#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
}

#[derive(Deserialize)]
struct Refused {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// Registers toolgate at `endpoint` for callbacks to `redirect_uri`.
pub async fn register(
    provider: &str,
    endpoint: &str,
    redirect_uri: &str,
) -> Result<ClientAuth, OAuthError> {
    let metadata = json!({
        "client_name": "toolgate",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let answer = client()?
        .post(endpoint)
        .header("Accept", "application/json")
        .json(&metadata)
        .send()
        .await
        .map_err(|e| OAuthError::Unreachable(format!("{endpoint}: {}", e.without_url())))?;
    let status = answer.status();
    let body = answer
        .bytes()
        .await
        .map_err(|e| OAuthError::Unreachable(e.without_url().to_string()))?;
    if status.is_success() {
        let r: Registered = serde_json::from_slice(&body).map_err(|_| {
            OAuthError::Refused(format!(
                "{provider}: the registration endpoint answered HTTP {status} without a client id"
            ))
        })?;
        return Ok(ClientAuth {
            id: r.client_id,
            secret: r.client_secret.filter(|s| !s.is_empty()),
        });
    }
    let why = match serde_json::from_slice::<Refused>(&body) {
        Ok(e) => {
            let detail = e
                .error_description
                .filter(|d| d.len() <= 200)
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            format!("[{}]{detail}", e.error)
        }
        Err(_) => format!("HTTP {}", status.as_u16()),
    };
    Err(OAuthError::Refused(format!(
        "{provider}: the authorization server refused to register toolgate as a client {why}; \
         declare a client_id registered by hand"
    )))
}
