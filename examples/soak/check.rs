//! What the soak reads back: where a kill landed (the run's stored status and whether a
//! call was executing), and the invariants of a finished run, straight from the SQLite
//! file (opened query-only, after every process that drove the run is gone) and the
//! workspace's launch log.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde_json::Value;

use crate::world::{LAUNCH_LOG, LAUNCHING, READ_LOG};

/// A connection that reads only (the file must exist; nothing is created).
pub fn open(db: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// A run as the soak needs it.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub id: String,
    pub status: String,
    state: String,
}

impl StoredRun {
    /// How the current turn's calls stand (`executing`, `waiting`, ...), from the state.
    fn phases(&self) -> Vec<String> {
        let state: Value = serde_json::from_str(&self.state).unwrap_or(Value::Null);
        state["turn"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["phase"]["phase"].as_str().map(str::to_string))
            .collect()
    }
}

/// The newest run of a conversation.
pub fn run_of(conn: &Connection, conversation: &str) -> rusqlite::Result<Option<StoredRun>> {
    conn.query_row(
        "SELECT id, status, state FROM runs WHERE conversation_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT 1",
        [conversation],
        |r| {
            Ok(StoredRun {
                id: r.get(0)?,
                status: r.get(1)?,
                state: r.get(2)?,
            })
        },
    )
    .optional()
}

