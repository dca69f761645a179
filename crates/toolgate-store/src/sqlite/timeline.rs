//! A run's timeline as stored: the messages it added to its conversation, every item
//! it paused for with the decision and when it was made, and its call records.

use super::record::{COLUMNS, from_row};
use super::runs::find_run;
use super::{RunRow, RunsError, SqliteStore, StoredCall};
use toolgate_protocol::{Decision, RequiredItem};

/// One item a run paused for, decided or not.
#[derive(Debug, Clone)]
pub struct PauseRow {
    pub item: RequiredItem,
    pub decision: Option<Decision>,
    pub state: crate::PendingState,
    /// Unix milliseconds, once decided.
    pub decided_at: Option<i64>,
    /// Who decided, when it was recorded.
    pub decided_by: Option<String>,
    /// The issued key it decided with, and the name it typed.
    pub decided_by_key: Option<String>,
    pub decided_as: Option<String>,
}

/// What [`SqliteStore::run_timeline`] reads, in one snapshot.
#[derive(Debug, Clone)]
pub struct TimelineRows {
    pub run: RunRow,
    /// The messages this run added (JSON), in order, with their position.
    pub messages: Vec<(i64, String)>,
    pub pauses: Vec<PauseRow>,
    /// Oldest first.
    pub calls: Vec<StoredCall>,
}

impl SqliteStore {
    /// A run (by id or unique prefix) with its messages, pauses and call records.
    pub fn run_timeline(&self, id: &str) -> Result<TimelineRows, RunsError> {
        self.read_runs(|conn| {
            let snapshot = conn.unchecked_transaction()?;
            let run = find_run(&snapshot, id)?;
            let messages = snapshot
                .prepare_cached(
                    "SELECT seq, message FROM messages WHERE conversation_id = ?1 AND run_id = ?2 ORDER BY seq",
                )?
                .query_map([&run.conversation_id, &run.id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let pauses = snapshot
                .prepare_cached(
                    &format!("SELECT {}, decided_at, decided_by, decided_by_key, decided_as FROM pending WHERE run_id = ?1 ORDER BY rowid", super::runs::PENDING_COLUMNS),
                )?
                .query_map([&run.id], |r| {
                    let p = super::runs::pending_from_row(r)?;
                    Ok(PauseRow {
                        item: p.item,
                        decision: p.decision,
                        state: p.state,
                        decided_at: r.get(super::runs::PENDING_COUNT)?,
                        decided_by: r.get(super::runs::PENDING_COUNT + 1)?,
                        decided_by_key: r.get(super::runs::PENDING_COUNT + 2)?,
                        decided_as: r.get(super::runs::PENDING_COUNT + 3)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let sql = format!("SELECT {COLUMNS} FROM tool_calls WHERE run_id = ?1 ORDER BY id");
            let calls = snapshot
                .prepare_cached(&sql)?
                .query_map([&run.id], from_row)?
                .collect::<rusqlite::Result<_>>()?;
            snapshot.finish()?;
            Ok(TimelineRows {
                run,
                messages,
                pauses,
                calls,
            })
        })
    }
}
