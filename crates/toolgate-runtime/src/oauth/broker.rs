//! The OAuth broker: consents begun and completed, tokens kept sealed per (tenant,
//! user, provider), and an access token handed out, refreshed when it is about to
//! expire or was refused. Tokens leave it only as the return value of
//! [`OAuthBroker::access_token`]; its errors never carry one.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use toolgate_protocol::clock::now_ms;
use toolgate_store::oauth::{OAuthConsent, OAuthOwner, RegisteredClient, SealedTokens};
use toolgate_store::{Store, StoreError};
use toolgate_tool::oauth::{
    ClientAuth, Consent, Endpoints, OAuthError, OAuthProvider, Tokens, exchange_code, refresh,
    register, revoke_token,
};
use toolgate_tool::secrets::Keyring;

/// How long a consent waits for its callback: 15 minutes.
pub const CONSENT_TTL_MS: i64 = 15 * 60 * 1000;

/// Why the broker failed, in words (never a token).
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(transparent)]
    OAuth(#[from] OAuthError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the stored OAuth tokens cannot be opened: {0}")]
    Sealing(String),
    #[error("this consent link is unknown or was already used; start the connection again")]
    UnknownState,
    #[error("this consent link expired (after 15 minutes); start the connection again")]
    Expired,
    #[error("no OAuth provider named '{0}' is declared")]
    UnknownProvider(String),
}

/// What the authorization server sent back to the callback.
#[derive(Debug, Clone, Default)]
pub struct Callback {
    pub state: String,
    pub code: Option<String>,
    /// `access_denied` when the user refused, or another RFC 6749 §4.1.2.1 error.
    pub error: Option<String>,
    pub error_description: Option<String>,
}

/// A completed callback: whose consent, for which paused call, and how it ended.
#[derive(Debug, Clone)]
pub struct Completed {
    pub owner: OAuthOwner,
    pub run_id: Option<String>,
    pub call_id: Option<String>,
    /// `Err`: the user refused (or the server failed), in a sentence for the model.
    pub outcome: Result<(), String>,
}

/// What the provider was told of a revoked connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtProvider {
    /// Its revocation endpoint revoked the tokens (RFC 7009).
    Revoked,
    /// It has no revocation endpoint (none given, none in its metadata).
    NoEndpoint,
    /// Its declaration is not at hand (the tool that declares it is not loaded here).
    NotDeclared,
    /// It could not be told: why, in words.
    Failed(String),
}

/// Consents and tokens of one store, sealed with its key.
#[derive(Clone)]
pub struct OAuthBroker {
    store: Store,
    keyring: Arc<Keyring>,
    credentials: toolgate_tool::Resolver,
    /// The callback URL the authorization server sends the user back to.
    pub redirect_uri: String,
}

