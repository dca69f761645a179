//! Per-user OAuth through the facade: a user's sealed tokens per tenant and provider,
//! the grants listed and revoked, and consents under way taken once by their state's
//! hash.

use super::super::{Backend, Store, StoreError};
use crate::oauth::{OAuthConsent, OAuthGrant, OAuthOwner, RegisteredClient, SealedTokens};

impl Store {
    /// Sets (or replaces) the tokens of `owner` (sealed by the caller).
    pub async fn set_oauth_tokens(
        &self,
        owner: OAuthOwner,
        tokens: SealedTokens,
    ) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.set_oauth_tokens(owner, tokens).await?),
            Backend::Postgres(s) => s.set_oauth_tokens(owner, tokens).await,
        }
    }

    /// The sealed tokens of `owner`, if the user connected.
    pub async fn oauth_tokens(
        &self,
        owner: &OAuthOwner,
    ) -> Result<Option<SealedTokens>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => {
                let owner = owner.clone();
                Ok(s.blocking(move |s| s.oauth_tokens(&owner)).await?)
            }
            Backend::Postgres(s) => s.oauth_tokens(owner).await,
        }
    }

    /// Revokes (forgets) the tokens of `owner`; whether there were any.
    pub async fn remove_oauth_tokens(&self, owner: OAuthOwner) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.remove_oauth_tokens(owner).await?),
            Backend::Postgres(s) => s.remove_oauth_tokens(owner).await,
        }
    }

    /// The grants of `tenant`, of one `user` when given (never their tokens).
    pub async fn oauth_grants(
        &self,
        tenant: &str,
        user: Option<&str>,
    ) -> Result<Vec<OAuthGrant>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => {
                let (tenant, user) = (tenant.to_string(), user.map(str::to_string));
                Ok(
                    s.blocking(move |s| s.oauth_grants(&tenant, user.as_deref()))
                        .await?,
                )
            }
            Backend::Postgres(s) => s.oauth_grants(tenant, user).await,
        }
    }

    /// Keeps a consent under way.
    pub async fn put_oauth_consent(&self, consent: OAuthConsent) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.put_oauth_consent(consent).await?),
            Backend::Postgres(s) => s.put_oauth_consent(consent).await,
        }
    }

    /// Takes the consent whose state hashes to `state_hash`: a state works once.
    pub async fn take_oauth_consent(
        &self,
        state_hash: &str,
    ) -> Result<Option<OAuthConsent>, StoreError> {
        let state_hash = state_hash.to_string();
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.take_oauth_consent(state_hash).await?),
            Backend::Postgres(s) => s.take_oauth_consent(state_hash).await,
        }
    }

    /// The client toolgate registered at `endpoint` for `redirect_uri`, if any.
    pub async fn oauth_client(
        &self,
        endpoint: &str,
        redirect_uri: &str,
    ) -> Result<Option<RegisteredClient>, StoreError> {
        let (endpoint, redirect_uri) = (endpoint.to_string(), redirect_uri.to_string());
        match &self.backend {
            Backend::Sqlite(s) => Ok(s
                .blocking(move |s| s.oauth_client(&endpoint, &redirect_uri))
                .await?),
            Backend::Postgres(s) => s.oauth_client(endpoint, redirect_uri).await,
        }
    }

    /// Keeps the client registered at `endpoint` for `redirect_uri`, unless one was
    /// kept first (two workers registering at once); the one kept.
    pub async fn keep_oauth_client(
        &self,
        endpoint: &str,
        redirect_uri: &str,
        client: RegisteredClient,
    ) -> Result<RegisteredClient, StoreError> {
        let (endpoint, redirect_uri) = (endpoint.to_string(), redirect_uri.to_string());
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.keep_oauth_client(endpoint, redirect_uri, client).await?),
            Backend::Postgres(s) => s.keep_oauth_client(endpoint, redirect_uri, client).await,
        }
    }

    /// Forgets a registered client the authorization server no longer knows.
    pub async fn forget_oauth_client(
        &self,
        endpoint: &str,
        redirect_uri: &str,
        client_id: &str,
    ) -> Result<(), StoreError> {
        let (endpoint, redirect_uri, client_id) = (
            endpoint.to_string(),
            redirect_uri.to_string(),
            client_id.to_string(),
        );
        match &self.backend {
            Backend::Sqlite(s) => Ok(s
                .forget_oauth_client(endpoint, redirect_uri, client_id)
                .await?),
            Backend::Postgres(s) => {
                s.forget_oauth_client(endpoint, redirect_uri, client_id)
                    .await
            }
        }
    }
}
