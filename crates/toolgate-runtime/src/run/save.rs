//! Saving a run's step: its state (sealed), the messages it added, its pending items
//! and the call records of the step, in one store transaction, as the holder of its
//! lease; the records are counted in the metrics once committed.

use super::{Live, RunError, Runner};
use toolgate_protocol::{CallStatus, ErrorKind, RunStatus};
use toolgate_store::{Refusal, RunSave, StoreError};
use toolgate_telemetry::metrics;

/// One state save.
pub(super) struct Save {
    pub(super) status: RunStatus,
    pub(super) last_error: Option<String>,
    pub(super) set_pending: Vec<(String, toolgate_store::PendingState)>,
    pub(super) release: bool,
}

impl Save {
    /// A save of one step that neither pauses nor ends the run.
    pub(super) fn step() -> Self {
        Self {
            status: RunStatus::InProgress,
            last_error: None,
            set_pending: Vec::new(),
            release: false,
        }
    }

    /// Gives the run back at a shutdown: still in progress, its lease let go, for the
    /// next process to take up.
    pub(super) fn hand_back() -> Self {
        Self {
            release: true,
            ..Self::step()
        }
    }

    pub(super) fn end(status: RunStatus, last_error: Option<String>) -> Self {
        Self {
            status,
            last_error,
            release: true,
            ..Self::step()
        }
    }
}

impl Runner {
    pub(super) async fn save(&self, live: &mut Live, save: Save) -> Result<(), RunError> {
        let records = std::mem::take(&mut live.records);
        let counted: Vec<(String, CallStatus, Option<ErrorKind>)> = match metrics::get() {
            Some(_) => records
                .iter()
                .map(|r| (r.tool.clone(), r.status, r.error_kind))
                .collect(),
            None => Vec::new(),
        };
        let first_seq = live.persisted;
        let secrets = super::sealing::secrets_of(live);
        let messages = live.state.messages[first_seq.min(live.state.messages.len())..]
            .iter()
            .map(|m| self.sealed(m, &secrets))
            .collect::<Result<Vec<_>, _>>()?;
        let mut set_pending = std::mem::take(&mut live.pending_updates);
        set_pending.extend(save.set_pending);
        let record = RunSave {
            status: save.status,
            state: self.sealed(&live.state, &secrets)?,
            iteration: live.state.iteration,
            last_error: save.last_error,
            add_pending: std::mem::take(&mut live.pending_new),
            records,
            messages,
            first_seq,
            set_pending,
            release: save.release,
            usage: live.state.usage,
            requests: std::mem::take(&mut live.requests),
        };
        let saved = self.store.save_run(&live.run_id, &live.owner, record).await;
        // The records are committed with the step (and even when the lease was lost).
        if saved.is_ok() || matches!(&saved, Err(StoreError::Refused(Refusal::LeaseLost, _))) {
            for (tool, status, kind) in &counted {
                metrics::call_recorded(
                    tool,
                    live.toolkit.resolve(tool).is_ok(),
                    *status,
                    kind.map(ErrorKind::as_str),
                );
            }
        }
        saved?;
        live.persisted = live.state.messages.len();
        Ok(())
    }
}
