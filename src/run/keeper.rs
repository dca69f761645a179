//! While a run is driven: the lease keeper renews its lease (a third of its life at a
//! time) and the cancel watch follows the store's change feed for the run being
//! cancelled from elsewhere. Either stops what runs (through the drive's `Cancel`) when
//! the run is no longer this process's to drive.

use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::engine::Cancel;
use crate::protocol::RunStatus;
use crate::store::Store;

/// The keeper and the watch of one drive; both stop when it is dropped.
pub(super) struct Keeper {
    tasks: [JoinHandle<()>; 2],
}

impl Drop for Keeper {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Keeps `owner`'s lease of run `id` and watches for its cancel, stopping `cancel`'s
/// holder when either says so.
pub(super) fn keep(store: &Store, id: &str, owner: &str, cancel: &Cancel) -> Keeper {
    // Subscribed before anything else happens, so that no cancel falls before it.
    let changes = store.watch();
    let watch = {
        let (store, id, cancel) = (store.clone(), id.to_string(), cancel.clone());
        tokio::spawn(
            async move {
                let mut changes = changes;
                loop {
                    let cancelled = match changes.recv().await {
                        Ok(c) => c.run_id == id && c.status == RunStatus::Cancelled,
                        // Fell behind: the run's status says it.
                        Err(RecvError::Lagged(_)) => {
                            matches!(store.run_status(&id).await, Ok(RunStatus::Cancelled))
                        }
                        Err(RecvError::Closed) => return,
                    };
                    if cancelled {
                        tracing::info!("cancelled from elsewhere; stopping the run here");
                        cancel.cancel();
                        return;
                    }
                }
            }
            .instrument(tracing::Span::current()),
        )
    };
    let renew = {
        let (store, id, owner, cancel) = (
            store.clone(),
            id.to_string(),
            owner.to_string(),
            cancel.clone(),
        );
        tokio::spawn(
            async move {
                let every = std::time::Duration::from_millis((super::LEASE_MS / 3) as u64);
                loop {
                    tokio::time::sleep(every).await;
                    match store.renew_lease(&id, &owner, super::LEASE_MS).await {
                        Ok(()) => tracing::debug!("lease renewed"),
                        Err(e) => {
                            // Cancelled or taken over: stop what is running.
                            tracing::warn!(error = %e, "lease lost; stopping the run here");
                            cancel.cancel();
                            return;
                        }
                    }
                }
            }
            .instrument(tracing::Span::current()),
        )
    };
    Keeper {
        tasks: [watch, renew],
    }
}
