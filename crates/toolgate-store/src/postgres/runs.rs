//! Runs on PostgreSQL: creating one, its lease (expiry by the database's clock), saves
//! with the executing fence, cancel, and the reads of one run. Every write that needs
//! the lease checks it in the transaction that writes, holding the run's row lock, so
//! workers on many hosts are serialised on each run as SQLite's one writer serialises
//! processes on one file.

use deadpool_postgres::GenericClient;
use tokio_postgres::error::SqlState;

use super::prepared::Prepared;
use super::run_rows::{
    NOW_MS, OrStore, db_now, find_run, find_run_locked, ids_below, pending_rows,
    pending_with_below, root_of, rows_to, run_from_row,
};
use super::save_rows::{add_pending, append_messages, insert_records, set_pending};
use super::{PgStore, StoreError};
use crate::{NewRun, PendingRow, Refusal, RunRow, RunSave};
use toolgate_protocol::RunStatus;

/// Namespace of the advisory locks taken on a conversation while a run is created in it
/// (`TGCV`); the second key is the conversation id's hash.
const CONVERSATION_LOCK: i32 = 0x5447_4356;

impl PgStore {
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
        self.create_linked_run(NewRun {
            id: id.to_string(),
            conversation_id: conversation_id.to_string(),
            agent: agent.to_string(),
            state,
            owner: owner.to_string(),
            lease_ms,
            messages,
            first_seq,
            link: None,
            tenant: toolgate_protocol::identity::DEFAULT_TENANT.to_string(),
            started_by: None,
        })
        .await
    }

    /// [`PgStore::create_run`], for a run that may be a sub-agent's (`link`). A child is
    /// refused when its parent's call already has one ([`Refusal::ChildExists`]).
    pub async fn create_linked_run(&self, new: NewRun) -> Result<(), StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.or_store(&s)?;
            let NewRun {
                id,
                conversation_id,
                agent,
                state,
                owner,
                lease_ms,
                messages,
                first_seq,
                link,
                tenant,
                started_by,
            } = new;
            let (parent, call, depth) = match &link {
                Some(l) => (
                    Some(l.parent_run_id.clone()),
                    Some(l.parent_call_id.clone()),
                    i64::from(l.depth),
                ),
                None => (None, None, 0),
            };
            let parent_call = parent.as_deref().zip(call.as_deref());
            may_create(&tx, &s, &conversation_id, &tenant, parent_call).await?;
            // The database's clock, read by the insert itself.
            tx.exec(
                &format!("INSERT INTO runs (id, conversation_id, agent, status, state, iteration, lease_owner, lease_until, created_at, updated_at, parent_run_id, parent_call_id, depth, tenant, started_by)
                 SELECT $1, $2, $3, 'in_progress', $4, 0, $5, t.now + $6, t.now, t.now, $7, $8, $9, $10, $11 FROM (SELECT {NOW_MS} AS now) t"),
                &[
                    &id,
                    &conversation_id,
                    &agent,
                    &state,
                    &owner,
                    &lease_ms,
                    &parent,
                    &call,
                    &depth,
                    &tenant,
                    &started_by,
                ],
            )
            .await
            .map_err(|e| match (&parent, &call) {
                // Another worker created the child meanwhile.
                (Some(p), Some(c)) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    child_exists(p, c, None)
                }
                _ => s.error(e),
            })?;
            append_messages(&tx, &s, &id, first_seq, &messages).await?;
            tx.commit().await.or_store(&s)?;
            s.committed();
            Ok(())
        })
        .await
    }

    /// Takes the lease of a run so that this process can continue it: refused while
    /// another holds it (its lease has not run out by the database's clock; only the
    /// expiry counts, never which host or process holds it), or when the run has ended.
    /// Returns the run and its pending items.
    pub async fn acquire_run(
        &self,
        id: &str,
        owner: &str,
        lease_ms: i64,
    ) -> Result<(RunRow, Vec<PendingRow>), StoreError> {
        self.open_for_writes()?;
        let (id, owner) = (id.to_string(), owner.to_string());
        self.on_pool(|s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.or_store(&s)?;
            let mut run = find_run_locked(&tx, &s, &id).await?;
            let now = db_now(&tx, &s).await?;
            crate::lease::may_acquire(&run, &owner, now)?;
            let pending = pending_rows(&tx, &s, &run.id).await?;
            tx.exec(
                "UPDATE runs SET lease_owner = $2, lease_until = $3, status = 'in_progress', updated_at = $4 WHERE id = $1",
                &[&run.id, &owner, &(now + lease_ms), &now],
            )
            .await
            .or_store(&s)?;
            tx.commit().await.or_store(&s)?;
            s.committed();
            run.lease_owner = Some(owner);
            run.lease_until = Some(now + lease_ms);
            Ok((run, pending))
        })
        .await
    }

    /// Extends the lease (by the database's clock); fails when this process no longer
    /// holds it (the run was cancelled, or taken over after the lease ran out).
    pub async fn renew_lease(
        &self,
        id: &str,
        owner: &str,
        lease_ms: i64,
    ) -> Result<(), StoreError> {
        self.open_for_writes()?;
        let (id, owner) = (id.to_string(), owner.to_string());
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let n = client
                .exec(
                    &format!("UPDATE runs SET lease_until = {NOW_MS} + $3 WHERE id = $1 AND lease_owner = $2 AND status = 'in_progress'"),
                    &[&id, &owner, &lease_ms],
                )
                .await
                .or_store(&s)?;
            s.committed();
            if n == 0 {
                return Err(crate::lease::lost_lease(&id));
            }
            Ok(())
        })
        .await
    }

    /// Gives a lease back without running, restoring the status the run had.
    pub async fn release_run(
        &self,
        id: &str,
        owner: &str,
        status: RunStatus,
    ) -> Result<(), StoreError> {
        self.open_for_writes()?;
        let (id, owner) = (id.to_string(), owner.to_string());
        self.on_pool(|s| async move {
            let client = s.client().await?;
            client
                .exec(
                    "UPDATE runs SET status = $3, lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2",
                    &[&id, &owner, &status.as_str()],
                )
                .await
                .or_store(&s)?;
            s.committed();
            Ok(())
        })
        .await
    }

    /// Saves a run's state, status and pending items, as the holder of its lease. The
    /// lease is checked by the update itself, which holds the run's row until commit:
    /// a worker that took the run over is ordered before (this save is refused) or after
    /// (it reads this save), never between. Items moved to `executing` here are the
    /// at-most-once fence: whoever continues the run later finds them there.
    pub async fn save_run(&self, id: &str, owner: &str, save: RunSave) -> Result<(), StoreError> {
        self.open_for_writes()?;
        let (id, owner) = (id.to_string(), owner.to_string());
        self.on_pool(|s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.or_store(&s)?;
            // The database's clock is read by the update itself (one round trip less).
            let saved = tx
                .row_opt(
                    &format!(
                        "UPDATE runs SET status = $3, state = $4, iteration = $5, last_error = $6, updated_at = {NOW_MS},
                       lease_owner = CASE WHEN $7 THEN NULL ELSE lease_owner END,
                       lease_until = CASE WHEN $7 THEN NULL ELSE lease_until END,
                       prompt_tokens = $8, completion_tokens = $9, total_tokens = $10, model_calls = $11,
                       cache_read_tokens = $12, cache_creation_tokens = $13, compactions = $14
                     WHERE id = $1 AND lease_owner = $2 AND status = 'in_progress'
                     RETURNING updated_at"
                    ),
                    &[
                        &id,
                        &owner,
                        &save.status.as_str(),
                        &save.state,
                        &i64::from(save.iteration),
                        &save.last_error,
                        &save.release,
                        &count(save.usage.prompt_tokens),
                        &count(save.usage.completion_tokens),
                        &count(save.usage.total_tokens),
                        &count(save.usage.model_calls),
                        &count(save.usage.cache_read_tokens),
                        &count(save.usage.cache_creation_tokens),
                        &count(save.usage.compactions),
                    ],
                )
                .await
                .or_store(&s)?;
            let Some(saved) = saved else {
                // Cancelled or taken over: the state is not this process's to save, but
                // the calls it ran happened; their records are kept.
                insert_records(&tx, &s, &save.records).await?;
                super::spend::insert(&tx, &s, &save.requests).await?;
                tx.commit().await.or_store(&s)?;
                s.committed();
                return Err(crate::lease::lost_lease(&id));
            };
            let now: i64 = saved.try_get(0).or_store(&s)?;
            add_pending(&tx, &s, &id, &save.add_pending, now).await?;
            set_pending(&tx, &s, &id, &save.set_pending).await?;
            insert_records(&tx, &s, &save.records).await?;
            append_messages(&tx, &s, &id, save.first_seq, &save.messages).await?;
            super::spend::insert(&tx, &s, &save.requests).await?;
            tx.commit().await.or_store(&s)?;
            s.committed();
            Ok(())
        })
        .await
    }

    /// Cancels a run that has not ended, with every run below it; returns its id and
    /// the status it had.
    pub async fn cancel_run(&self, id: &str) -> Result<(String, RunStatus), StoreError> {
        self.open_for_writes()?;
        let id = id.to_string();
        self.on_pool(|s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.or_store(&s)?;
            let run = find_run_locked(&tx, &s, &id).await?;
            if run.status.is_final() {
                return Err(StoreError::Refused(
                    Refusal::NotResumable,
                    format!("run {} is already {}", run.id, run.status.as_str()),
                ));
            }
            let now = db_now(&tx, &s).await?;
            tx.exec(
                "UPDATE runs SET status = 'cancelled', last_error = 'cancelled by the user', lease_owner = NULL, lease_until = NULL, updated_at = $2 WHERE id = $1",
                &[&run.id, &now],
            )
            .await
            .or_store(&s)?;
            // Every sub-agent run below it that has not ended stops with it.
            for below in ids_below(&tx, &s, &run.id).await? {
                tx.exec(
                    "UPDATE runs SET status = 'cancelled', last_error = 'cancelled with the run above it', lease_owner = NULL, lease_until = NULL, updated_at = $2 WHERE id = $1 AND status IN ('in_progress', 'requires_action', 'failed')",
                    &[&below, &now],
                )
                .await
                .or_store(&s)?;
            }
            tx.commit().await.or_store(&s)?;
            s.committed();
            Ok((run.id, run.status))
        })
        .await
    }

    /// A run's status alone (a cheap read, for a driver watching for a cancel).
    pub async fn run_status(&self, id: &str) -> Result<RunStatus, StoreError> {
        let id = id.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .row_opt("SELECT status FROM runs WHERE id = $1", &[&id])
                .await
                .or_store(&s)?
                .ok_or_else(|| StoreError::NotFound(id.clone()))?;
            let status: String = row.try_get(0).or_store(&s)?;
            status.parse::<RunStatus>().map_err(|_| {
                StoreError::Refused(
                    Refusal::NotResumable,
                    format!("run {id} has an unknown status '{status}'"),
                )
            })
        })
        .await
    }

    /// One run, by id or unique id prefix, with its pending items; a paused run's
    /// items include those waiting in its sub-agents' runs below it (one snapshot).
    pub async fn run(&self, id: &str) -> Result<(RunRow, Vec<PendingRow>), StoreError> {
        let id = id.to_string();
        self.on_pool(|s| async move {
            let mut client = s.client().await?;
            if let Some(found) = super::run_rows::run_with_items(&client, &s, &id).await? {
                return Ok(found);
            }
            let snapshot = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .or_store(&s)?;
            let run = find_run(&snapshot, &s, &id).await?;
            let pending = pending_with_below(&snapshot, &s, &run).await?;
            snapshot.commit().await.or_store(&s)?;
            Ok((run, pending))
        })
        .await
    }

    /// A conversation's messages (JSON), in order.
    pub async fn conversation_messages(
        &self,
        conversation: &str,
    ) -> Result<Vec<String>, StoreError> {
        let conversation = conversation.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let rows = client
                .rows(
                    "SELECT message FROM messages WHERE conversation_id = $1 ORDER BY seq",
                    &[&conversation],
                )
                .await
                .or_store(&s)?;
            rows_to(rows, &s, |r| r.try_get(0))
        })
        .await
    }

    /// The sub-agent run started by `call_id` of `parent_run_id`, if there is one.
    pub async fn child_run(
        &self,
        parent_run_id: &str,
        call_id: &str,
    ) -> Result<Option<RunRow>, StoreError> {
        let (parent, call) = (parent_run_id.to_string(), call_id.to_string());
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let sql = format!(
                "SELECT {} FROM runs WHERE parent_run_id = $1 AND parent_call_id = $2",
                super::run_rows::RUN_COLUMNS
            );
            let row = client.row_opt(&sql, &[&parent, &call]).await.or_store(&s)?;
            row.as_ref().map(run_from_row).transpose().or_store(&s)
        })
        .await
    }

    /// The top run of the tree `run_id` is in (the run itself when it is a top run).
    pub async fn root_run(&self, run_id: &str) -> Result<RunRow, StoreError> {
        let id = run_id.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let run = find_run(&client, &s, &id).await?;
            root_of(&client, &s, run).await
        })
        .await
    }

    /// The ids of every run below `run_id` (its sub-agents' runs, theirs, ...).
    pub async fn runs_below(&self, run_id: &str) -> Result<Vec<String>, StoreError> {
        let id = run_id.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            ids_below(&client, &s, &id).await
        })
        .await
    }
}

