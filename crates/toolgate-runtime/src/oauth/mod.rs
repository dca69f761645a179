//! Per-user OAuth for the runtime: the broker that starts a consent for a (tenant,
//! user, provider), completes it from the callback (single-use state, PKCE verifier),
//! keeps the tokens sealed in the store, and hands out an access token, refreshed
//! before it expires and once more after a 401.

mod broker;
mod user_tokens;

/// The callback URL a runner gives consents unless it is told another.
pub const DEFAULT_CALLBACK: &str = "http://localhost:8080/v1/oauth/callback";

pub use broker::{AtProvider, BrokerError, CONSENT_TTL_MS, Callback, Completed, OAuthBroker};
pub use toolgate_store::oauth::{OAuthGrant, OAuthOwner};
pub use toolgate_tool::oauth::{OAuthProvider, Tokens};
pub use user_tokens::owner_of;
