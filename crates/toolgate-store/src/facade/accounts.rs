//! Keys, secrets and stored responses through the facade: issued keys (hashed), sealed
//! secrets per tenant, and the Responses API's response objects.

use super::super::{
    Backend, KeyInfo, KeyLookup, NewKey, ResponseRow, SecretInfo, SecretScope, Store, StoreError,
};

impl Store {
    /// Stores a new key; refused when the name is taken (a revoked key keeps its name).
    pub async fn create_key(&self, key: NewKey) -> Result<KeyInfo, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.create_key(key).await?),
            Backend::Postgres(s) => s.create_key(key).await,
        }
    }

    /// Revokes key `name`; whether there was such a key not yet revoked.
    pub async fn revoke_key(&self, name: &str) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.revoke_key(name).await?),
            Backend::Postgres(s) => s.revoke_key(name).await,
        }
    }

    /// Changes key `name` (not revoked); whether there was such a key.
    pub async fn update_key(
        &self,
        name: &str,
        change: crate::KeyChange,
    ) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.update_key(name, change).await?),
            Backend::Postgres(s) => s.update_key(name, change).await,
        }
    }

    /// Every issued key, revoked ones included, oldest first.
    pub async fn keys(&self) -> Result<Vec<KeyInfo>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(|s| s.keys()).await,
            Backend::Postgres(s) => s.keys().await,
        }
    }

    /// Whether any issued key is still usable (then a server needs a key from
    /// everyone).
    pub async fn any_live_key(&self) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(|s| s.any_live_key()).await,
            Backend::Postgres(s) => s.any_live_key().await,
        }
    }

    /// The key whose SHA-256 (hex) is `hash`.
    pub async fn key_by_hash(&self, hash: &str) -> Result<KeyLookup, StoreError> {
        let hash = hash.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.key_by_hash(&hash)).await,
            Backend::Postgres(s) => s.key_by_hash(&hash).await,
        }
    }

    /// Sets (or replaces) secret `name` of `scope` to `sealed`, an already sealed value.
    pub async fn set_secret(
        &self,
        scope: SecretScope<'_>,
        name: &str,
        sealed: String,
    ) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.set_secret(scope, name, sealed).await?),
            Backend::Postgres(s) => s.set_secret(scope, name, sealed).await,
        }
    }

    /// Removes secret `name` of `scope`; whether it was there.
    pub async fn remove_secret(
        &self,
        scope: SecretScope<'_>,
        name: &str,
    ) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.remove_secret(scope, name).await?),
            Backend::Postgres(s) => s.remove_secret(scope, name).await,
        }
    }

    /// The sealed value of secret `name`: the shared one, or for a run of a tenant, the
    /// tenant's own, else the shared one.
    pub async fn secret(
        &self,
        scope: SecretScope<'_>,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        let (tenant, name) = (owned(scope), name.to_string());
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.secret(SecretScope::of(tenant.as_deref()), &name))
                    .await
            }
            Backend::Postgres(s) => s.secret(scope, &name).await,
        }
    }

    /// Every secret's name in `scope` (the shared ones: only those), in order.
    pub async fn secrets(&self, scope: SecretScope<'_>) -> Result<Vec<SecretInfo>, StoreError> {
        let tenant = owned(scope);
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.secrets(SecretScope::of(tenant.as_deref())))
                    .await
            }
            Backend::Postgres(s) => s.secrets(scope).await,
        }
    }

    /// Records a new response of run `run_id`, at the run's next step, and returns that
    /// step. Refused when the run does not exist. `input` is the request's input items
    /// (a JSON array), kept for `input_items`.
    pub async fn create_response(
        &self,
        id: &str,
        run_id: &str,
        previous_id: Option<&str>,
        status: &str,
        body: String,
        input: String,
    ) -> Result<u32, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s
                .create_response(id, run_id, previous_id, status, body, input)
                .await?),
            Backend::Postgres(s) => {
                s.create_response(id, run_id, previous_id, status, body, input)
                    .await
            }
        }
    }

    /// Replaces a response's status and body (as it is streamed, and once it ends).
    pub async fn update_response(
        &self,
        id: &str,
        status: &str,
        body: String,
    ) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.update_response(id, status, body).await?),
            Backend::Postgres(s) => s.update_response(id, status, body).await,
        }
    }

    /// Deletes one response by its exact id; false when there was none. Its run, the
    /// run's records and the other responses of the run stay.
    pub async fn delete_response(&self, id: &str) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.delete_response(id).await?),
            Backend::Postgres(s) => s.delete_response(id).await,
        }
    }

    /// The input items response `id` was created with (a JSON array), if it exists.
    pub async fn response_input(&self, id: &str) -> Result<Option<String>, StoreError> {
        let id = id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.response_input(&id)).await,
            Backend::Postgres(s) => s.response_input(&id).await,
        }
    }

    /// One response by its exact id.
    pub async fn response(&self, id: &str) -> Result<Option<ResponseRow>, StoreError> {
        let id = id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.response(&id)).await,
            Backend::Postgres(s) => s.response(&id).await,
        }
    }

    /// A run's responses, in step order.
    pub async fn run_responses(&self, run_id: &str) -> Result<Vec<ResponseRow>, StoreError> {
        let id = run_id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.run_responses(&id)).await,
            Backend::Postgres(s) => s.run_responses(&id).await,
        }
    }
}

/// `scope`'s tenant, owned (to move to the blocking pool); `None`: the shared scope.
fn owned(scope: SecretScope<'_>) -> Option<String> {
    match scope {
        SecretScope::Shared => None,
        SecretScope::Tenant(t) => Some(t.to_string()),
    }
}
