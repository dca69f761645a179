//! Usage summaries: one conversation in SQL over a covering index (exact percentiles),
//! one tool and the whole database from the running totals (`totals.rs`), each with the
//! same counters ([`CallCounts`]), tallied in one place.

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde::Serialize;
use utoipa::ToSchema;

use super::totals::{self, ByStatus, Histogram};
use super::{SqliteStore, StoreError};
use crate::protocol::CallStatus;

/// Duration percentiles, milliseconds (nearest rank).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, ToSchema)]
pub struct Durations {
    /// The median duration.
    pub p50: f64,
    /// 95 of 100 calls took at most this long.
    pub p95: f64,
}

/// How a set of calls ended: the counters every summary carries, under the same names
/// (flattened into `ConversationSummary`, `ToolStats` and `GlobalStats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct CallCounts {
    /// Every recorded call.
    pub total_calls: u64,
    /// Calls that ran and returned a result that is not an error.
    pub successful_calls: u64,
    /// Calls that could not run, or whose result is an error.
    pub failed_calls: u64,
    /// Calls refused by a person or a `never` permission.
    pub denied_calls: u64,
    /// Calls that outlived their timeout.
    pub timeout_calls: u64,
    /// Calls stopped before they finished.
    pub cancelled_calls: u64,
    /// Definition-only calls handed to the client.
    pub client_calls: u64,
    /// Successful calls per hundred calls that toolgate ran or refused (client calls,
    /// whose outcome only the client knows, are left out), to one decimal.
    pub success_rate: f64,
}

impl CallCounts {
    /// Tallies `(status, calls)` pairs. A status this toolgate does not know (written by
    /// a newer one) counts in the total only.
    fn tally<'a>(rows: impl IntoIterator<Item = (&'a str, u64)>) -> Self {
        let mut c = CallCounts::default();
        for (status, n) in rows {
            c.total_calls += n;
            let bucket = match CallStatus::parse(status) {
                Some(CallStatus::Succeeded) => &mut c.successful_calls,
                Some(CallStatus::Failed) => &mut c.failed_calls,
                Some(CallStatus::Denied) => &mut c.denied_calls,
                Some(CallStatus::Timeout) => &mut c.timeout_calls,
                Some(CallStatus::Cancelled) => &mut c.cancelled_calls,
                Some(CallStatus::Client) => &mut c.client_calls,
                None => continue,
            };
            *bucket += n;
        }
        c.success_rate = rate(c.successful_calls, c.total_calls - c.client_calls);
        c
    }
}

/// What one conversation's calls came to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct ConversationSummary {
    pub conversation_id: String,
    #[serde(flatten)]
    pub calls: CallCounts,
    /// Calls per tool name.
    pub tool_usage: BTreeMap<String, u64>,
    pub duration_ms: Durations,
    /// Unix milliseconds of the first call.
    pub first_call_at: Option<i64>,
    /// Unix milliseconds of the last call.
    pub last_call_at: Option<i64>,
}

/// One tool's record, over every conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct ToolStats {
    pub tool: String,
    #[serde(flatten)]
    pub calls: CallCounts,
    pub duration_ms: Durations,
}

/// The whole database.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct GlobalStats {
    /// Conversations with at least one call.
    pub conversations: u64,
    #[serde(flatten)]
    pub calls: CallCounts,
    pub duration_ms: Durations,
    /// Every tool's statistics, by name.
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

impl SqliteStore {
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
            let mut by_status = Vec::new();
            for row in rows {
                let (tool, status, n, first, last) = row?;
                let n = n.max(0) as u64;
                *s.tool_usage.entry(tool).or_default() += n;
                by_status.push((status, n));
                s.first_call_at = Some(s.first_call_at.map_or(first, |f| f.min(first)));
                s.last_call_at = Some(s.last_call_at.map_or(last, |l| l.max(last)));
            }
            s.calls = CallCounts::tally(by_status.iter().map(|(st, n)| (st.as_str(), *n)));
            s.duration_ms = percentiles(&mut durations(
                conn,
                "SELECT duration_ms FROM tool_calls INDEXED BY tool_calls_conversation WHERE conversation_id = ?1",
                Some(conversation_id),
            )?);
            Ok(s)
        })
    }

    /// Statistics of one tool over every conversation (from the running totals; its
    /// percentiles to three significant digits from one millisecond up).
    pub fn tool_stats(&self, tool: &str) -> Result<ToolStats, StoreError> {
        self.read(|conn| {
            let snapshot = conn.unchecked_transaction()?;
            let (by_status, durations, _) = totals::tool_totals(&snapshot, Some(tool))?;
            snapshot.finish()?;
            Ok(tool_stats(tool, &by_status, &durations))
        })
    }

    /// [`SqliteStore::tool_stats`] of one tenant's records (read from the records
    /// themselves: the running totals are the whole database's).
    pub fn tool_stats_of(&self, tenant: &str, tool: &str) -> Result<ToolStats, StoreError> {
        self.read(|conn| {
            let (by_status, durations, _) = tenant_tally(conn, tenant)?;
            Ok(tool_stats(tool, &by_status, &durations))
        })
    }

    /// [`SqliteStore::global_stats`] of one tenant's records and conversations.
    pub fn global_stats_of(&self, tenant: &str) -> Result<GlobalStats, StoreError> {
        self.read(|conn| {
            let (by_status, durations, conversations) = tenant_tally(conn, tenant)?;
            Ok(global(by_status, durations, conversations))
        })
    }

    /// Statistics of the whole database, with every tool's (from the running totals;
    /// percentiles to three significant digits from one millisecond up).
    pub fn global_stats(&self) -> Result<GlobalStats, StoreError> {
        self.read(|conn| {
            let snapshot = conn.unchecked_transaction()?;
            let (by_status, durations, tail) = totals::tool_totals(&snapshot, None)?;
            let conversations = totals::conversations(&snapshot, &tail)?;
            snapshot.finish()?;
            Ok(global(by_status, durations, conversations))
        })
    }
}

