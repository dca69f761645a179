//! Runs nobody drives, taken up: at start and every few seconds the server looks for
//! runs in progress whose lease is free (their driver gave them back at a shutdown, or
//! died and its lease ran out) and drives each to its next pause or end. Of several
//! servers on one store, the first to take a run's lease drives it; the others are
//! refused and leave it. A call a dead driver left executing is never run again (the
//! loop records it interrupted).

use std::sync::Arc;
use std::time::Duration;

use super::{AppState, Drive};
use toolgate_runtime::run::LEASE_MS;

/// How often it looks: half a lease, so a dead driver's run waits at most one lease
/// and a half.
const EVERY: Duration = Duration::from_millis((LEASE_MS / 2) as u64);
/// Most runs taken up per look.
const BATCH: usize = 16;

/// Looks until shutdown.
pub fn spawn(state: Arc<AppState>) {
    tokio::spawn(async move {
        loop {
            look(&state).await;
            tokio::select! {
                _ = tokio::time::sleep(EVERY) => {}
                _ = state.shutdown.cancelled() => return,
            }
        }
    });
}

async fn look(state: &Arc<AppState>) {
    let ids = match state.runner.store.unheld_runs(BATCH).await {
        Ok(ids) => ids,
        Err(e) => {
            tracing::warn!(error = %e, "cannot look for runs nobody drives");
            return;
        }
    };
    for id in ids {
        if state.runner.active.has(&id) || state.shutdown.is_cancelled() {
            continue;
        }
        tracing::info!(run_id = %id, "taking up a run nobody drives (its driver stopped)");
        let driving = state.spawn_drive(Drive::TakeUp(id.clone()));
        tokio::spawn(async move {
            match driving.done.await {
                Ok(Ok(run)) => {
                    tracing::info!(run_id = %id, status = run.status.as_str(), "taken-up run driven")
                }
                Ok(Err(e)) => {
                    tracing::info!(run_id = %id, error = %e, "run not taken up")
                }
                Err(e) => {
                    tracing::warn!(run_id = %id, error = %e, "a taken-up run's drive stopped")
                }
            }
        });
    }
}
