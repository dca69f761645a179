//! The change feed on PostgreSQL: LISTEN/NOTIFY carries every run's changes to every
//! worker on the database (the schema's triggers notify; `listener.rs` hears).

use std::sync::Arc;

use super::{PgStore, listener};
use crate::Change;

impl PgStore {
    /// Every run's changes from now on, whoever makes them. The first watcher starts
    /// the store's one listener and waits (a few seconds at most) until it listens.
    pub fn watch(&self) -> tokio::sync::broadcast::Receiver<Change> {
        self.inner
            .feed
            .get_or_init(|| {
                let (tx, _) = tokio::sync::broadcast::channel(listener::BACKLOG);
                match self.runtime() {
                    Ok(rt) => listener::start(
                        rt,
                        Arc::downgrade(&self.inner),
                        self.inner.config.clone(),
                        tx.clone(),
                    ),
                    Err(e) => {
                        tracing::error!(error = %e, "the change feed cannot start; other workers' changes are not seen")
                    }
                }
                tx
            })
            .subscribe()
    }
}