/// A count as the database keeps it (at most `i64::MAX`).
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Whether a run may be created in `conversation_id` for `tenant` (the transaction
/// takes the conversation's lock first, held until it commits): refused while the
/// conversation has an unfinished run, when the parent's call already has its child,
/// and not found when the conversation is another tenant's.
async fn may_create(
    tx: &impl GenericClient,
    s: &PgStore,
    conversation_id: &str,
    tenant: &str,
    parent_call: Option<(&str, &str)>,
) -> Result<(), StoreError> {
    // One creation at a time per conversation: the check below holds until commit.
    tx.exec(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&CONVERSATION_LOCK, &conversation_id],
    )
    .await
    .or_store(s)?;
    if let Some(other) = tx
        .row_opt(
            "SELECT id, status FROM runs WHERE conversation_id = $1 AND status IN ('in_progress', 'requires_action') ORDER BY created_at DESC LIMIT 1",
            &[&conversation_id],
        )
        .await
        .or_store(s)?
    {
        let (other_id, status): (String, String) =
            (other.try_get(0).or_store(s)?, other.try_get(1).or_store(s)?);
        return Err(StoreError::Refused(
            Refusal::ConversationBusy,
            format!(
                "conversation '{conversation_id}' has an unfinished run {other_id} ({status}); resolve, resume or cancel it first"
            ),
        ));
    }
    if let Some((p, c)) = parent_call
        && let Some(existing) = tx
            .row_opt(
                "SELECT id FROM runs WHERE parent_run_id = $1 AND parent_call_id = $2",
                &[&p, &c],
            )
            .await
            .or_store(s)?
    {
        let existing: String = existing.try_get(0).or_store(s)?;
        return Err(child_exists(p, c, Some(&existing)));
    }
    if tx
        .row_opt(
            "SELECT tenant FROM runs WHERE conversation_id = $1 AND tenant <> $2 LIMIT 1",
            &[&conversation_id, &tenant],
        )
        .await
        .or_store(s)?
        .is_some()
    {
        // Another tenant's conversation: not found, whoever asks.
        return Err(StoreError::NotFound(format!(
            "conversation {conversation_id}"
        )));
    }
    Ok(())
}

/// The refusal of a second sub-agent run for one call (`existing`: the first's id, when
/// it was read; another worker may have created it meanwhile).
fn child_exists(parent: &str, call: &str, existing: Option<&str>) -> StoreError {
    let message = match existing {
        Some(id) => format!("call {call} of run {parent} already has its sub-agent run {id}"),
        None => format!(
            "call {call} of run {parent} already has its sub-agent run (created meanwhile by another worker)"
        ),
    };
    StoreError::Refused(Refusal::ChildExists, message)
}
