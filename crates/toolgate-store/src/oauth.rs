//! Per-user OAuth rows: a user's tokens for a provider (sealed by the caller: this
//! crate never sees them in clear) and the consents under way, keyed by the SHA-256 of
//! their state, and the clients toolgate registered itself as (RFC 7591).

use serde::Serialize;

/// Whose tokens: a tenant's user, for one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthOwner {
    pub tenant: String,
    pub user: String,
    pub provider: String,
}

/// A stored grant, as listed (never its tokens).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OAuthGrant {
    pub user: String,
    pub provider: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Unix milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A user's tokens, sealed, with what may be shown of them.
#[derive(Debug, Clone, PartialEq)]
pub struct SealedTokens {
    pub sealed: String,
    pub scope: Option<String>,
    pub expires_at: Option<i64>,
}

/// A consent under way: for whom, for which paused call, and its sealed PKCE verifier.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthConsent {
    pub state_hash: String,
    pub owner: OAuthOwner,
    pub run_id: Option<String>,
    pub call_id: Option<String>,
    pub verifier: String,
    pub created_at: i64,
}

/// A client toolgate registered itself as (RFC 7591), its secret sealed by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisteredClient {
    pub client_id: String,
    pub sealed_secret: Option<String>,
}
