//! Continuing a run: waiting out a dead holder's lease, taking up a run nobody drives,
//! expiring its deadlines first, and acquiring its lease before the loop drives it.

use super::{Additions, LEASE_MS, RunError, Runner};
use toolgate_protocol::{RunObject, RunStatus};
use toolgate_store::Refusal;

impl Runner {
    /// Continues a run: one paused with every item now resolved, one that failed on a
    /// model error, or one whose process died. Refused while another process holds it.
    /// A sub-agent's run continues through the top run of its tree, which continues it
    /// and then the runs above it.
    ///
    /// A lease held by a process that stopped renewing it (it died, or its machine did)
    /// is waited out: the resume goes on once the lease has run out (at most
    /// [`LEASE_MS`]); a lease its holder renews meanwhile is refused.
    pub async fn resume(&self, run_id: &str) -> Result<RunObject, RunError> {
        self.resume_with(run_id, Additions::default()).await
    }

    /// [`Runner::resume`], the client's tools and output format replaced where
    /// `additions` says (they apply to the top run).
    pub async fn resume_with(
        &self,
        run_id: &str,
        additions: Additions,
    ) -> Result<RunObject, RunError> {
        match self.take_up_with(run_id, additions.clone()).await {
            Err(RunError::Refused {
                kind: Refusal::LeaseHeld,
                message,
            }) => {
                if self.lease_ran_out(run_id).await? {
                    self.take_up_with(run_id, additions).await
                } else {
                    Err(RunError::refused(Refusal::LeaseHeld, message))
                }
            }
            other => other,
        }
    }

    /// Waits for the lease of run `id` to run out unrenewed; false when its holder
    /// renewed it (or another process took it) meanwhile.
    async fn lease_ran_out(&self, id: &str) -> Result<bool, RunError> {
        let look = |id: String| async move {
            let (row, _) = self.store.run(&id).await?;
            Ok::<_, RunError>((row.lease_owner, row.lease_until))
        };
        let before = look(id.to_string()).await?;
        let Some(until) = before.1 else {
            return Ok(true);
        };
        let left = (until - toolgate_protocol::clock::now_ms()).clamp(0, LEASE_MS) as u64;
        tracing::info!(
            run_id = id,
            holder = before.0.as_deref().unwrap_or("?"),
            wait_ms = left,
            "the run's lease is held; waiting to see whether its holder renews it"
        );
        tokio::time::sleep(std::time::Duration::from_millis(left + 100)).await;
        Ok(look(id.to_string()).await? == before)
    }

    /// [`Runner::resume`] without waiting for a held lease: what a server taking up
    /// runs nobody drives does (another server may have taken it first).
    pub async fn take_up(&self, run_id: &str) -> Result<RunObject, RunError> {
        self.take_up_with(run_id, Additions::default()).await
    }

    async fn take_up_with(
        &self,
        run_id: &str,
        additions: Additions,
    ) -> Result<RunObject, RunError> {
        let id = run_id.to_string();
        let root = self.store.root_run(&id).await?;
        // Deadlines first: an approval that expired is denied (or cancels the run).
        if self
            .expire(Some(&root.id))
            .await?
            .cancelled
            .contains(&root.id)
        {
            return self.get(&root.id).await;
        }
        self.resume_changed(&root.id, additions).await
    }

    /// Continues this very run (a child: without the runs above it).
    pub(crate) async fn resume_here(&self, run_id: &str) -> Result<RunObject, RunError> {
        self.resume_changed(run_id, Additions::default()).await
    }

    async fn resume_changed(
        &self,
        run_id: &str,
        additions: Additions,
    ) -> Result<RunObject, RunError> {
        let id = run_id.to_string();
        let (row, pending) = self.store.run(&id).await?;
        if row.status == RunStatus::RequiresAction
            && let Some(p) = pending
                .iter()
                .find(|p| p.state == toolgate_store::PendingState::Waiting)
        {
            return Err(RunError::refused(
                Refusal::StillWaiting,
                format!(
                    "run {} still waits on call {} ({}, {}); decide it first",
                    row.id,
                    p.item.call_id,
                    p.item.tool,
                    p.item.kind.as_str()
                ),
            ));
        }
        let owner = toolgate_store::lease_owner_name();
        let before = row.status;
        let (row, pending) = self.store.acquire_run(&row.id, &owner, LEASE_MS).await?;
        let id = row.id.clone();
        let live = match self.live_from(row, pending, owner.clone(), additions).await {
            Ok(live) => live,
            Err(e) => {
                // Give the lease back so that a fixed file lets the run go on.
                let _ = self.store.release_run(&id, &owner, before).await;
                return Err(e);
            }
        };
        self.drive_shown(live, true).await
    }
}
