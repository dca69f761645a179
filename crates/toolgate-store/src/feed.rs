//! The change feed: what happened to which run, in the order the store committed it,
//! seen by every process on the store whoever made the change. `Store::watch` gives a
//! stream of [`Change`]s; SQLite's side (one poller per store, reading the rows the
//! schema's triggers write) is in `changes.rs`.

use toolgate_protocol::RunStatus;

/// What kind of change a run saw.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "snake_case")]
pub enum ChangeKind {
    /// The run was created.
    Created,
    /// Its status moved (it paused, ended, was taken up again, was cancelled).
    Status,
    /// A step of it was saved (its state, messages and the step's call records), with
    /// its status unchanged.
    Saved,
    /// Items were added to wait for a person or the client.
    PendingAdded,
    /// An item was decided (approved, denied, answered).
    Decided,
}

impl ChangeKind {
    /// The stored name (`FromStr` reads it back).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One committed change of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Its place in the store's order (increasing).
    pub seq: i64,
    pub run_id: String,
    /// The run's tenant: a watcher shows a caller only its own.
    pub tenant: String,
    pub kind: ChangeKind,
    /// The run's status after the change.
    pub status: RunStatus,
    /// The lease owner driving the run when it changed, if any.
    pub origin: Option<String>,
}

impl Change {
    /// Whether a run this process drives made it (the driver tells of it itself).
    pub fn made_here(&self) -> bool {
        self.origin
            .as_deref()
            .is_some_and(super::lease::is_this_process)
    }
}

/// Waits on `changes` for the next change of run `run_id`. True when it changed, or
/// when the watcher fell behind (read the run again either way); false once the feed
/// has closed.
pub async fn next_change_of(
    changes: &mut tokio::sync::broadcast::Receiver<Change>,
    run_id: &str,
) -> bool {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match changes.recv().await {
            Ok(c) if c.run_id != run_id => continue,
            Ok(_) | Err(RecvError::Lagged(_)) => return true,
            Err(RecvError::Closed) => return false,
        }
    }
}

/// How a watcher of the feed fares: a change, or the news that it fell behind by this
/// many (it should read what it follows again).
pub type Watched = Result<Change, tokio::sync::broadcast::error::RecvError>;
