//! Keys, secrets and stored responses through the facade: issued keys (hashed), sealed
//! secrets per tenant, and the Responses API's response objects.

use super::super::{
    Backend, KeyInfo, KeyLookup, NewKey, ResponseRow, SecretInfo, Store, StoreError,
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

    /// Sets (or replaces) secret `name` to `sealed`, an already sealed value.
    pub async fn set_secret(&self, name: &str, sealed: String) -> Result<(), StoreError> {
        self.set_secret_in("", name, sealed).await
    }

    /// [`Store::set_secret`], in `tenant`'s scope (`""`: the shared scope).
    pub async fn set_secret_in(
        &self,
        tenant: &str,
        name: &str,
        sealed: String,
    ) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.set_secret_in(tenant, name, sealed).await?),
            Backend::Postgres(s) => s.set_secret_in(tenant, name, sealed).await,
        }
    }

    /// Removes secret `name`; whether it was there.
    pub async fn remove_secret(&self, name: &str) -> Result<bool, StoreError> {
        self.remove_secret_in("", name).await
    }

    /// [`Store::remove_secret`], in `tenant`'s scope.
    pub async fn remove_secret_in(&self, tenant: &str, name: &str) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.remove_secret_in(tenant, name).await?),
            Backend::Postgres(s) => s.remove_secret_in(tenant, name).await,
        }
    }

    /// The sealed value of the shared secret `name`.
    pub async fn secret(&self, name: &str) -> Result<Option<String>, StoreError> {
        self.secret_for(None, name).await
    }

    /// The sealed value of secret `name` for a run of `tenant`: the tenant's own,
    /// else the shared one.
    pub async fn secret_for(
        &self,
        tenant: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        let (tenant, name) = (tenant.map(str::to_string), name.to_string());
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.secret_for(tenant.as_deref(), &name))
                    .await
            }
            Backend::Postgres(s) => s.secret_for(tenant.as_deref(), &name).await,
        }
    }

    /// Every shared secret's name, in order.
    pub async fn secrets(&self) -> Result<Vec<SecretInfo>, StoreError> {
        self.secrets_in("").await
    }

    /// Every secret's name in `tenant`'s scope (`""`: shared), in order.
    pub async fn secrets_in(&self, tenant: &str) -> Result<Vec<SecretInfo>, StoreError> {
        let tenant = tenant.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.secrets_in(&tenant)).await,
            Backend::Postgres(s) => s.secrets_in(&tenant).await,
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
