//! A call that acts for the run's user through OAuth, the user not connected: the run
//! waits on an `authorization` item carrying the consent URL (its state bound to this
//! run, call and user). The OAuth callback decides the item: approved once the tokens
//! are stored (the call runs with them), denied with the refusal in words.

use serde_json::json;

use super::state::{Phase, TurnCall};
use super::{Live, Runner};
use crate::oauth::{OAuthBroker, owner_of};
use toolgate_protocol::{ItemKind, RequiredItem, events};
use toolgate_tool::oauth::OAuthProvider;

impl Runner {
    /// The broker of this runner's store for a run of `tenant`.
    pub fn oauth_broker(&self, tenant: Option<String>) -> OAuthBroker {
        OAuthBroker::new(
            self.store.clone(),
            std::sync::Arc::clone(&self.keyring),
            self.credentials_for(tenant),
            self.oauth_callback.clone(),
        )
    }

    /// The provider whose consent `c` waits for: its tool acts for the user through
    /// OAuth and the run's user has no tokens for it yet.
    pub(super) async fn consent_needed(&self, live: &Live, c: &TurnCall) -> Option<OAuthProvider> {
        let provider = live.toolkit.resolve(&c.call.name).ok()?.user_oauth()?;
        let owner = owner_of(&self.run_context(live), &provider.name).ok()?;
        match self.store.oauth_tokens(&owner).await {
            Ok(Some(_)) => None,
            Ok(None) => Some(provider),
            Err(e) => {
                tracing::warn!(error = %e, "the store could not say whether the user connected; the call goes ahead");
                None
            }
        }
    }

    /// Starts the consent and makes the call wait on its `authorization` item. A
    /// consent that cannot start leaves the call to run and fail in words.
    pub(super) async fn ask_consent(
        &self,
        live: &mut Live,
        c: &TurnCall,
        provider: &OAuthProvider,
    ) -> Phase {
        let context = self.run_context(live);
        let Ok(owner) = owner_of(&context, &provider.name) else {
            return Phase::Ready;
        };
        let broker = self.oauth_broker(context.tenant.clone());
        let url = match broker
            .begin(
                provider,
                owner.clone(),
                Some(live.run_id.clone()),
                Some(c.call.id.clone()),
            )
            .await
        {
            Ok(url) => url,
            Err(e) => {
                tracing::warn!(provider = %provider.name, error = %e, "a consent could not start; the call runs without a token");
                return Phase::Ready;
            }
        };
        let item = RequiredItem {
            call_id: c.call.id.clone(),
            kind: ItemKind::Authorization,
            tool: c.call.name.clone(),
            arguments: json!({
                "provider": provider.name,
                "user": owner.user,
                "consent_url": url,
            }),
            run_id: None,
            path: Vec::new(),
            reason: Some(format!(
                "'{}' acts for {} with {}, who has not connected it: open the consent URL",
                c.call.name, owner.user, provider.name
            )),
            expires_at: None,
            on_timeout: None,
            policy: None,
        };
        self.emit(events::ApprovalRequested {
            run_id: live.run_id.clone(),
            item: item.clone(),
        });
        live.pending_new.push(item);
        Phase::Waiting
    }

    /// For whom the run's calls run.
    fn run_context(&self, live: &Live) -> toolgate_tool::RunContext {
        toolgate_tool::RunContext {
            tenant: Some(super::paths::tenant_of(live.state.owner.as_ref()).to_string()),
            user: live.state.owner.as_ref().and_then(|o| o.user.clone()),
            run_id: Some(live.run_id.clone()),
            conversation_id: Some(live.conversation_id.clone()),
        }
    }
}

impl Runner {
    /// The OAuth providers run `run_id`'s tools act for a user through: what a consent
    /// completed for it (the CLI's loopback callback) exchanges its code with.
    pub async fn oauth_providers_of(
        &self,
        run_id: &str,
    ) -> Result<Vec<OAuthProvider>, super::RunError> {
        let (row, _) = self.store.run(run_id).await?;
        let state: super::RunState =
            self.opened(&row.state, &format!("run {}: its saved state", row.id))?;
        let (_, toolkit) = self.agent_of(&state)?;
        Ok(toolkit
            .tools()
            .iter()
            .filter_map(|t| t.user_oauth())
            .collect())
    }
}
