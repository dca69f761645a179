//! Runs in the store: each run's saved state and pending items, its conversation's
//! messages, and the lease that lets exactly one process continue a run at a time.
//! Every change is one IMMEDIATE transaction on the writer, so two processes
//! racing for the same run are serialised by SQLite itself.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use tokio::sync::oneshot;

use super::record::{self, INSERT};
use super::{SqliteStore, StoreError, describe, writer};
use crate::Scope;
pub use crate::model::{NewRun, PendingRow, PendingState, RunRow, RunSave};
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::{ItemKind, RequiredItem, RunStatus, Usage};

pub use super::run_errors::{Refusal, RunsError};

pub(super) const RUN_COLUMNS: &str = "id, conversation_id, agent, status, state, iteration, last_error, lease_owner, lease_until, created_at, updated_at, parent_run_id, parent_call_id, depth, tenant, started_by, prompt_tokens, completion_tokens, total_tokens, model_calls, cache_read_tokens, cache_creation_tokens, compactions";

pub(super) fn run_from_row(row: &Row<'_>) -> rusqlite::Result<RunRow> {
    let status: String = row.get(3)?;
    Ok(RunRow {
        id: row.get(0)?,
        conversation_id: row.get(1)?,
        agent: row.get(2)?,
        status: status.parse().unwrap_or(RunStatus::Failed),
        state: row.get(4)?,
        iteration: row.get(5)?,
        last_error: row.get(6)?,
        lease_owner: row.get(7)?,
        lease_until: row.get(8)?,
        created_at: row.get(9)?,
        updated_at: row.get(10)?,
        parent_run_id: row.get(11)?,
        parent_call_id: row.get(12)?,
        depth: row.get(13)?,
        tenant: row.get(14)?,
        started_by: row.get(15)?,
        usage: Usage {
            prompt_tokens: tokens(row, 16)?,
            completion_tokens: tokens(row, 17)?,
            total_tokens: tokens(row, 18)?,
            model_calls: tokens(row, 19)?,
            cache_read_tokens: tokens(row, 20)?,
            cache_creation_tokens: tokens(row, 21)?,
            compactions: tokens(row, 22)?,
        },
    })
}

/// A count column (never negative; a negative one reads as 0).
fn tokens(row: &Row<'_>, i: usize) -> rusqlite::Result<u64> {
    Ok(u64::try_from(row.get::<_, i64>(i)?).unwrap_or(0))
}

/// The columns [`pending_from_row`] reads, in its order.
pub(super) const PENDING_COLUMNS: &str =
    "call_id, kind, tool, arguments, decision, state, reason, expires_at, on_timeout, policy";
/// How many they are (a query's own columns come after them).
pub(super) const PENDING_COUNT: usize = 10;

pub(super) fn pending_from_row(row: &Row<'_>) -> rusqlite::Result<PendingRow> {
    let kind: String = row.get(1)?;
    let arguments: String = row.get(3)?;
    let decision: Option<String> = row.get(4)?;
    let on_timeout: Option<String> = row.get(8)?;
    Ok(PendingRow {
        item: RequiredItem {
            call_id: row.get(0)?,
            kind: kind.parse().unwrap_or(ItemKind::Approval),
            tool: row.get(2)?,
            arguments: serde_json::from_str(&arguments).unwrap_or(Value::Null),
            run_id: None,
            path: Vec::new(),
            reason: row.get(6)?,
            expires_at: row.get(7)?,
            on_timeout: on_timeout
                .as_deref()
                .and_then(|t| t.parse::<toolgate_protocol::OnTimeout>().ok()),
            policy: row.get(9)?,
        },
        decision: decision.and_then(|d| serde_json::from_str(&d).ok()),
        // A state this toolgate does not know (a newer one wrote it) is acted on: done.
        state: row
            .get::<_, String>(5)?
            .parse()
            .unwrap_or(PendingState::Done),
    })
}

