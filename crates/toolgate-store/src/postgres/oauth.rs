//! Per-user OAuth on PostgreSQL: sealed tokens per (tenant, user, provider), and
//! consents under way taken once by their state's hash.

use super::PgStore;
use super::clock::NOW_MS;
use crate::StoreError;
use crate::oauth::{OAuthConsent, OAuthGrant, OAuthOwner, RegisteredClient, SealedTokens};

impl PgStore {
    /// Sets (or replaces) the tokens of `owner`.
    pub async fn set_oauth_tokens(
        &self,
        owner: OAuthOwner,
        tokens: SealedTokens,
    ) -> Result<(), StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            client
                .execute(
                    &format!(
                        "INSERT INTO oauth_tokens (tenant, user_id, provider, sealed, scope, expires_at, created_at, updated_at)
                         SELECT $1, $2, $3, $4, $5, $6, now, now FROM (SELECT {NOW_MS} AS now) t
                         ON CONFLICT (tenant, user_id, provider) DO UPDATE SET sealed = excluded.sealed,
                           scope = excluded.scope, expires_at = excluded.expires_at, updated_at = excluded.updated_at"
                    ),
                    &[&owner.tenant, &owner.user, &owner.provider, &tokens.sealed, &tokens.scope, &tokens.expires_at],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(())
        })
        .await
    }

    /// The tokens of `owner`, if the user connected.
    pub async fn oauth_tokens(
        &self,
        owner: &OAuthOwner,
    ) -> Result<Option<SealedTokens>, StoreError> {
        let owner = owner.clone();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .query_opt(
                    "SELECT sealed, scope, expires_at FROM oauth_tokens WHERE tenant = $1 AND user_id = $2 AND provider = $3",
                    &[&owner.tenant, &owner.user, &owner.provider],
                )
                .await
                .map_err(|e| s.error(e))?;
            row.map(|r| {
                Ok(SealedTokens { sealed: r.try_get(0)?, scope: r.try_get(1)?, expires_at: r.try_get(2)? })
            })
            .transpose()
            .map_err(|e: tokio_postgres::Error| s.error(e))
        })
        .await
    }

    /// Removes the tokens of `owner`; whether there were any.
    pub async fn remove_oauth_tokens(&self, owner: OAuthOwner) -> Result<bool, StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let n = client
                .execute(
                    "DELETE FROM oauth_tokens WHERE tenant = $1 AND user_id = $2 AND provider = $3",
                    &[&owner.tenant, &owner.user, &owner.provider],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(n > 0)
        })
        .await
    }

    /// The grants of `tenant` (of `user` only, when given), by user then provider.
    pub async fn oauth_grants(
        &self,
        tenant: &str,
        user: Option<&str>,
    ) -> Result<Vec<OAuthGrant>, StoreError> {
        let (tenant, user) = (tenant.to_string(), user.map(str::to_string));
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let rows = client
                .query(
                    "SELECT user_id, provider, scope, expires_at, created_at, updated_at FROM oauth_tokens
                     WHERE tenant = $1 AND ($2::TEXT IS NULL OR user_id = $2)
                     ORDER BY user_id COLLATE \"C\", provider COLLATE \"C\"",
                    &[&tenant, &user],
                )
                .await
                .map_err(|e| s.error(e))?;
            rows.iter()
                .map(|r| {
                    Ok(OAuthGrant {
                        user: r.try_get(0)?,
                        provider: r.try_get(1)?,
                        scope: r.try_get(2)?,
                        expires_at: r.try_get(3)?,
                        created_at: r.try_get(4)?,
                        updated_at: r.try_get(5)?,
                    })
                })
                .collect::<Result<_, tokio_postgres::Error>>()
                .map_err(|e| s.error(e))
        })
        .await
    }

    /// Keeps a consent under way.
    pub async fn put_oauth_consent(&self, c: OAuthConsent) -> Result<(), StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            client
                .execute(
                    "INSERT INTO oauth_consents (state_hash, tenant, user_id, provider, run_id, call_id, verifier, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    &[&c.state_hash, &c.owner.tenant, &c.owner.user, &c.owner.provider, &c.run_id, &c.call_id, &c.verifier, &c.created_at],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(())
        })
        .await
    }

    /// Takes the consent of `state_hash` (it is gone after): a state works once.
    pub async fn take_oauth_consent(
        &self,
        state_hash: String,
    ) -> Result<Option<OAuthConsent>, StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .query_opt(
                    "DELETE FROM oauth_consents WHERE state_hash = $1
                     RETURNING state_hash, tenant, user_id, provider, run_id, call_id, verifier, created_at",
                    &[&state_hash],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            row.map(|r| {
                Ok(OAuthConsent {
                    state_hash: r.try_get(0)?,
                    owner: OAuthOwner { tenant: r.try_get(1)?, user: r.try_get(2)?, provider: r.try_get(3)? },
                    run_id: r.try_get(4)?,
                    call_id: r.try_get(5)?,
                    verifier: r.try_get(6)?,
                    created_at: r.try_get(7)?,
                })
            })
            .transpose()
            .map_err(|e: tokio_postgres::Error| s.error(e))
        })
        .await
    }

    /// The client registered at `endpoint` for `redirect_uri`, if any.
    pub async fn oauth_client(
        &self,
        endpoint: String,
        redirect_uri: String,
    ) -> Result<Option<RegisteredClient>, StoreError> {
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .query_opt(
                    "SELECT client_id, sealed_secret FROM oauth_clients WHERE registration_endpoint = $1 AND redirect_uri = $2",
                    &[&endpoint, &redirect_uri],
                )
                .await
                .map_err(|e| s.error(e))?;
            row.map(|r| Ok(RegisteredClient { client_id: r.try_get(0)?, sealed_secret: r.try_get(1)? }))
                .transpose()
                .map_err(|e: tokio_postgres::Error| s.error(e))
        })
        .await
    }

    /// Keeps `client` as the one registered at `endpoint` for `redirect_uri`, unless
    /// another worker kept one first; the one kept.
    pub async fn keep_oauth_client(
        &self,
        endpoint: String,
        redirect_uri: String,
        registered: RegisteredClient,
    ) -> Result<RegisteredClient, StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            // The one kept first is answered (two workers registering at once).
            let r = client
                .query_one(
                    &format!(
                        "INSERT INTO oauth_clients (registration_endpoint, redirect_uri, client_id, sealed_secret, created_at)
                         SELECT $1, $2, $3, $4, now FROM (SELECT {NOW_MS} AS now) t
                         ON CONFLICT (registration_endpoint, redirect_uri) DO UPDATE SET client_id = oauth_clients.client_id
                         RETURNING client_id, sealed_secret"
                    ),
                    &[&endpoint, &redirect_uri, &registered.client_id, &registered.sealed_secret],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(RegisteredClient {
                client_id: r.try_get(0).map_err(|e| s.error(e))?,
                sealed_secret: r.try_get(1).map_err(|e| s.error(e))?,
            })
        })
        .await
    }

    /// Forgets the client registered at `endpoint` for `redirect_uri` when it is still
    /// `client_id` (the server no longer knows it).
    pub async fn forget_oauth_client(
        &self,
        endpoint: String,
        redirect_uri: String,
        client_id: String,
    ) -> Result<(), StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            client
                .execute(
                    "DELETE FROM oauth_clients WHERE registration_endpoint = $1 AND redirect_uri = $2 AND client_id = $3",
                    &[&endpoint, &redirect_uri, &client_id],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(())
        })
        .await
    }
}
