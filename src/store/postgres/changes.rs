//! The change feed on PostgreSQL: LISTEN/NOTIFY carries every run's changes to every
//! worker on the database.

use super::PgStore;
use crate::store::Change;

impl PgStore {
    /// Every run's changes from now on, whoever makes them.
    pub fn watch(&self) -> tokio::sync::broadcast::Receiver<Change> {
        self.inner
            .feed
            .get_or_init(|| tokio::sync::broadcast::channel(1024).0)
            .subscribe()
    }
}
