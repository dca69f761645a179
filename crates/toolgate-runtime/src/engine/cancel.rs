//! Cancelling a batch: one handle, cloned to every call, that any holder may trigger.

use std::sync::Arc;

use tokio::sync::watch;

/// A cancellation signal. Cloning shares it.
#[derive(Clone, Debug)]
pub struct Cancel {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Self::new()
    }
}

impl Cancel {
    pub fn new() -> Self {
        Self {
            tx: Arc::new(watch::channel(false).0),
        }
    }

    /// Stops every call that watches this signal.
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives as long as `self`, so the wait ends only by cancellation.
        let _ = rx.wait_for(|c| *c).await;
    }
}