impl std::fmt::Debug for OAuthBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthBroker")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl OAuthBroker {
    pub fn new(
        store: Store,
        keyring: Arc<Keyring>,
        credentials: toolgate_tool::Resolver,
        redirect_uri: String,
    ) -> Self {
        Self {
            store,
            keyring,
            credentials,
            redirect_uri,
        }
    }

    /// Starts a consent for `owner` (for a paused call, when given): the URL the user
    /// opens. Its state is kept only as a hash, with the PKCE verifier sealed.
    pub async fn begin(
        &self,
        provider: &OAuthProvider,
        owner: OAuthOwner,
        run_id: Option<String>,
        call_id: Option<String>,
    ) -> Result<String, BrokerError> {
        let endpoints = Endpoints::of(provider).await?;
        let client = self.client_of(provider, &endpoints).await?;
        let consent = Consent::begin(provider, &endpoints, &client.id, &self.redirect_uri)?;
        let verifier = self.seal(&consent.verifier)?;
        self.store
            .put_oauth_consent(OAuthConsent {
                state_hash: state_hash(&consent.state),
                owner,
                run_id,
                call_id,
                verifier,
                created_at: now_ms(),
            })
            .await?;
        Ok(consent.url)
    }

    /// Completes the consent `answer.state` names (once): the code exchanged and the
    /// tokens stored, or the refusal told. `provider_of` finds the declaration by name.
    pub async fn complete(
        &self,
        answer: &Callback,
        provider_of: impl Fn(&str) -> Option<OAuthProvider>,
    ) -> Result<Completed, BrokerError> {
        let consent = self
            .store
            .take_oauth_consent(&state_hash(&answer.state))
            .await?
            .ok_or(BrokerError::UnknownState)?;
        if now_ms() - consent.created_at > CONSENT_TTL_MS {
            return Err(BrokerError::Expired);
        }
        let provider = provider_of(&consent.owner.provider)
            .ok_or_else(|| BrokerError::UnknownProvider(consent.owner.provider.clone()))?;
        let outcome = match (&answer.error, &answer.code) {
            (Some(error), _) => Err(refused(
                &provider.name,
                error,
                answer.error_description.as_deref(),
            )),
            (None, None) => Err(format!(
                "{}: the callback brought no authorization code",
                provider.name
            )),
            (None, Some(code)) => {
                let verifier = self.open(&consent.verifier)?;
                let endpoints = Endpoints::of(&provider).await?;
                let client = self.client_of(&provider, &endpoints).await?;
                let tokens = exchange_code(
                    &provider,
                    &endpoints,
                    &client,
                    code,
                    &verifier,
                    &self.redirect_uri,
                )
                .await;
                let mut tokens = self
                    .forget_unknown(&provider, &endpoints, &client, tokens)
                    .await?;
                if provider.registers() {
                    tokens.client_id = Some(client.id);
                    tokens.client_secret = client.secret;
                }
                self.keep(consent.owner.clone(), &tokens).await?;
                tracing::info!(tenant = %consent.owner.tenant, user = %consent.owner.user, provider = %provider.name, "a user connected an OAuth provider");
                Ok(())
            }
        };
        Ok(Completed {
            owner: consent.owner,
            run_id: consent.run_id,
            call_id: consent.call_id,
            outcome,
        })
    }

    /// The access token of `owner`, refreshed first when it expires within a minute;
    /// `None` when the user has not connected (or must connect again).
    pub async fn access_token(
        &self,
        provider: &OAuthProvider,
        owner: &OAuthOwner,
    ) -> Result<Option<String>, BrokerError> {
        let Some(tokens) = self.tokens(owner).await? else {
            return Ok(None);
        };
        if !tokens.expiring(now_ms()) {
            return Ok(Some(tokens.access_token));
        }
        self.refreshed(provider, owner, &tokens).await
    }

    /// After the resource refused the token (401): refreshed once; `None` when there
    /// is nothing to refresh with (the user must connect again).
    pub async fn after_unauthorized(
        &self,
        provider: &OAuthProvider,
        owner: &OAuthOwner,
    ) -> Result<Option<String>, BrokerError> {
        match self.tokens(owner).await? {
            Some(tokens) => self.refreshed(provider, owner, &tokens).await,
            None => Ok(None),
        }
    }

    async fn refreshed(
        &self,
        provider: &OAuthProvider,
        owner: &OAuthOwner,
        old: &Tokens,
    ) -> Result<Option<String>, BrokerError> {
        if old.refresh_token.is_none() {
            self.store.remove_oauth_tokens(owner.clone()).await?;
            return Ok(None);
        }
        let endpoints = Endpoints::of(provider).await?;
        let client = self.client_for(provider, &endpoints, old).await?;
        let refreshed = refresh(provider, &endpoints, &client, old).await;
        match self
            .forget_unknown(provider, &endpoints, &client, refreshed)
            .await
        {
            Ok(new) => {
                self.keep(owner.clone(), &new).await?;
                tracing::debug!(provider = %provider.name, user = %owner.user, "an OAuth access token was refreshed");
                Ok(Some(new.access_token))
            }
            // Refused; or a registered client the server forgot, its refresh tokens
            // gone with it (a declared client it does not know is the declaration's
            // mistake: told, the tokens kept).
            Err(BrokerError::OAuth(
                why @ (OAuthError::Refused(_) | OAuthError::UnknownClient(_)),
            )) if provider.registers() || matches!(why, OAuthError::Refused(_)) => {
                tracing::info!(provider = %provider.name, user = %owner.user, why = %why, "a refresh was refused; the user must connect again");
                self.store.remove_oauth_tokens(owner.clone()).await?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Revokes `owner`'s connection: the tokens forgotten here, and revoked at the
    /// provider's revocation endpoint (RFC 7009: the refresh token, which takes the
    /// grant's access tokens with it, then the access token) when `provider` is its
    /// declaration and it has one. `None` when there was no connection. The provider
    /// failing to answer does not keep the connection: it is gone here either way.
    pub async fn revoke(
        &self,
        provider: Option<&OAuthProvider>,
        owner: &OAuthOwner,
    ) -> Result<Option<AtProvider>, BrokerError> {
        let tokens = self.tokens(owner).await;
        if !self.store.remove_oauth_tokens(owner.clone()).await? {
            return Ok(None);
        }
        let (Some(provider), Ok(Some(tokens))) = (provider, tokens) else {
            return Ok(Some(AtProvider::NotDeclared));
        };
        let told = self.tell_revoked(provider, &tokens).await;
        if let AtProvider::Failed(why) = &told {
            tracing::warn!(provider = %provider.name, user = %owner.user, why = %why, "a revoked connection's tokens could not be revoked at the provider");
        }
        Ok(Some(told))
    }

    async fn tell_revoked(&self, provider: &OAuthProvider, tokens: &Tokens) -> AtProvider {
        let endpoints = match Endpoints::of(provider).await {
            Ok(e) => e,
            Err(e) => return AtProvider::Failed(e.to_string()),
        };
        let Some(endpoint) = endpoints.revocation.clone() else {
            return AtProvider::NoEndpoint;
        };
        let client = match self.client_for(provider, &endpoints, tokens).await {
            Ok(c) => c,
            Err(e) => return AtProvider::Failed(e.to_string()),
        };
        let mut revoke = vec![(tokens.access_token.as_str(), "access_token")];
        if let Some(refresh) = &tokens.refresh_token {
            revoke.insert(0, (refresh.as_str(), "refresh_token"));
        }
        for (token, hint) in revoke {
            if let Err(e) = revoke_token(&provider.name, &endpoint, &client, token, hint).await {
                return AtProvider::Failed(e.to_string());
            }
        }
        AtProvider::Revoked
    }

    /// The client `tokens` were issued to: the registered one they name, else the
    /// provider's.
    async fn client_for(
        &self,
        provider: &OAuthProvider,
        endpoints: &Endpoints,
        tokens: &Tokens,
    ) -> Result<ClientAuth, BrokerError> {
        match (&tokens.client_id, provider.registers()) {
            (Some(id), true) => Ok(ClientAuth {
                id: id.clone(),
                secret: tokens.client_secret.clone(),
            }),
            _ => self.client_of(provider, endpoints).await,
        }
    }

    /// The tokens of `owner`, opened.
    async fn tokens(&self, owner: &OAuthOwner) -> Result<Option<Tokens>, BrokerError> {
        let Some(stored) = self.store.oauth_tokens(owner).await? else {
            return Ok(None);
        };
        let json = self.open(&stored.sealed)?;
        serde_json::from_str(&json)
            .map(Some)
            .map_err(|e| BrokerError::Sealing(format!("not tokens: {:?}", e.classify())))
    }

    async fn keep(&self, owner: OAuthOwner, tokens: &Tokens) -> Result<(), BrokerError> {
        let json = serde_json::to_string(tokens)
            .map_err(|e| BrokerError::Sealing(format!("{:?}", e.classify())))?;
        let sealed = SealedTokens {
            sealed: self.seal(&json)?,
            scope: tokens.scope.clone(),
            expires_at: tokens.expires_at,
        };
        Ok(self.store.set_oauth_tokens(owner, sealed).await?)
    }

    /// The client toolgate is at `provider`'s authorization server: the declared one,
    /// else the one it registered itself as (RFC 7591), registering now when it has none
    /// for this callback URL yet.
    async fn client_of(
        &self,
        provider: &OAuthProvider,
        endpoints: &Endpoints,
    ) -> Result<ClientAuth, BrokerError> {
        if !provider.registers() {
            return Ok(ClientAuth {
                id: provider.client_id.clone(),
                secret: self.client_secret(provider).await?,
            });
        }
        let endpoint = endpoints.registration.as_deref().ok_or_else(|| {
            OAuthError::Declaration(format!(
                "oauth '{}': no client_id is declared and its authorization server offers no \
                 dynamic client registration; register toolgate there and declare the client_id",
                provider.name
            ))
        })?;
        let kept = match self
            .store
            .oauth_client(endpoint, &self.redirect_uri)
            .await?
        {
            Some(kept) => kept,
            None => {
                let made = register(&provider.name, endpoint, &self.redirect_uri).await?;
                tracing::info!(provider = %provider.name, client_id = %made.id, "toolgate registered itself as an OAuth client");
                let sealed_secret = made.secret.as_deref().map(|s| self.seal(s)).transpose()?;
                let registered = RegisteredClient {
                    client_id: made.id,
                    sealed_secret,
                };
                self.store
                    .keep_oauth_client(endpoint, &self.redirect_uri, registered)
                    .await?
            }
        };
        Ok(ClientAuth {
            id: kept.client_id,
            secret: kept
                .sealed_secret
                .as_deref()
                .map(|s| self.open(s))
                .transpose()?,
        })
    }

    /// `answer`, after forgetting a registered client the token endpoint no longer
    /// knows (the next consent registers again).
    async fn forget_unknown(
        &self,
        provider: &OAuthProvider,
        endpoints: &Endpoints,
        client: &ClientAuth,
        answer: Result<Tokens, OAuthError>,
    ) -> Result<Tokens, BrokerError> {
        if let (Err(OAuthError::UnknownClient(_)), true, Some(endpoint)) = (
            &answer,
            provider.registers(),
            endpoints.registration.as_deref(),
        ) {
            tracing::info!(provider = %provider.name, "the authorization server no longer knows toolgate's registered client; it registers again at the next consent");
            self.store
                .forget_oauth_client(endpoint, &self.redirect_uri, &client.id)
                .await?;
        }
        Ok(answer?)
    }

    async fn client_secret(&self, provider: &OAuthProvider) -> Result<Option<String>, BrokerError> {
        let Some(source) = provider.secret().map_err(OAuthError::Declaration)? else {
            return Ok(None);
        };
        let resolver = self.credentials.clone();
        let how = source.how_to_set();
        let value = tokio::task::spawn_blocking(move || (resolver.0)(&source))
            .await
            .map_err(|e| OAuthError::Secret(e.to_string()))?
            .map_err(OAuthError::Secret)?;
        value.map(Some).ok_or_else(|| {
            OAuthError::Secret(format!("{} has no value: set {how}", provider.name)).into()
        })
    }

    fn seal(&self, plain: &str) -> Result<String, BrokerError> {
        self.keyring
            .seal(plain)
            .map_err(|e| BrokerError::Sealing(e.to_string()))
    }

    fn open(&self, sealed: &str) -> Result<String, BrokerError> {
        self.keyring
            .open_token(sealed)
            .map_err(|e| BrokerError::Sealing(e.to_string()))
    }
}

/// The hex SHA-256 of a state: what the store keeps instead of it.
fn state_hash(state: &str) -> String {
    Sha256::digest(state.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The sentence for an authorization error on the callback (RFC 6749 §4.1.2.1).
fn refused(provider: &str, error: &str, description: Option<&str>) -> String {
    let what = match error {
        "access_denied" => "the user refused to connect".to_string(),
        other => format!("the authorization server refused the request [{other}]"),
    };
    let detail = description
        .filter(|d| d.len() <= 200)
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    format!("{provider}: {what}{detail}; the call was not made")
}
