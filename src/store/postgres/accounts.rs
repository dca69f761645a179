//! Keys, secrets, stored responses and approval deadlines on PostgreSQL.

use super::{PgStore, StoreError};
use crate::store::{DueItem, KeyInfo, KeyLookup, NewKey, ResponseRow, SecretInfo, Waiting};

impl PgStore {
    pub async fn create_key(&self, _key: NewKey) -> Result<KeyInfo, StoreError> {
        Err(self.unbuilt("create_key"))
    }

    pub async fn revoke_key(&self, _name: &str) -> Result<bool, StoreError> {
        Err(self.unbuilt("revoke_key"))
    }

    pub async fn keys(&self) -> Result<Vec<KeyInfo>, StoreError> {
        Err(self.unbuilt("keys"))
    }

    pub async fn any_live_key(&self) -> Result<bool, StoreError> {
        Err(self.unbuilt("any_live_key"))
    }

    pub async fn key_by_hash(&self, _hash: &str) -> Result<KeyLookup, StoreError> {
        Err(self.unbuilt("key_by_hash"))
    }

    pub async fn set_secret_in(
        &self,
        _tenant: &str,
        _name: &str,
        _sealed: String,
    ) -> Result<(), StoreError> {
        Err(self.unbuilt("set_secret_in"))
    }

    pub async fn remove_secret_in(&self, _tenant: &str, _name: &str) -> Result<bool, StoreError> {
        Err(self.unbuilt("remove_secret_in"))
    }

    pub async fn secret_for(
        &self,
        _tenant: Option<&str>,
        _name: &str,
    ) -> Result<Option<String>, StoreError> {
        Err(self.unbuilt("secret_for"))
    }

    pub async fn secrets_in(&self, _tenant: &str) -> Result<Vec<SecretInfo>, StoreError> {
        Err(self.unbuilt("secrets_in"))
    }

    pub async fn create_response(
        &self,
        _id: &str,
        _run_id: &str,
        _previous_id: Option<&str>,
        _status: &str,
        _body: String,
        _input: String,
    ) -> Result<u32, StoreError> {
        Err(self.unbuilt("create_response"))
    }

    pub async fn update_response(
        &self,
        _id: &str,
        _status: &str,
        _body: String,
    ) -> Result<(), StoreError> {
        Err(self.unbuilt("update_response"))
    }

    pub async fn delete_response(&self, _id: &str) -> Result<bool, StoreError> {
        Err(self.unbuilt("delete_response"))
    }

    pub async fn response_input(&self, _id: &str) -> Result<Option<String>, StoreError> {
        Err(self.unbuilt("response_input"))
    }

    pub async fn response(&self, _id: &str) -> Result<Option<ResponseRow>, StoreError> {
        Err(self.unbuilt("response"))
    }

    pub async fn run_responses(&self, _run_id: &str) -> Result<Vec<ResponseRow>, StoreError> {
        Err(self.unbuilt("run_responses"))
    }

    pub async fn expire_due(&self, _tree: Option<String>) -> Result<Vec<DueItem>, StoreError> {
        Err(self.unbuilt("expire_due"))
    }

    pub async fn warn_due(&self, _lead_ms: i64) -> Result<Vec<DueItem>, StoreError> {
        Err(self.unbuilt("warn_due"))
    }

    pub async fn waiting_approvals(&self) -> Result<Waiting, StoreError> {
        Err(self.unbuilt("waiting_approvals"))
    }
}
