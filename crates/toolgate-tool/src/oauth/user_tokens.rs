//! What a tool asks for a user's access token through: the runtime's broker, behind a
//! trait so that tools need not know the store. The run's tenant and user say whose.

use async_trait::async_trait;

use super::OAuthProvider;
use crate::RunContext;

/// A user's access tokens, per provider.
#[async_trait]
pub trait UserTokens: Send + Sync + std::fmt::Debug {
    /// The access token of `run`'s user for `provider` (refreshed when it is about to
    /// expire); `None` when the user has not connected.
    async fn token(
        &self,
        provider: &OAuthProvider,
        run: &RunContext,
    ) -> Result<Option<String>, String>;

    /// After the resource refused the token (401): a refreshed one, once; `None` when
    /// the user must connect again.
    async fn after_unauthorized(
        &self,
        provider: &OAuthProvider,
        run: &RunContext,
    ) -> Result<Option<String>, String>;
}