/// One tenant's calls by tool and status, their durations by tool and bucket, and its
/// conversations with a call (records without a run are the default tenant's).
fn tenant_tally(conn: &Connection, tenant: &str) -> rusqlite::Result<(ByStatus, Histogram, u64)> {
    let snapshot = conn.unchecked_transaction()?;
    let mut by_status = ByStatus::new();
    let mut durations = Histogram::new();
    let mut conversations = std::collections::HashSet::new();
    {
        let mut stmt = snapshot.prepare_cached(
            "SELECT c.tool, c.status, c.duration_ms, c.conversation_id FROM tool_calls c LEFT JOIN runs r ON r.id = c.run_id WHERE COALESCE(r.tenant, 'default') = ?1",
        )?;
        let mut rows = stmt.query([tenant])?;
        while let Some(row) = rows.next()? {
            let (tool, status, ms): (String, String, f64) = (row.get(0)?, row.get(1)?, row.get(2)?);
            conversations.insert(row.get::<_, String>(3)?);
            *durations
                .entry((tool.clone(), totals::bucket(ms)))
                .or_default() += 1;
            *by_status.entry((tool, status)).or_default() += 1;
        }
    }
    snapshot.finish()?;
    Ok((by_status, durations, conversations.len() as u64))
}

/// The statistics of a tally.
fn global(by_status: ByStatus, durations: Histogram, conversations: u64) -> GlobalStats {
    let mut statuses: BTreeMap<&str, u64> = BTreeMap::new();
    for ((_, status), n) in &by_status {
        *statuses.entry(status.as_str()).or_default() += n;
    }
    let mut all: BTreeMap<i64, u64> = BTreeMap::new();
    for ((_, b), n) in &durations {
        *all.entry(*b).or_default() += n;
    }
    let mut names: Vec<&str> = by_status.keys().map(|(t, _)| t.as_str()).collect();
    names.dedup();
    GlobalStats {
        conversations,
        calls: CallCounts::tally(statuses),
        duration_ms: histogram_percentiles(all.iter().map(|(b, n)| (*b, *n))),
        tools: names
            .into_iter()
            .map(|name| tool_stats(name, &by_status, &durations))
            .collect(),
    }
}

/// One tool's statistics out of the totals of every tool.
fn tool_stats(tool: &str, by_status: &ByStatus, durations: &Histogram) -> ToolStats {
    let key = |t: &str| (t.to_string(), String::new());
    let statuses = by_status
        .range(key(tool)..)
        .take_while(|((t, _), _)| t == tool)
        .map(|((_, s), n)| (s.as_str(), *n));
    let buckets = durations
        .range((tool.to_string(), i64::MIN)..)
        .take_while(|((t, _), _)| t == tool)
        .map(|((_, b), n)| (*b, *n));
    ToolStats {
        tool: tool.to_string(),
        calls: CallCounts::tally(statuses),
        duration_ms: histogram_percentiles(buckets),
    }
}

/// Nearest-rank p50 and p95 of a histogram of microsecond buckets, in ascending order.
fn histogram_percentiles(buckets: impl Iterator<Item = (i64, u64)> + Clone) -> Durations {
    let n: u64 = buckets.clone().map(|(_, c)| c).sum();
    if n == 0 {
        return Durations::default();
    }
    let at = |p: f64| {
        let rank = ((p * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (b, c) in buckets.clone() {
            seen += c;
            if seen >= rank {
                return b as f64 / 1000.0;
            }
        }
        0.0
    };
    Durations {
        p50: at(0.50),
        p95: at(0.95),
    }
}