/// Where a kill landed, from what it left in the database.
pub fn kill_point(db: &Path, conversation: &str) -> String {
    let Ok(conn) = open(db) else {
        return "no database yet".into();
    };
    let run = match run_of(&conn, conversation) {
        Ok(Some(run)) => run,
        Ok(None) => return "before the run existed".into(),
        Err(_) => return "no database yet".into(),
    };
    let phases = run.phases();
    let pending: Vec<String> = conn
        .prepare("SELECT state FROM pending WHERE run_id = ?1")
        .and_then(|mut s| {
            s.query_map([&run.id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .unwrap_or_default();
    match run.status.as_str() {
        "in_progress" if phases.iter().any(|p| p == "executing") => {
            "in_progress, a call executing".into()
        }
        "in_progress" => "in_progress, between steps".into(),
        "requires_action" if pending.iter().any(|p| p == "decided") => {
            "requires_action, a decision recorded".into()
        }
        other => other.to_string(),
    }
}

/// One broken invariant.
#[derive(Debug, Clone)]
pub struct Violation {
    pub run_id: String,
    pub what: String,
}

/// Checks made and what broke, by invariant.
#[derive(Debug, Default)]
pub struct Tally {
    pub checks: BTreeMap<&'static str, u64>,
    pub violations: Vec<(&'static str, Violation)>,
    /// Calls of launching tools recorded `failed`/`interrupted`, and of those, how many
    /// had launched before the kill.
    pub interrupted: u64,
    pub interrupted_launched: u64,
    /// Read-only calls that ran more than once (allowed).
    pub read_reruns: u64,
}

impl Tally {
    fn check(&mut self, name: &'static str, ok: bool, run_id: &str, what: impl FnOnce() -> String) {
        *self.checks.entry(name).or_default() += 1;
        if !ok {
            self.violations.push((
                name,
                Violation {
                    run_id: run_id.to_string(),
                    what: what(),
                },
            ));
        }
    }

    pub fn total_checks(&self) -> u64 {
        self.checks.values().sum()
    }
}

pub const I_COMPLETED: &str = "1 the run ends completed";
pub const I_ONCE: &str = "2 a launching call ran at most once";
pub const I_RECORDED: &str = "3 a mentioned call has exactly one record";
pub const I_NO_STRAY: &str = "3 no record of a call the run never made";
pub const I_NO_DUP: &str = "3 no duplicate (run_id, call_id) record";
pub const I_ANSWERED: &str = "3 every call answered once to the model";
pub const I_PENDING: &str = "3 a completed run has no open pending item";
pub const I_ONCE_LATE: &str = "2 ... and still so at the final re-read";
pub const I_INTEGRITY: &str = "4 PRAGMA integrity_check ok";
pub const I_TRUTHFUL: &str = "5 a record agrees with the launch log";
pub const I_LAUNCH_RECORDED: &str = "5 every launch has a record";

/// Ids in a log file, with how many times each appears.
pub fn log_counts(path: &Path) -> HashMap<String, u32> {
    let mut counts = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        let line = line.trim();
        if !line.is_empty() {
            *counts.entry(line.to_string()).or_default() += 1;
        }
    }
    counts
}

/// Checks a finished run's invariants (1, 2, 3, 5); `run_id` is `None` when no run was
/// ever stored for the conversation.
pub fn check_run(
    tally: &mut Tally,
    conn: &Connection,
    conversation: &str,
    workspace: &Path,
    native: bool,
) -> rusqlite::Result<()> {
    let Some(run) = run_of(conn, conversation)? else {
        tally.check(I_COMPLETED, false, conversation, || {
            format!("conversation {conversation} has no run")
        });
        return Ok(());
    };
    let id = run.id.as_str();
    tally.check(I_COMPLETED, run.status == "completed", id, || {
        format!("the run ended {}", run.status)
    });

    // What the conversation says the model asked for, and what it was told.
    let mut stmt =
        conn.prepare("SELECT message FROM messages WHERE conversation_id = ?1 ORDER BY seq")?;
    let messages: Vec<String> = stmt
        .query_map([conversation], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut mentioned: Vec<(String, String)> = Vec::new();
    let mut answers: HashMap<String, u32> = HashMap::new();
    for m in &messages {
        let m: Value = serde_json::from_str(m).unwrap_or(Value::Null);
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            let call = c["id"].as_str().unwrap_or_default().to_string();
            mentioned.push((call, c["name"].as_str().unwrap_or_default().to_string()));
        }
        if let Some(answered) = m["tool_call_id"].as_str() {
            *answers.entry(answered.to_string()).or_default() += 1;
        }
    }

    // The records of the run.
    let mut stmt = conn.prepare(
        "SELECT call_id, tool, status, COALESCE(error_kind, '') FROM tool_calls WHERE run_id = ?1",
    )?;
    let records: Vec<(String, String, String, String)> = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut by_call: HashMap<&str, Vec<&(String, String, String, String)>> = HashMap::new();
    for r in &records {
        by_call.entry(r.0.as_str()).or_default().push(r);
    }
    for (call, tool) in &mentioned {
        let n = by_call.get(call.as_str()).map_or(0, Vec::len);
        tally.check(I_RECORDED, n == 1, id, || {
            format!("call {call} ({tool}) has {n} records")
        });
        if native {
            let a = answers.get(call).copied().unwrap_or(0);
            tally.check(I_ANSWERED, a == 1, id, || {
                format!("call {call} ({tool}) is answered {a} times in the conversation")
            });
        }
    }
    for (call, tool, _, _) in &records {
        let known = mentioned.iter().any(|(c, _)| c == call);
        tally.check(I_NO_STRAY, known, id, || {
            format!("a record of call {call} ({tool}), which no message of the run mentions")
        });
    }
    let dups: Vec<(String, i64)> = conn
        .prepare(
            "SELECT call_id, COUNT(*) FROM tool_calls WHERE run_id = ?1 GROUP BY call_id HAVING COUNT(*) > 1",
        )?
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    tally.check(I_NO_DUP, dups.is_empty(), id, || {
        format!("duplicate records (call, count): {dups:?}")
    });
    if run.status == "completed" {
        let open: Vec<(String, String)> = conn
            .prepare("SELECT call_id, state FROM pending WHERE run_id = ?1 AND state <> 'done'")?
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        tally.check(I_PENDING, open.is_empty(), id, || {
            format!("pending items left open (call, state): {open:?}")
        });
    }

    // The launch log against the records.
    let launches = log_counts(&workspace.join(LAUNCH_LOG));
    for (call, n) in &launches {
        tally.check(I_ONCE, *n == 1, id, || {
            format!("call {call} was launched {n} times")
        });
        let recorded = by_call.contains_key(call.as_str());
        tally.check(I_LAUNCH_RECORDED, recorded, id, || {
            format!("call {call} was launched but has no record")
        });
    }
    for (call, tool, status, kind) in &records {
        if !LAUNCHING.contains(&tool.as_str()) {
            continue;
        }
        let launched = launches.get(call).copied().unwrap_or(0);
        let ok = match (status.as_str(), kind.as_str()) {
            ("succeeded", _) => launched == 1,
            ("failed", "interrupted") => {
                tally.interrupted += 1;
                tally.interrupted_launched += u64::from(launched > 0);
                true
            }
            // Denied, refused or never started: it must not have run.
            _ => launched == 0,
        };
        tally.check(I_TRUTHFUL, ok, id, || {
            format!(
                "call {call} ({tool}) is recorded {status}/{kind} but was launched {launched} times"
            )
        });
    }
    tally.read_reruns += log_counts(&workspace.join(READ_LOG))
        .values()
        .filter(|n| **n > 1)
        .count() as u64;
    Ok(())
}

/// Re-reads a run's launch log at the end (a killed process's orphaned program may
/// have written late).
pub fn recheck_launches(tally: &mut Tally, run_id: &str, workspace: &Path) {
    for (call, n) in log_counts(&workspace.join(LAUNCH_LOG)) {
        tally.check(I_ONCE_LATE, n == 1, run_id, || {
            format!("call {call} was launched {n} times (seen at the final re-read)")
        });
    }
}

/// Invariant 4 for one database file.
pub fn check_integrity(tally: &mut Tally, db: &Path) {
    let result = open(db).and_then(|conn| {
        let rows: Vec<String> = conn
            .prepare("PRAGMA integrity_check")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let fk: i64 = conn.query_row(
            "SELECT COUNT(*) FROM pragma_foreign_key_check",
            params![],
            |r| r.get(0),
        )?;
        Ok((rows, fk))
    });
    let name = db.display().to_string();
    match result {
        Ok((rows, fk)) => {
            let ok = rows == ["ok"];
            tally.check(I_INTEGRITY, ok && fk == 0, &name, || {
                format!("integrity_check: {rows:?}; foreign key problems: {fk}")
            })
        }
        Err(e) => tally.check(I_INTEGRITY, false, &name, || format!("cannot check: {e}")),
    }
}
