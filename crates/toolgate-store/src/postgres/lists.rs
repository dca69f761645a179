//! Lists of runs on PostgreSQL: runs by tenant, status and conversation (a paused run's
//! with its pending items, read in the same snapshot), runs in progress, and a run's
//! timeline (its messages, pauses and call records).

use deadpool_postgres::GenericClient;
use tokio_postgres::IsolationLevel;
use tokio_postgres::types::ToSql;

use super::rows::{
    CALL_COLUMNS, PENDING_COLUMNS, PENDING_COUNT, PENDING_ORDER, RUN_COLUMNS, call_from_row, get,
    pending_from_row, run_from_row,
};
use super::{PgStore, StoreError};
use crate::{PauseRow, PendingRow, RunRow, Scope, TimelineRows};
use toolgate_protocol::RunStatus;

/// Which runs, in what order: newest first (in the order they were added, within a
/// millisecond), filtered by status (`$1`), conversation (`$2`) and tenant (`$4`), at
/// most `$3`.
const RUNS: &str = "WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR conversation_id = $2) AND ($4::text IS NULL OR tenant = $4) \
     AND ($5::text IS NULL OR agent = $5) ORDER BY created_at DESC, added DESC LIMIT $3";

impl PgStore {
    /// Runs of `scope`, newest first, with a status, of a conversation, at most `limit`.
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
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            s.list_runs(&client, (tenant, status), (conversation, None), limit)
                .await
        })
        .await
    }

    async fn list_runs(
        &self,
        client: &impl GenericClient,
        (tenant, status): (Option<String>, Option<RunStatus>),
        (conversation, agent): (Option<String>, Option<String>),
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs {RUNS}");
        let rows = self
            .rows(
                client,
                &sql,
                &[
                    &status.map(RunStatus::as_str),
                    &conversation,
                    &limit,
                    &tenant,
                    &agent,
                ],
            )
            .await?;
        rows.iter().map(run_from_row).collect()
    }

    /// [`PgStore::runs`], each paused run with its pending items (and those waiting
    /// below it), all read in one snapshot.
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
        self.on_pool(move |s| async move {
            let mut client = s.client().await?;
            let snapshot = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(|e| s.error(e))?;
            let rows = s
                .list_runs(&snapshot, (tenant, status), (conversation, agent), limit)
                .await?;
            let mut listed = Vec::with_capacity(rows.len());
            for row in rows {
                let pending = if row.status == RunStatus::RequiresAction {
                    s.pending_with_below(&snapshot, &row).await?
                } else {
                    Vec::new()
                };
                listed.push((row, pending));
            }
            snapshot.commit().await.map_err(|e| s.error(e))?;
            Ok(listed)
        })
        .await
    }

    /// Runs in progress (not paused, not ended) started by `user` in `tenant`, and in
    /// `tenant` in all: what `runs_at_once` limits.
    pub async fn runs_in_progress(
        &self,
        tenant: &str,
        user: &str,
    ) -> Result<(u64, u64), StoreError> {
        let (tenant, user) = (tenant.to_string(), user.to_string());
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let rows = s
                .rows(
                    &client,
                    "SELECT count(*) FILTER (WHERE started_by = $2), count(*) FROM runs WHERE tenant = $1 AND status = 'in_progress' AND depth = 0",
                    &[&tenant, &user],
                )
                .await?;
            let Some(row) = rows.first() else {
                return Ok((0, 0));
            };
            let (mine, all): (i64, i64) = (get(row, 0)?, get(row, 1)?);
            Ok((mine.max(0) as u64, all.max(0) as u64))
        })
        .await
    }

    /// A run (by id or unique prefix) with its messages, pauses and call records, read
    /// in one snapshot.
    pub async fn run_timeline(&self, id: &str) -> Result<TimelineRows, StoreError> {
        let id = id.to_string();
        self.on_pool(move |s| async move {
            let mut client = s.client().await?;
            let snapshot = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(|e| s.error(e))?;
            let run = s.find_run(&snapshot, &id).await?;
            let pauses = format!(
                "SELECT {PENDING_COLUMNS}, decided_at, decided_by, decided_by_key, decided_as FROM pending WHERE run_id = $1 ORDER BY {PENDING_ORDER}"
            );
            let calls = format!("SELECT {CALL_COLUMNS} FROM tool_calls WHERE run_id = $1 ORDER BY id");
            let both: [&(dyn ToSql + Sync); 2] = [&run.conversation_id, &run.id];
            let one: [&(dyn ToSql + Sync); 1] = [&run.id];
            let (messages, pauses, calls) = tokio::try_join!(
                s.rows(
                    &snapshot,
                    "SELECT seq, message FROM messages WHERE conversation_id = $1 AND run_id = $2 ORDER BY seq",
                    &both,
                ),
                s.rows(&snapshot, &pauses, &one),
                s.rows(&snapshot, &calls, &one),
            )?;
            let messages = messages
                .iter()
                .map(|r| Ok((get(r, 0)?, get(r, 1)?)))
                .collect::<Result<_, StoreError>>()?;
            let pauses = pauses
                .iter()
                .map(|r| {
                    let p = pending_from_row(r)?;
                    Ok(PauseRow {
                        item: p.item,
                        decision: p.decision,
                        state: p.state,
                        decided_at: get(r, PENDING_COUNT)?,
                        decided_by: get(r, PENDING_COUNT + 1)?,
                        decided_by_key: get(r, PENDING_COUNT + 2)?,
                        decided_as: get(r, PENDING_COUNT + 3)?,
                    })
                })
                .collect::<Result<_, StoreError>>()?;
            let calls = calls
                .iter()
                .map(call_from_row)
                .collect::<Result<_, _>>()?;
            snapshot.commit().await.map_err(|e| s.error(e))?;
            Ok(TimelineRows {
                run,
                messages,
                pauses,
                calls,
            })
        })
        .await
    }
}
