//! Spend limits on issued keys through the facade (`keys create --budget`): stored as
//! JSON beside the key, read back as budgets when a run is started with the key.

use super::super::{Backend, Store, StoreError};
use toolgate_protocol::budget::Budget;

impl Store {
    /// Sets the budgets of key `name`; whether there is such a key.
    pub async fn set_key_budgets(
        &self,
        name: &str,
        budgets: &[Budget],
    ) -> Result<bool, StoreError> {
        let json = serde_json::to_string(budgets)
            .map_err(|e| StoreError::Corrupt(format!("budgets could not be written: {e}")))?;
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.set_key_budgets(name, json).await?),
            Backend::Postgres(s) => s.set_key_budgets(name, json).await,
        }
    }

    /// The budgets of key `name` (none for an unknown key or one without budgets).
    pub async fn key_budgets(&self, name: &str) -> Result<Vec<Budget>, StoreError> {
        let stored = match &self.backend {
            Backend::Sqlite(s) => {
                let name = name.to_string();
                s.blocking(move |s| s.key_budgets(&name)).await?
            }
            Backend::Postgres(s) => s.key_budgets(name).await?,
        };
        match stored {
            None => Ok(Vec::new()),
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                StoreError::Corrupt(format!(
                    "key {name}: its stored budgets cannot be read: {e}"
                ))
            }),
        }
    }
}
