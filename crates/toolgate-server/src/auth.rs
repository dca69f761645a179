//! Who is calling: every `/v1/*`, `/mcp/*` and `/metrics` request is given an
//! [`Identity`] from its `Authorization: Bearer` credentials (the server's one admin
//! key, compared in constant time; a key toolgate issued, looked up by its SHA-256; or
//! an app's JWT), its role is checked against the route (`roles`), its rate against
//! the limits (`rate`), and the identity goes to the handler. A server with no key, no
//! issued key and no JWT settings (loopback only) treats every caller as the admin of
//! the default tenant, as before identities, whatever bearer token it sends (the OpenAI
//! SDKs always send one). `/healthz`, `/openapi.json` and the
//! inbox's page and assets (which hold no data) stay open.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::AppState;
use super::error::ApiError;
use toolgate_protocol::identity::Identity;
use toolgate_store::KeyLookup;

/// The hex SHA-256 of an issued key: what the database keeps instead of the key.
pub fn key_hash(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub async fn require_key(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    // The OAuth callback is the user's browser coming back: its single-use state is
    // its credential.
    let public = path == "/v1/oauth/callback";
    if public || (!path.starts_with("/v1/") && !path.starts_with("/mcp/") && path != "/metrics") {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .map(|g| g.trim().to_string());
    let who = match identify(&state, given.as_deref()).await {
        // What it may use: its own allow-lists met with its tenant's.
        Ok(who) => state.tenant_allows.limit(who),
        Err(message) => return unauthorized(&message),
    };
    if let Some(why) = super::roles::refuses(req.method(), req.uri().path(), &who) {
        return ApiError::new(StatusCode::FORBIDDEN, "forbidden", why).into_response();
    }
    if let Some(rates) = &state.rates
        && let Err(wait) = rates.check(&who.decided_by(), &who.tenant)
    {
        return too_many(wait, "this key or its tenant is over its request rate");
    }
    req.extensions_mut().insert(who);
    next.run(req).await
}

/// 429 with `Retry-After`.
pub fn too_many(wait: std::time::Duration, message: &str) -> Response {
    let seconds = super::rate::retry_after(wait);
    let mut response = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        format!("{message}; retry in {seconds}s"),
    )
    .into_response();
    if let Ok(v) = axum::http::HeaderValue::from_str(&seconds.to_string()) {
        response
            .headers_mut()
            .insert(axum::http::header::RETRY_AFTER, v);
    }
    response
}

/// The identity `given` credentials stand for, or the one line saying why not.
async fn identify(state: &AppState, given: Option<&str>) -> Result<Identity, String> {
    let Some(given) = given.filter(|g| !g.is_empty()) else {
        return open(
            state,
            "this server needs an API key: send Authorization: Bearer KEY",
        )
        .await;
    };
    if let Some(key) = &state.api_key
        && same(given.as_bytes(), key.as_bytes())
    {
        return Ok(Identity::admin("api-key"));
    }
    if given.starts_with("tg_") {
        let found = state
            .runner
            .store
            .key_by_hash(&key_hash(given))
            .await
            .map_err(|e| format!("cannot check the key: {e}"))?;
        return match found {
            KeyLookup::Valid(who) => Ok(who),
            KeyLookup::Revoked(name) => Err(format!("the key '{name}' was revoked")),
            KeyLookup::Expired(name) => Err(format!("the key '{name}' has expired")),
            KeyLookup::Unknown => open(state, "the API key is wrong").await,
        };
    }
    if let Some(jwt) = &state.jwt
        && given.matches('.').count() == 2
    {
        return jwt.verify(given).map_err(|e| e.to_string());
    }
    open(state, "the API key is wrong").await
}

/// Credentials that match nothing: an open server (loopback, nothing to check against)
/// takes them as the local admin, since the SDKs always send a token; any other
/// refuses with `refusal`. Asked only here, so a request with a valid key costs no
/// look at the keys table.
async fn open(state: &AppState, refusal: &str) -> Result<Identity, String> {
    if needs_key(state).await? {
        return Err(refusal.to_string());
    }
    Ok(Identity::admin("local"))
}

/// Whether a request without credentials is refused: a key, JWT settings or a live
/// issued key exist.
pub(super) async fn needs_key(state: &AppState) -> Result<bool, String> {
    if state.api_key.is_some() || state.jwt.is_some() {
        return Ok(true);
    }
    state
        .runner
        .store
        .any_live_key()
        .await
        .map_err(|e| format!("cannot check the keys: {e}"))
}

/// The credentials of `Bearer CREDENTIALS`, the scheme in any case (RFC 9110: schemes
/// are case-insensitive).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(rest)
}

fn unauthorized(message: &str) -> Response {
    let mut response =
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
    response.headers_mut().insert(
        axum::http::header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    // The request's body is left unread (a client without the key doesn't get to make
    // the server read it), so the connection can't carry another request: say so, or a
    // client that reuses it finds it closed under its next request.
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// Equal, in a time that depends on the lengths only, not on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        let y = b.get(i % b.len().max(1)).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::{bearer, same};

    #[test]
    fn the_scheme_is_case_insensitive() {
        assert_eq!(bearer("Bearer k"), Some("k"));
        assert_eq!(bearer("bearer k"), Some("k"));
        assert_eq!(bearer("BEARER  k"), Some(" k"));
        assert_eq!(bearer("Basic k"), None);
        assert_eq!(bearer("Bearerk"), None);
    }

    #[test]
    fn keys_compare_whole() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secret", b"secreT"));
        assert!(!same(b"secret", b"secret2"));
        assert!(!same(b"", b"x"));
        assert!(!same(b"x", b""));
        assert!(same(b"", b""));
    }
}
