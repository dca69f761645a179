//! A run's timeline as stored: the messages it added to its conversation, every item
//! it paused for with the decision and when it was made, and its call records.

use super::record::{COLUMNS, from_row};
use super::runs::find_run;
use super::{RunRow, RunsError, Store, StoredCall};
use crate::protocol::{Decision, RequiredItem};

/// One item a run paused for, decided or not.
#[derive(Debug, Clone)]
pub struct PauseRow {
    pub item: RequiredItem,
    pub decision: Option<Decision>,
    /// `waiting`, `decided`, `executing` or `done`.
    pub state: String,
    /// Unix milliseconds, once decided.
    pub decided_at: Option<i64>,
    /// Who decided, when it was recorded.
    pub decided_by: Option<String>,
    /// The issued key it decided with, and the name it typed.
    pub decided_by_key: Option<String>,
    pub decided_as: Option<String>,
}

/// What [`Store::run_timeline`] reads, in one snapshot.
#[derive(Debug, Clone)]
pub struct TimelineRows {
    pub run: RunRow,
    /// The messages this run added (JSON), in order, with their position.
    pub messages: Vec<(i64, String)>,
    pub pauses: Vec<PauseRow>,
    /// Oldest first.
    pub calls: Vec<StoredCall>,
}

impl Store {
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
                    "SELECT call_id, kind, tool, arguments, decision, state, decided_at, decided_by, decided_by_key, decided_as FROM pending WHERE run_id = ?1 ORDER BY rowid",
                )?
                .query_map([&run.id], |r| {
                    let kind: String = r.get(1)?;
                    let arguments: String = r.get(3)?;
                    let decision: Option<String> = r.get(4)?;
                    Ok(PauseRow {
                        item: RequiredItem {
                            call_id: r.get(0)?,
                            kind: crate::protocol::ItemKind::parse(&kind)
                                .unwrap_or(crate::protocol::ItemKind::Approval),
                            tool: r.get(2)?,
                            arguments: serde_json::from_str(&arguments)
                                .unwrap_or(serde_json::Value::Null),
                            run_id: None,
                            path: Vec::new(),
                        },
                        decision: decision.and_then(|d| serde_json::from_str(&d).ok()),
                        state: r.get(5)?,
                        decided_at: r.get(6)?,
                        decided_by: r.get(7)?,
                        decided_by_key: r.get(8)?,
                        decided_as: r.get(9)?,
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
