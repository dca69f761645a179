//! Spend limits on issued keys, on PostgreSQL: the `budgets` column of `api_keys` (a
//! JSON array), set after the key is created and read when a run is started with it.

use super::prepared::Prepared;
use super::rows::get;
use super::run_rows::OrStore;
use super::{PgStore, StoreError};

impl PgStore {
    /// Sets key `name`'s budgets (JSON); whether there is such a key.
    pub async fn set_key_budgets(&self, name: &str, budgets: String) -> Result<bool, StoreError> {
        self.open_for_writes()?;
        let name = name.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let n = client
                .exec(
                    "UPDATE api_keys SET budgets = $2 WHERE name = $1",
                    &[&name, &budgets],
                )
                .await
                .or_store(&s)?;
            s.committed();
            Ok(n > 0)
        })
        .await
    }

    /// Key `name`'s budgets (JSON), if it has any.
    pub async fn key_budgets(&self, name: &str) -> Result<Option<String>, StoreError> {
        let name = name.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .row_opt("SELECT budgets FROM api_keys WHERE name = $1", &[&name])
                .await
                .or_store(&s)?;
            match row {
                Some(r) => get::<Option<String>>(&r, 0),
                None => Ok(None),
            }
        })
        .await
    }
}
