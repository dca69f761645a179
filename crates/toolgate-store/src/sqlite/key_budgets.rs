//! Spend limits on issued keys, on SQLite: the `budgets` column of `api_keys` (a JSON
//! array), set after the key is created and read when a run is started with it.

use rusqlite::{OptionalExtension, params};

use super::{RunsError, SqliteStore};

impl SqliteStore {
    /// Sets key `name`'s budgets (JSON); whether there is such a key.
    pub async fn set_key_budgets(&self, name: &str, budgets: String) -> Result<bool, RunsError> {
        let name = name.to_string();
        self.transact(move |tx| {
            Ok(tx.execute(
                "UPDATE api_keys SET budgets = ?2 WHERE name = ?1",
                params![name, budgets],
            )? > 0)
        })
        .await
    }

    /// Key `name`'s budgets (JSON), if it has any.
    pub fn key_budgets(&self, name: &str) -> Result<Option<String>, RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .prepare_cached("SELECT budgets FROM api_keys WHERE name = ?1")?
                .query_row([name], |r| r.get::<_, Option<String>>(0))
                .optional()?
                .flatten())
        })
    }
}
