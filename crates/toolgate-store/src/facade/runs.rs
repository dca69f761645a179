//! Runs through the facade: creating one, its lease, saves, cancel, and the reads of
//! runs, their pending items, trees and timelines.

use super::super::{
    Backend, NewRun, PendingRow, RunRow, RunSave, Scope, Store, StoreError, TimelineRows,
};
use toolgate_protocol::{RunStatus, RunTree};

impl Store {
    /// A new run, in progress and leased to `owner`, with the messages it adds to its
    /// conversation (the user's message, at least), the first at position `first_seq`.
    #[allow(clippy::too_many_arguments)]
    pub async fn create_run(
        &self,
        id: &str,
        conversation_id: &str,
        agent: &str,
        state: String,
        owner: &str,
        lease_ms: i64,
        messages: Vec<String>,
        first_seq: usize,
    ) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s
                .create_run(
                    id,
                    conversation_id,
                    agent,
                    state,
                    owner,
                    lease_ms,
                    messages,
                    first_seq,
                )
                .await?),
            Backend::Postgres(s) => {
                s.create_run(
                    id,
                    conversation_id,
                    agent,
                    state,
                    owner,
                    lease_ms,
                    messages,
                    first_seq,
                )
                .await
            }
        }
    }

    /// [`Store::create_run`], for a run that may be a sub-agent's (`link`). A child is
    /// refused when its parent's call already has one ([`crate::Refusal::ChildExists`]).
    pub async fn create_linked_run(&self, new: NewRun) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.create_linked_run(new).await?),
            Backend::Postgres(s) => s.create_linked_run(new).await,
        }
    }

    /// Takes the lease of a run so that this process can continue it: refused while
    /// another live process holds it, or when the run has ended. Returns the run and
    /// its pending items.
    pub async fn acquire_run(
        &self,
        id: &str,
        owner: &str,
        lease_ms: i64,
    ) -> Result<(RunRow, Vec<PendingRow>), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.acquire_run(id, owner, lease_ms).await?),
            Backend::Postgres(s) => s.acquire_run(id, owner, lease_ms).await,
        }
    }

    /// Extends the lease; fails when this process no longer holds it (the run was
    /// cancelled, or taken over after the lease ran out).
    pub async fn renew_lease(
        &self,
        id: &str,
        owner: &str,
        lease_ms: i64,
    ) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.renew_lease(id, owner, lease_ms).await?),
            Backend::Postgres(s) => s.renew_lease(id, owner, lease_ms).await,
        }
    }

    /// Gives a lease back without running, restoring the status the run had.
    pub async fn release_run(
        &self,
        id: &str,
        owner: &str,
        status: RunStatus,
    ) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.release_run(id, owner, status).await?),
            Backend::Postgres(s) => s.release_run(id, owner, status).await,
        }
    }

    /// Saves a run's state, status and pending items, as the holder of its lease.
    pub async fn save_run(&self, id: &str, owner: &str, save: RunSave) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.save_run(id, owner, save).await?),
            Backend::Postgres(s) => s.save_run(id, owner, save).await,
        }
    }

    /// Cancels a run that has not ended; returns its id and the status it had.
    pub async fn cancel_run(&self, id: &str) -> Result<(String, RunStatus), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.cancel_run(id).await?),
            Backend::Postgres(s) => s.cancel_run(id).await,
        }
    }

    /// A run's status alone (a cheap read, for a driver watching for a cancel).
    /// Up to `limit` top-level runs in progress whose lease is free (their driver gave
    /// them back, or died), oldest change first: what a server takes up.
    pub async fn unheld_runs(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.unheld_runs(limit)).await,
            Backend::Postgres(s) => s.unheld_runs(limit).await,
        }
    }

    pub async fn run_status(&self, id: &str) -> Result<RunStatus, StoreError> {
        let id = id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.run_status(&id)).await,
            Backend::Postgres(s) => s.run_status(&id).await,
        }
    }

    /// One run, by id or unique id prefix, with its pending items; a paused run's
    /// items include those waiting in its sub-agents' runs below it.
    pub async fn run(&self, id: &str) -> Result<(RunRow, Vec<PendingRow>), StoreError> {
        let id = id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.run(&id)).await,
            Backend::Postgres(s) => s.run(&id).await,
        }
    }

    /// [`Store::run`] for the end of a drive, just after its save: SQLite reads it by
    /// key on this thread (a few microseconds from a pooled connection, a hop to the
    /// blocking pool would cost more than the read).
    pub async fn run_just_saved(&self, id: &str) -> Result<(RunRow, Vec<PendingRow>), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.run(id).map_err(Into::into),
            Backend::Postgres(s) => s.run(id).await,
        }
    }

    /// Runs of `scope`, newest first.
    pub async fn runs(
        &self,
        scope: Scope<'_>,
        status: Option<RunStatus>,
        conversation: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        let (tenant, conversation) = (
            scope.tenant().map(str::to_string),
            conversation.map(str::to_string),
        );
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| {
                    s.runs(
                        Scope::of(tenant.as_deref()),
                        status,
                        conversation.as_deref(),
                        limit,
                    )
                })
                .await
            }
            Backend::Postgres(s) => s.runs(scope, status, conversation.as_deref(), limit).await,
        }
    }

    /// Runs of `scope`, newest first (as [`Store::runs`]; of one agent too when `agent`
    /// names it), each with its pending items.
    pub async fn runs_with_pending(
        &self,
        scope: Scope<'_>,
        status: Option<RunStatus>,
        conversation: Option<&str>,
        agent: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(RunRow, Vec<PendingRow>)>, StoreError> {
        let (tenant, conversation, agent) = (
            scope.tenant().map(str::to_string),
            conversation.map(str::to_string),
            agent.map(str::to_string),
        );
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| {
                    s.runs_with_pending(
                        Scope::of(tenant.as_deref()),
                        status,
                        conversation.as_deref(),
                        agent.as_deref(),
                        limit,
                    )
                })
                .await
            }
            Backend::Postgres(s) => {
                s.runs_with_pending(
                    scope,
                    status,
                    conversation.as_deref(),
                    agent.as_deref(),
                    limit,
                )
                .await
            }
        }
    }

    /// How many runs of `tenant` are in progress: all of them, and `user`'s.
    pub async fn runs_in_progress(
        &self,
        tenant: &str,
        user: &str,
    ) -> Result<(u64, u64), StoreError> {
        let (tenant, user) = (tenant.to_string(), user.to_string());
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.runs_in_progress(&tenant, &user))
                    .await
            }
            Backend::Postgres(s) => s.runs_in_progress(&tenant, &user).await,
        }
    }

    /// A conversation's messages (JSON), in order.
    pub async fn conversation_messages(
        &self,
        conversation: &str,
    ) -> Result<Vec<String>, StoreError> {
        let conversation = conversation.to_string();
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.conversation_messages(&conversation))
                    .await
            }
            Backend::Postgres(s) => s.conversation_messages(&conversation).await,
        }
    }

    /// The sub-agent run that the call `call_id` of `parent_run_id` started, if any.
    pub async fn child_run(
        &self,
        parent_run_id: &str,
        call_id: &str,
    ) -> Result<Option<RunRow>, StoreError> {
        let (parent, call) = (parent_run_id.to_string(), call_id.to_string());
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.child_run(&parent, &call)).await,
            Backend::Postgres(s) => s.child_run(&parent, &call).await,
        }
    }

    /// The top run of the tree `run_id` is in (itself when it has no parent).
    pub async fn root_run(&self, run_id: &str) -> Result<RunRow, StoreError> {
        let id = run_id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.root_run(&id)).await,
            Backend::Postgres(s) => s.root_run(&id).await,
        }
    }

    /// The ids of every run below `run_id` (its sub-agents' runs, theirs, ...).
    pub async fn runs_below(&self, run_id: &str) -> Result<Vec<String>, StoreError> {
        let id = run_id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.runs_below(&id)).await,
            Backend::Postgres(s) => s.runs_below(&id).await,
        }
    }

    /// The tree of runs from `run_id` down, with its execution summary.
    pub async fn run_tree(&self, run_id: &str) -> Result<RunTree, StoreError> {
        let id = run_id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.run_tree(&id)).await,
            Backend::Postgres(s) => s.run_tree(&id).await,
        }
    }

    /// The tree of every top run of a conversation, oldest first.
    pub async fn conversation_trees(&self, conversation: &str) -> Result<Vec<RunTree>, StoreError> {
        let conversation = conversation.to_string();
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.conversation_trees(&conversation))
                    .await
            }
            Backend::Postgres(s) => s.conversation_trees(&conversation).await,
        }
    }

    /// What happened in a run, in one snapshot: the run, its records, its pauses.
    pub async fn run_timeline(&self, id: &str) -> Result<TimelineRows, StoreError> {
        let id = id.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.run_timeline(&id)).await,
            Backend::Postgres(s) => s.run_timeline(&id).await,
        }
    }
}
