//! The broker as the tools see it: the run's tenant and user say whose tokens.

use async_trait::async_trait;
use toolgate_store::oauth::OAuthOwner;
use toolgate_tool::RunContext;
use toolgate_tool::oauth::{OAuthProvider, UserTokens};

use super::OAuthBroker;

/// Whose tokens a call of `run` uses for `provider`: its tenant's, its user's.
pub fn owner_of(run: &RunContext, provider: &str) -> Result<OAuthOwner, String> {
    let user = run.user.clone().filter(|u| !u.is_empty()).ok_or_else(|| {
        format!("this run has no user to act for with {provider}: start it as a user (an identity that names one)")
    })?;
    Ok(OAuthOwner {
        tenant: run
            .tenant
            .clone()
            .unwrap_or_else(|| toolgate_protocol::identity::DEFAULT_TENANT.to_string()),
        user,
        provider: provider.to_string(),
    })
}

#[async_trait]
impl UserTokens for OAuthBroker {
    async fn token(
        &self,
        provider: &OAuthProvider,
        run: &RunContext,
    ) -> Result<Option<String>, String> {
        let owner = owner_of(run, &provider.name)?;
        self.access_token(provider, &owner)
            .await
            .map_err(|e| e.to_string())
    }

    async fn after_unauthorized(
        &self,
        provider: &OAuthProvider,
        run: &RunContext,
    ) -> Result<Option<String>, String> {
        let owner = owner_of(run, &provider.name)?;
        self.after_unauthorized(provider, &owner)
            .await
            .map_err(|e| e.to_string())
    }
}
