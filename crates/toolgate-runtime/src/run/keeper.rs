//! While a run is driven: the lease keeper renews its lease (a third of its life at a
//! time) and the cancel watch follows the store's change feed for the run being
//! cancelled from elsewhere. Either stops what runs (through the drive's `Cancel`) when
//! the run is no longer this process's to drive.

use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::engine::Cancel;
use toolgate_protocol::RunStatus;
use toolgate_store::Store;

/// The keeper and the watch of one drive (one task); it stops when this is dropped.
pub(super) struct Keeper {
    task: JoinHandle<()>,
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Keeps `owner`'s lease of run `id` and watches for its cancel, stopping `cancel`'s
/// holder when either says so.
pub(super) fn keep(store: &Store, id: &str, owner: &str, cancel: &Cancel) -> Keeper {
    // Subscribed before anything else happens, so that no cancel falls before it.
    let changes = store.watch();
    let (store, id, owner, cancel) = (
        store.clone(),
        id.to_string(),
        owner.to_string(),
        cancel.clone(),
    );
    let every = std::time::Duration::from_millis((super::LEASE_MS / 3) as u64);
    let task = tokio::spawn(
        async move {
            let mut changes = changes;
            let mut renew_at = tokio::time::Instant::now() + every;
            // Without a feed (it closed), the renewal still finds a cancel: the lease is gone.
            let mut feed_open = true;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(renew_at) => {
                        renew_at += every;
                        if let Err(e) = store.renew_lease(&id, &owner, super::LEASE_MS).await {
                            // Cancelled or taken over: stop what is running.
                            tracing::warn!(error = %e, "lease lost; stopping the run here");
                            cancel.cancel();
                            return;
                        }
                        tracing::debug!("lease renewed");
                    }
                    change = changes.recv(), if feed_open => {
                        let cancelled = match change {
                            Ok(c) => c.run_id == id && c.status == RunStatus::Cancelled,
                            // Fell behind: the run's status says it.
                            Err(RecvError::Lagged(_)) => {
                                matches!(store.run_status(&id).await, Ok(RunStatus::Cancelled))
                            }
                            Err(RecvError::Closed) => {
                                feed_open = false;
                                false
                            }
                        };
                        if cancelled {
                            tracing::info!("cancelled from elsewhere; stopping the run here");
                            cancel.cancel();
                            return;
                        }
                    }
                }
            }
        }
        .instrument(tracing::Span::current()),
    );
    Keeper { task }
}
