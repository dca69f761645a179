//! The API key: with one set, every `/v1/*`, `/mcp/*` and `/metrics` request carries
//! `Authorization: Bearer KEY`, compared in constant time; `/healthz` and
//! `/openapi.json` stay open.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::ApiError;

pub async fn require_key(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let Some(key) = &state.api_key else {
        return next.run(req).await;
    };
    let path = req.uri().path();
    if !path.starts_with("/v1/") && !path.starts_with("/mcp/") && path != "/metrics" {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    match given {
        Some(given) if same(given.trim().as_bytes(), key.as_bytes()) => next.run(req).await,
        Some(_) => unauthorized("the API key is wrong"),
        None => unauthorized("this server needs an API key: send Authorization: Bearer KEY"),
    }
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
