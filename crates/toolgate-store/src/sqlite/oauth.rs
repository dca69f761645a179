//! Per-user OAuth on SQLite: sealed tokens per (tenant, user, provider), and consents
//! under way taken once by their state's hash.

use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::runs::RunsError;
use crate::oauth::{OAuthConsent, OAuthGrant, OAuthOwner, RegisteredClient, SealedTokens};
use toolgate_protocol::clock::now_ms;

impl SqliteStore {
    /// Sets (or replaces) the tokens of `owner`.
    pub async fn set_oauth_tokens(
        &self,
        owner: OAuthOwner,
        tokens: SealedTokens,
    ) -> Result<(), RunsError> {
        self.transact(move |tx| {
            tx.execute(
                "INSERT INTO oauth_tokens (tenant, user_id, provider, sealed, scope, expires_at, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
                 ON CONFLICT (tenant, user_id, provider) DO UPDATE SET sealed = excluded.sealed,
                   scope = excluded.scope, expires_at = excluded.expires_at, updated_at = excluded.updated_at",
                params![owner.tenant, owner.user, owner.provider, tokens.sealed, tokens.scope, tokens.expires_at, now_ms()],
            )?;
            Ok(())
        })
        .await
    }

    /// The tokens of `owner`, if the user connected.
    pub fn oauth_tokens(&self, owner: &OAuthOwner) -> Result<Option<SealedTokens>, RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .prepare_cached("SELECT sealed, scope, expires_at FROM oauth_tokens WHERE tenant = ?1 AND user_id = ?2 AND provider = ?3")?
                .query_row(params![owner.tenant, owner.user, owner.provider], |r| {
                    Ok(SealedTokens { sealed: r.get(0)?, scope: r.get(1)?, expires_at: r.get(2)? })
                })
                .optional()?)
        })
    }

    /// Removes the tokens of `owner`; whether there were any.
    pub async fn remove_oauth_tokens(&self, owner: OAuthOwner) -> Result<bool, RunsError> {
        self.transact(move |tx| {
            Ok(tx.execute(
                "DELETE FROM oauth_tokens WHERE tenant = ?1 AND user_id = ?2 AND provider = ?3",
                params![owner.tenant, owner.user, owner.provider],
            )? > 0)
        })
        .await
    }

    /// The grants of `tenant` (of `user` only, when given), by user then provider.
    pub fn oauth_grants(
        &self,
        tenant: &str,
        user: Option<&str>,
    ) -> Result<Vec<OAuthGrant>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT user_id, provider, scope, expires_at, created_at, updated_at FROM oauth_tokens
                 WHERE tenant = ?1 AND (?2 IS NULL OR user_id = ?2) ORDER BY user_id, provider",
            )?;
            let rows = stmt
                .query_map(params![tenant, user], |r| {
                    Ok(OAuthGrant {
                        user: r.get(0)?,
                        provider: r.get(1)?,
                        scope: r.get(2)?,
                        expires_at: r.get(3)?,
                        created_at: r.get(4)?,
                        updated_at: r.get(5)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// Keeps a consent under way.
    pub async fn put_oauth_consent(&self, c: OAuthConsent) -> Result<(), RunsError> {
        self.transact(move |tx| {
            tx.execute(
                "INSERT INTO oauth_consents (state_hash, tenant, user_id, provider, run_id, call_id, verifier, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![c.state_hash, c.owner.tenant, c.owner.user, c.owner.provider, c.run_id, c.call_id, c.verifier, c.created_at],
            )?;
            Ok(())
        })
        .await
    }

    /// Takes the consent of `state_hash` (it is gone after): a state works once.
    pub async fn take_oauth_consent(
        &self,
        state_hash: String,
    ) -> Result<Option<OAuthConsent>, RunsError> {
        self.transact(move |tx| {
            Ok(tx
                .query_row(
                    "DELETE FROM oauth_consents WHERE state_hash = ?1
                     RETURNING state_hash, tenant, user_id, provider, run_id, call_id, verifier, created_at",
                    [state_hash],
                    |r| {
                        Ok(OAuthConsent {
                            state_hash: r.get(0)?,
                            owner: OAuthOwner { tenant: r.get(1)?, user: r.get(2)?, provider: r.get(3)? },
                            run_id: r.get(4)?,
                            call_id: r.get(5)?,
                            verifier: r.get(6)?,
                            created_at: r.get(7)?,
                        })
                    },
                )
                .optional()?)
        })
        .await
    }

    /// The client registered at `endpoint` for `redirect_uri`, if any.
    pub fn oauth_client(
        &self,
        endpoint: &str,
        redirect_uri: &str,
    ) -> Result<Option<RegisteredClient>, RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .prepare_cached("SELECT client_id, sealed_secret FROM oauth_clients WHERE registration_endpoint = ?1 AND redirect_uri = ?2")?
                .query_row(params![endpoint, redirect_uri], |r| {
                    Ok(RegisteredClient { client_id: r.get(0)?, sealed_secret: r.get(1)? })
                })
                .optional()?)
        })
    }

    /// Keeps `client` as the one registered at `endpoint` for `redirect_uri`, unless
    /// another process kept one first; the one kept.
    pub async fn keep_oauth_client(
        &self,
        endpoint: String,
        redirect_uri: String,
        client: RegisteredClient,
    ) -> Result<RegisteredClient, RunsError> {
        self.transact(move |tx| {
            // The one kept first is answered (two processes registering at once).
            Ok(tx.query_row(
                "INSERT INTO oauth_clients (registration_endpoint, redirect_uri, client_id, sealed_secret, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (registration_endpoint, redirect_uri) DO UPDATE SET client_id = oauth_clients.client_id
                 RETURNING client_id, sealed_secret",
                params![endpoint, redirect_uri, client.client_id, client.sealed_secret, now_ms()],
                |r| Ok(RegisteredClient { client_id: r.get(0)?, sealed_secret: r.get(1)? }),
            )?)
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
    ) -> Result<(), RunsError> {
        self.transact(move |tx| {
            tx.execute(
                "DELETE FROM oauth_clients WHERE registration_endpoint = ?1 AND redirect_uri = ?2 AND client_id = ?3",
                params![endpoint, redirect_uri, client_id],
            )?;
            Ok(())
        })
        .await
    }
}