/// Finds a run by its id or a unique prefix of it.
pub(super) fn find_run(conn: &Connection, id: &str) -> Result<RunRow, RunsError> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1");
    if let Some(run) = conn
        .prepare_cached(&sql)?
        .query_row([id], run_from_row)
        .optional()?
    {
        return Ok(run);
    }
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE id LIKE ?1 || '%' ESCAPE '\\' ORDER BY id LIMIT 2"
    );
    let escaped = id
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    let mut stmt = conn.prepare_cached(&sql)?;
    let found: Vec<RunRow> = stmt
        .query_map([escaped], run_from_row)?
        .collect::<rusqlite::Result<_>>()?;
    match found.len() {
        1 => Ok(found
            .into_iter()
            .next()
            .ok_or_else(|| RunsError::NotFound(id.into()))?),
        0 => Err(RunsError::NotFound(id.to_string())),
        _ => Err(RunsError::Refused(
            Refusal::AmbiguousId,
            format!("'{id}' is the start of more than one run id; give more of it"),
        )),
    }
}

pub(super) fn pending_rows(conn: &Connection, run_id: &str) -> Result<Vec<PendingRow>, RunsError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {PENDING_COLUMNS} FROM pending WHERE run_id = ?1 ORDER BY rowid"
    ))?;
    let rows = stmt
        .query_map([run_id], pending_from_row)?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// A run's own pending items, then (while it is paused) those waiting below it.
pub(super) fn pending_with_below(
    conn: &Connection,
    run: &RunRow,
) -> Result<Vec<PendingRow>, RunsError> {
    let mut pending = pending_rows(conn, &run.id)?;
    if run.status == RunStatus::RequiresAction {
        pending.extend(super::tree::waiting_below(conn, &run.id)?);
    }
    Ok(pending)
}

