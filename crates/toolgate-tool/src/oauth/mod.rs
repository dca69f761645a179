//! Per-user OAuth 2.0 for tools (authorization code with PKCE, RFC 6749 and 7636;
//! refresh tokens): the `oauth:` provider a tool or source file declares, its endpoints
//! (given, or discovered from the issuer), the consent URL with its single-use `state`
//! and PKCE verifier, and the token endpoint's grants with its errors as sentences; for
//! a protected resource (a remote MCP server), its authorization server discovered
//! from it (RFC 9728) and toolgate registered as a client (RFC 7591).
//! No function here logs or formats a token: [`Tokens`] prints as `[secret]`.

mod as_user;
mod consent;
mod discovery;
mod grant;
mod provider;
mod registration;
mod revocation;
mod user_tokens;

pub use as_user::as_user;
pub use consent::{Consent, challenge_of, random_token};
pub use discovery::{Endpoints, parameter};
pub use grant::{OAuthError, Tokens, exchange_code, refresh};
pub use provider::OAuthProvider;
pub use registration::{ClientAuth, register};
pub use revocation::revoke_token;
pub use user_tokens::UserTokens;

/// Seconds before a token's expiry at which it is refreshed before use.
pub const REFRESH_MARGIN_MS: i64 = 60_000;

/// The HTTP client the grants and the discovery use: no redirects, a short timeout.
fn client() -> Result<reqwest::Client, OAuthError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| OAuthError::Unreachable(format!("no HTTP client: {e}")))
}
