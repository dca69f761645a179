//! The runs being driven in this process, each with the signal that stops it, so a
//! cancel reaches a run at once in the process that drives it.

use std::sync::Arc;

/// Runs being driven in this process, by id, with the signal that stops each.
#[derive(Clone, Default)]
pub struct Active(Arc<std::sync::Mutex<std::collections::HashMap<String, crate::engine::Cancel>>>);

/// Removes a run from [`Active`] when its drive ends.
pub(crate) struct ActiveGuard {
    active: Active,
    run_id: String,
}

impl Active {
    pub(crate) fn register(&self, run_id: &str, cancel: &crate::engine::Cancel) -> ActiveGuard {
        if let Ok(mut m) = self.0.lock() {
            m.insert(run_id.to_string(), cancel.clone());
        }
        ActiveGuard {
            active: self.clone(),
            run_id: run_id.to_string(),
        }
    }

    /// Whether this process drives `run_id` now.
    pub fn has(&self, run_id: &str) -> bool {
        self.0.lock().is_ok_and(|m| m.contains_key(run_id))
    }

    /// Stops the drive of `run_id`, when this process has one.
    pub fn stop(&self, run_id: &str) -> bool {
        let cancel = self.0.lock().ok().and_then(|m| m.get(run_id).cloned());
        cancel.map(|c| c.cancel()).is_some()
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = self.active.0.lock() {
            m.remove(&self.run_id);
        }
    }
}