impl SqliteStore {
    /// Runs `f` on the writer, in a savepoint of the writer's next group transaction,
    /// and answers once that group is committed; nothing of `f`'s is kept when it fails.
    pub(crate) async fn transact<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, RunsError> + Send + 'static,
    ) -> Result<T, RunsError> {
        let gone = || StoreError::WriterGone {
            path: self.inner.path.clone(),
        };
        let (ack, done) = oneshot::channel();
        let path = self.inner.path.clone();
        let busy = self.inner.options.busy_timeout;
        let job: writer::TxJob = Box::new(move |conn| {
            let worked = conn.map_err(RunsError::Store).and_then(|conn| {
                let sp = conn.savepoint()?;
                let value = f(&sp)?;
                sp.commit()?;
                Ok(value)
            });
            match worked.map_err(|e| match e {
                RunsError::Sql(e) => RunsError::Store(describe(&path, busy, e)),
                other => other,
            }) {
                Err(e) => {
                    let _ = ack.send(Err(e));
                    None
                }
                Ok(value) => Some(Box::new(move |committed: Result<(), StoreError>| {
                    let _ = ack.send(committed.map(|()| value).map_err(RunsError::Store));
                })),
            }
        });
        self.inner
            .writer
            .submit(writer::Msg::Tx(job))
            .map_err(|_| gone())?;
        done.await.map_err(|_| gone())?
    }

    /// Reads with the run-level error type.
    pub(super) fn read_runs<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, RunsError>,
    ) -> Result<T, RunsError> {
        let mut out = None;
        self.read(|conn| {
            out = Some(f(conn));
            Ok(())
        })?;
        out.ok_or_else(|| {
            RunsError::Store(StoreError::Database {
                path: self.inner.path.clone(),
                message: "the read did not run".into(),
            })
        })?
    }

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
    ) -> Result<(), RunsError> {
        let new = NewRun {
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
        };
        self.create_linked_run(new).await
    }

    /// [`SqliteStore::create_run`], for a run that may be a sub-agent's (`link`). A child is
    /// refused when its parent's call already has one ([`Refusal::ChildExists`]).
    pub async fn create_linked_run(&self, new: NewRun) -> Result<(), RunsError> {
        self.transact(move |tx| {
            let NewRun { id, conversation_id, agent, state, owner, lease_ms, messages, first_seq, link, tenant, started_by } = new;
            if let Some(other) = tx.prepare_cached("SELECT id, status FROM runs WHERE conversation_id = ?1 AND status IN ('in_progress', 'requires_action') ORDER BY created_at DESC LIMIT 1")?.query_row([&conversation_id],
                    |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
                )
                .optional()?
            {
                return Err(RunsError::Refused(Refusal::ConversationBusy, format!(
                    "conversation '{conversation_id}' has an unfinished run {} ({}); resolve, resume or cancel it first",
                    other.0, other.1
                )));
            }
            let (parent, call, depth) = match &link {
                Some(l) => (Some(l.parent_run_id.clone()), Some(l.parent_call_id.clone()), l.depth),
                None => (None, None, 0),
            };
            if let (Some(p), Some(c)) = (&parent, &call)
                && let Some(existing) = tx.prepare_cached("SELECT id FROM runs WHERE parent_run_id = ?1 AND parent_call_id = ?2")?.query_row(params![p, c],
                        |r| r.get::<_, String>(0),
                    )
                    .optional()?
            {
                return Err(RunsError::Refused(Refusal::ChildExists, format!(
                    "call {c} of run {p} already has its sub-agent run {existing}"
                )));
            }
            let now = now_ms();
            if tx.prepare_cached("SELECT tenant FROM runs WHERE conversation_id = ?1 AND tenant <> ?2 LIMIT 1")?.query_row(params![conversation_id, tenant], |r| r.get::<_, String>(0)).optional()?.is_some() {
                // Another tenant's conversation: not found, whoever asks.
                return Err(RunsError::NotFound(format!("conversation {conversation_id}")));
            }
            tx.prepare_cached("INSERT INTO runs (id, conversation_id, agent, status, state, iteration, lease_owner, lease_until, created_at, updated_at, parent_run_id, parent_call_id, depth, tenant, started_by) VALUES (?1, ?2, ?3, 'in_progress', ?4, 0, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12)")?.execute(params![id, conversation_id, agent, state, owner, now + lease_ms, now, parent, call, depth, tenant, started_by],
            )?;
            append_messages(tx, &id, first_seq, &messages)?;
            Ok(())
        })
        .await
    }

    /// Takes the lease of a run so that this process can continue it: refused while
    /// another live process holds it, or when the run has ended. Returns the run and
    /// its pending items.
    pub async fn acquire_run(
        &self,
        id: &str,
        owner: &str,
        lease_ms: i64,
    ) -> Result<(RunRow, Vec<PendingRow>), RunsError> {
        let (id, owner) = (id.to_string(), owner.to_string());
        self.transact(move |tx| {
            let mut run = find_run(tx, &id)?;
            let now = now_ms();
            crate::lease::may_acquire(&run, &owner, now)?;
            let pending = pending_rows(tx, &run.id)?;
            tx.prepare_cached("UPDATE runs SET lease_owner = ?2, lease_until = ?3, status = 'in_progress', updated_at = ?4 WHERE id = ?1")?.execute(params![run.id, owner, now + lease_ms, now],
            )?;
            run.lease_owner = Some(owner);
            run.lease_until = Some(now + lease_ms);
            Ok((run, pending))
        })
        .await
    }

    /// Extends the lease; fails when this process no longer holds it (the run was
    /// cancelled, or taken over after the lease ran out).
    pub async fn renew_lease(&self, id: &str, owner: &str, lease_ms: i64) -> Result<(), RunsError> {
        let (id, owner) = (id.to_string(), owner.to_string());
        self.transact(move |tx| {
            let n = tx.prepare_cached("UPDATE runs SET lease_until = ?3 WHERE id = ?1 AND lease_owner = ?2 AND status = 'in_progress'")?.execute(params![id, owner, now_ms() + lease_ms],
            )?;
            if n == 0 {
                return Err(lost_lease(&id));
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
    ) -> Result<(), RunsError> {
        let (id, owner) = (id.to_string(), owner.to_string());
        self.transact(move |tx| {
            tx.prepare_cached("UPDATE runs SET status = ?3, lease_owner = NULL, lease_until = NULL WHERE id = ?1 AND lease_owner = ?2")?.execute(params![id, owner, status.as_str()],
            )?;
            Ok(())
        })
        .await
    }

    /// Saves a run's state, status and pending items, as the holder of its lease.
    pub async fn save_run(&self, id: &str, owner: &str, save: RunSave) -> Result<(), RunsError> {
        let (id, owner) = (id.to_string(), owner.to_string());
        let lost = id.clone();
        let saved = self.transact(move |tx| {
            let now = now_ms();
            let n = tx.prepare_cached(
                "UPDATE runs SET status = ?3, state = ?4, iteration = ?5, last_error = ?6, updated_at = ?7,
                   lease_owner = CASE WHEN ?8 THEN NULL ELSE lease_owner END,
                   lease_until = CASE WHEN ?8 THEN NULL ELSE lease_until END,
                   prompt_tokens = ?9, completion_tokens = ?10, total_tokens = ?11, model_calls = ?12,
                   cache_read_tokens = ?13, cache_creation_tokens = ?14, compactions = ?15
                 WHERE id = ?1 AND lease_owner = ?2 AND status = 'in_progress'",
            )?
            .execute(params![
                    id,
                    owner,
                    save.status.as_str(),
                    save.state,
                    save.iteration,
                    save.last_error,
                    now,
                    save.release,
                    count(save.usage.prompt_tokens),
                    count(save.usage.completion_tokens),
                    count(save.usage.total_tokens),
                    count(save.usage.model_calls),
                    count(save.usage.cache_read_tokens),
                    count(save.usage.cache_creation_tokens),
                    count(save.usage.compactions),
                ],
            )?;
            if n == 0 {
                // Cancelled or taken over: the state is not this process's to save, but
                // the calls it ran happened; their records are kept.
                let mut insert = tx.prepare_cached(INSERT)?;
                for r in &save.records {
                    record::insert(&mut insert, r)?;
                }
                super::spend::insert(tx, &save.requests)?;
                return Ok(false);
            }
            {
                let mut add = tx.prepare_cached(
                    "INSERT INTO pending (run_id, call_id, kind, tool, arguments, reason, expires_at, on_timeout, policy, requested_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?;
                for item in &save.add_pending {
                    add.execute(params![
                        id,
                        item.call_id,
                        item.kind.as_str(),
                        item.tool,
                        item.arguments.to_string(),
                        item.reason,
                        item.expires_at,
                        item.on_timeout.map(toolgate_protocol::OnTimeout::as_str),
                        item.policy,
                        now,
                    ])?;
                }
                let mut set = tx.prepare_cached(
                    "UPDATE pending SET state = ?3 WHERE run_id = ?1 AND call_id = ?2",
                )?;
                for (call_id, state) in &save.set_pending {
                    set.execute(params![id, call_id, state.as_str()])?;
                }
                let mut insert = tx.prepare_cached(INSERT)?;
                for r in &save.records {
                    record::insert(&mut insert, r)?;
                }
                append_messages(tx, &id, save.first_seq, &save.messages)?;
                super::spend::insert(tx, &save.requests)?;
            }
            Ok(true)
        })
        .await?;
        if saved {
            Ok(())
        } else {
            Err(lost_lease(&lost))
        }
    }

    /// A run's status alone (a cheap read, for a driver watching for a cancel).
    pub fn run_status(&self, id: &str) -> Result<RunStatus, RunsError> {
        self.read_runs(|conn| {
            let status: String = conn
                .prepare_cached("SELECT status FROM runs WHERE id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?
                .ok_or_else(|| RunsError::NotFound(id.to_string()))?;
            status.parse::<RunStatus>().map_err(|_| {
                RunsError::Refused(
                    Refusal::NotResumable,
                    format!("run {id} has an unknown status '{status}'"),
                )
            })
        })
    }

    /// Cancels a run that has not ended; returns the status it had.
    pub async fn cancel_run(&self, id: &str) -> Result<(String, RunStatus), RunsError> {
        let id = id.to_string();
        self.transact(move |tx| {
            let run = find_run(tx, &id)?;
            if run.status.is_final() {
                return Err(RunsError::Refused(Refusal::NotResumable, format!(
                    "run {} is already {}",
                    run.id,
                    run.status.as_str()
                )));
            }
            tx.prepare_cached("UPDATE runs SET status = 'cancelled', last_error = 'cancelled by the user', lease_owner = NULL, lease_until = NULL, updated_at = ?2 WHERE id = ?1")?.execute(params![run.id, now_ms()],
            )?;
            // Every sub-agent run below it that has not ended stops with it.
            for below in super::tree::ids_below(tx, &run.id)? {
                tx.prepare_cached("UPDATE runs SET status = 'cancelled', last_error = 'cancelled with the run above it', lease_owner = NULL, lease_until = NULL, updated_at = ?2 WHERE id = ?1 AND status IN ('in_progress', 'requires_action', 'failed')")?.execute(params![below, now_ms()],
                )?;
            }
            Ok((run.id, run.status))
        })
        .await
    }

    /// One run, by id or unique id prefix, with its pending items; a paused run's
    /// items include those waiting in its sub-agents' runs below it.
    pub fn run(&self, id: &str) -> Result<(RunRow, Vec<PendingRow>), RunsError> {
        self.read_runs(|conn| {
            let snapshot = conn.unchecked_transaction()?;
            let run = find_run(&snapshot, id)?;
            let pending = pending_with_below(&snapshot, &run)?;
            snapshot.finish()?;
            Ok((run, pending))
        })
    }

    /// Runs of `scope`, newest first, with a status, of a conversation, at most `limit`.
    pub fn runs(
        &self,
        scope: Scope<'_>,
        status: Option<RunStatus>,
        conversation: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, RunsError> {
        self.runs_of(scope, status, conversation, None, limit)
    }

    /// [`SqliteStore::runs`], of one agent too when `agent` names it.
    pub fn runs_of(
        &self,
        scope: Scope<'_>,
        status: Option<RunStatus>,
        conversation: Option<&str>,
        agent: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRow>, RunsError> {
        self.read_runs(|conn| {
            let sql = format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR conversation_id = ?2) AND (?4 IS NULL OR tenant = ?4) AND (?5 IS NULL OR agent = ?5) ORDER BY created_at DESC, rowid DESC LIMIT ?3"
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt
                .query_map(
                    params![
                        status.map(RunStatus::as_str),
                        conversation,
                        limit as i64,
                        scope.tenant(),
                        agent
                    ],
                    run_from_row,
                )?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
    }

    /// A conversation's messages (JSON), in order.
    pub fn conversation_messages(&self, conversation: &str) -> Result<Vec<String>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT message FROM messages WHERE conversation_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt
                .query_map([conversation], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
    }
}

/// Appends messages to the conversation of run `run_id`, the first at `first_seq`. A
/// position already taken means two runs wrote the same conversation: refused.
pub(super) fn append_messages(
    tx: &Connection,
    run_id: &str,
    first_seq: usize,
    messages: &[String],
) -> Result<(), RunsError> {
    if messages.is_empty() {
        return Ok(());
    }
    let mut stmt = tx.prepare_cached(
        "INSERT INTO messages (conversation_id, seq, run_id, message) SELECT conversation_id, ?2, id, ?3 FROM runs WHERE id = ?1",
    )?;
    for (i, m) in messages.iter().enumerate() {
        stmt.execute(params![run_id, (first_seq + i) as i64, m])
            .map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::ConstraintViolation) => RunsError::Refused(
                    Refusal::ConversationBusy,
                    format!("run {run_id}: its conversation was changed by another run meanwhile"),
                ),
                _ => RunsError::Sql(e),
            })?;
    }
    Ok(())
}

/// A count as SQLite stores it (at most `i64::MAX`).
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn lost_lease(id: &str) -> RunsError {
    crate::lease::lost_lease(id).into()
}
