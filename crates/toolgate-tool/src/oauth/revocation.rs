//! Token revocation (RFC 7009): a token revoked at the authorization server, the client
//! authenticated as at the token endpoint. The server answers 200 whether or not it
//! knew the token; anything else is an error in words, never with the token.

use super::{ClientAuth, OAuthError, client};

/// Revokes `token` (`hint`: `refresh_token` or `access_token`) at `endpoint`.
pub async fn revoke_token(
    provider: &str,
    endpoint: &str,
    client_auth: &ClientAuth,
    token: &str,
    hint: &str,
) -> Result<(), OAuthError> {
    let mut fields = vec![("token", token), ("token_type_hint", hint)];
    let mut request = client()?
        .post(endpoint)
        .header("Content-Type", "application/x-www-form-urlencoded");
    match &client_auth.secret {
        Some(secret) => request = request.basic_auth(&client_auth.id, Some(secret)),
        None => fields.push(("client_id", &client_auth.id)),
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&fields)
        .finish();
    let answer = request
        .body(body)
        .send()
        .await
        .map_err(|e| OAuthError::Unreachable(format!("{endpoint}: {}", e.without_url())))?;
    let status = answer.status();
    if status.is_success() {
        return Ok(());
    }
    Err(OAuthError::Refused(format!(
        "{provider}: the revocation endpoint answered HTTP {}",
        status.as_u16()
    )))
}
