//! While a run is driven: the lease keeper renews its lease (a third of its life at a
//! time) and the cancel watch follows the store's change feed for the run being
//! cancelled from elsewhere. Either stops what runs (through the drive's `Cancel`) when
//! the run is no longer this process's to drive.

use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::engine::Cancel;
use toolgate_protocol::RunStatus;
use toolgate_store::{Change, Store};

/// The keeper and the watch of one drive (one task); it stops when this is dropped.
pub(super) struct Keeper {
    task: JoinHandle<()>,
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long a drive goes before it follows the change feed. A drive that pauses or ends
/// sooner (a CLI run to its first pause) never opens the feed's connection; a cancel
/// made before then is seen by the status read that follows the subscription.
const WATCH_AFTER: Duration = Duration::from_millis(50);

/// Keeps `owner`'s lease of run `id` and watches for its cancel, stopping `cancel`'s
/// holder when either says so.
pub(super) fn keep(store: &Store, id: &str, owner: &str, cancel: &Cancel) -> Keeper {
    let (store, id, owner, cancel) = (
        store.clone(),
        id.to_string(),
        owner.to_string(),
        cancel.clone(),
    );
    let every = Duration::from_millis((super::LEASE_MS / 3) as u64);
    let task = tokio::spawn(
        async move {
            let mut renew_at = tokio::time::Instant::now() + every;
            tokio::time::sleep(WATCH_AFTER).await;
            // Subscribed before the status is read, so that no cancel falls between.
            let mut changes = store.watch();
            if matches!(store.run_status(&id).await, Ok(RunStatus::Cancelled)) {
                tracing::info!("cancelled from elsewhere; stopping the run here");
                cancel.cancel();
                return;
            }
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
                        if cancelled(&store, &id, change, &mut feed_open).await {
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

/// Whether `change` (or, when the watch fell behind, the run's status) says run `id`
/// was cancelled; a closed feed is noted in `feed_open`.
async fn cancelled(
    store: &Store,
    id: &str,
    change: Result<Change, RecvError>,
    feed_open: &mut bool,
) -> bool {
    match change {
        Ok(c) => c.run_id == id && c.status == RunStatus::Cancelled,
        // Fell behind: the run's status says it.
        Err(RecvError::Lagged(_)) => {
            matches!(store.run_status(id).await, Ok(RunStatus::Cancelled))
        }
        Err(RecvError::Closed) => {
            *feed_open = false;
            false
        }
    }
}
