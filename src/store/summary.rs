//! Usage summaries in SQL over indexed columns: one conversation (the indexes cover
//! every column it reads), one tool, and the whole database.

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde::Serialize;

use super::{Store, StoreError};

/// Duration percentiles, milliseconds (nearest rank).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Durations {
    pub p50: f64,
    pub p95: f64,
}

/// What one conversation's calls came to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ConversationSummary {
    pub conversation_id: String,
    pub total_calls: u64,
    pub successful_calls: u64,
    pub failed_calls: u64,
    pub denied_calls: u64,
    pub timeout_calls: u64,
    pub cancelled_calls: u64,
    pub client_calls: u64,
    /// Successful calls per hundred calls that toolgate ran or refused (client calls,
    /// whose outcome only the client knows, are left out).
    pub success_rate: f64,
    pub tool_usage: BTreeMap<String, u64>,
    pub duration_ms: Durations,
    /// Unix milliseconds of the first and last call.
    pub first_call_at: Option<i64>,
    pub last_call_at: Option<i64>,
}

/// One tool's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ToolStats {
    pub tool: String,
    pub total_calls: u64,
    pub successful_calls: u64,
    pub failed_calls: u64,
    pub denied_calls: u64,
    pub timeout_calls: u64,
    pub success_rate: f64,
    pub duration_ms: Durations,
}

/// The whole database.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct GlobalStats {
    pub total_calls: u64,
    pub conversations: u64,
    pub by_status: BTreeMap<String, u64>,
    pub success_rate: f64,
    pub duration_ms: Durations,
    pub tools: Vec<ToolStats>,
}

fn rate(ok: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        (ok as f64 * 1000.0 / total as f64).round() / 10.0
    }
}

/// Nearest-rank p50 and p95 of `durations` (reordered in place).
fn percentiles(durations: &mut [f64]) -> Durations {
    let n = durations.len();
    if n == 0 {
        return Durations::default();
    }
    let mut at = |p: f64| {
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        let (_, v, _) = durations.select_nth_unstable_by(rank, f64::total_cmp);
        // Microseconds are as fine as a duration is worth reporting.
        (*v * 1000.0).round() / 1000.0
    };
    Durations {
        p50: at(0.50),
        p95: at(0.95),
    }
}

/// The durations a covering index query yields.
fn durations(conn: &Connection, sql: &str, key: Option<&str>) -> rusqlite::Result<Vec<f64>> {
    let mut stmt = conn.prepare_cached(sql)?;

    match key {
        Some(k) => stmt.query_map([k], |r| r.get(0))?.collect(),
        None => stmt.query_map([], |r| r.get(0))?.collect(),
    }
}

impl Store {
    /// The summary of one conversation.
    pub fn conversation_summary(
        &self,
        conversation_id: &str,
    ) -> Result<ConversationSummary, StoreError> {
        self.read(|conn| {
            let mut s = ConversationSummary {
                conversation_id: conversation_id.to_string(),
                ..Default::default()
            };
            let mut stmt = conn.prepare_cached(
                "SELECT tool, status, count(*), min(started_at), max(started_at) FROM tool_calls \
                 WHERE conversation_id = ?1 GROUP BY tool, status",
            )?;
            let rows = stmt.query_map([conversation_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })?;
            for row in rows {
                let (tool, status, n, first, last) = row?;
                let n = n.max(0) as u64;
                s.total_calls += n;
                *s.tool_usage.entry(tool).or_default() += n;
                match status.as_str() {
                    "succeeded" => s.successful_calls += n,
                    "failed" => s.failed_calls += n,
                    "denied" => s.denied_calls += n,
                    "timeout" => s.timeout_calls += n,
                    "cancelled" => s.cancelled_calls += n,
                    _ => s.client_calls += n,
                }
                s.first_call_at = Some(s.first_call_at.map_or(first, |f| f.min(first)));
                s.last_call_at = Some(s.last_call_at.map_or(last, |l| l.max(last)));
            }
            s.success_rate = rate(s.successful_calls, s.total_calls - s.client_calls);
            s.duration_ms = percentiles(&mut durations(
                conn,
                "SELECT duration_ms FROM tool_calls INDEXED BY tool_calls_conversation WHERE conversation_id = ?1",
                Some(conversation_id),
            )?);
            Ok(s)
        })
    }

    /// Statistics of one tool over every conversation.
    pub fn tool_stats(&self, tool: &str) -> Result<ToolStats, StoreError> {
        self.read(|conn| tool_stats(conn, tool))
    }

    /// Statistics of the whole database, with every tool's.
    pub fn global_stats(&self) -> Result<GlobalStats, StoreError> {
        self.read(|conn| {
            let mut g = GlobalStats::default();
            let mut stmt =
                conn.prepare_cached("SELECT status, count(*) FROM tool_calls GROUP BY status")?;
            for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
                let (status, n) = row?;
                g.total_calls += n.max(0) as u64;
                g.by_status.insert(status, n.max(0) as u64);
            }
            g.success_rate = rate(
                g.by_status.get("succeeded").copied().unwrap_or(0),
                g.total_calls - g.by_status.get("client").copied().unwrap_or(0),
            );
            g.conversations = conn
                .query_row(
                    "SELECT count(*) FROM (SELECT DISTINCT conversation_id FROM tool_calls)",
                    [],
                    |r| r.get::<_, i64>(0),
                )?
                .max(0) as u64;
            g.duration_ms = percentiles(&mut durations(
                conn,
                "SELECT duration_ms FROM tool_calls INDEXED BY tool_calls_tool",
                None,
            )?);
            let names: Vec<String> = conn
                .prepare_cached("SELECT DISTINCT tool FROM tool_calls ORDER BY tool")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for name in names {
                g.tools.push(tool_stats(conn, &name)?);
            }
            Ok(g)
        })
    }
}

fn tool_stats(conn: &Connection, tool: &str) -> rusqlite::Result<ToolStats> {
    let mut t = ToolStats {
        tool: tool.to_string(),
        ..Default::default()
    };
    let mut client = 0;
    let mut stmt = conn.prepare_cached(
        "SELECT status, count(*) FROM tool_calls WHERE tool = ?1 GROUP BY status",
    )?;
    for row in stmt.query_map([tool], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })? {
        let (status, n) = row?;
        let n = n.max(0) as u64;
        t.total_calls += n;
        match status.as_str() {
            "succeeded" => t.successful_calls += n,
            "failed" => t.failed_calls += n,
            "denied" => t.denied_calls += n,
            "timeout" => t.timeout_calls += n,
            "client" => client += n,
            _ => {}
        }
    }
    t.success_rate = rate(t.successful_calls, t.total_calls - client);
    t.duration_ms = percentiles(&mut durations(
        conn,
        "SELECT duration_ms FROM tool_calls INDEXED BY tool_calls_tool WHERE tool = ?1",
        Some(tool),
    )?);
    Ok(t)
}
