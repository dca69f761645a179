//! Usage summaries on SQLite: one conversation in SQL over a covering index (exact
//! percentiles), one tool and the whole database from the running totals
//! (`totals.rs`); their shapes and arithmetic are the store's (`store/summary.rs`).

use rusqlite::Connection;

use super::totals::{self, ByStatus, Histogram};
use super::{SqliteStore, StoreError};
use crate::Scope;
use crate::summary::{
    CallCounts, ConversationSummary, GlobalStats, ToolStats, global, percentiles, tool_stats,
};

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

    /// Statistics of one tool over the records of `scope`: every record's from the
    /// running totals (its percentiles to three significant digits from one millisecond
    /// up), one tenant's read from the records themselves (the running totals are the
    /// whole database's).
    pub fn tool_stats(&self, scope: Scope<'_>, tool: &str) -> Result<ToolStats, StoreError> {
        if let Scope::Tenant(tenant) = scope {
            return self.read(|conn| {
                let (by_status, durations, _) = tenant_tally(conn, tenant)?;
                Ok(tool_stats(tool, &by_status, &durations))
            });
        }
        self.read(|conn| {
            let snapshot = conn.unchecked_transaction()?;
            let (by_status, durations, _) = totals::tool_totals(&snapshot, Some(tool))?;
            snapshot.finish()?;
            Ok(tool_stats(tool, &by_status, &durations))
        })
    }

    /// Statistics of the records of `scope`, with every tool's: the whole database's
    /// from the running totals (percentiles to three significant digits from one
    /// millisecond up), one tenant's from its records and conversations.
    pub fn global_stats(&self, scope: Scope<'_>) -> Result<GlobalStats, StoreError> {
        if let Scope::Tenant(tenant) = scope {
            return self.read(|conn| {
                let (by_status, durations, conversations) = tenant_tally(conn, tenant)?;
                Ok(global(&by_status, &durations, conversations))
            });
        }
        self.read(|conn| {
            let snapshot = conn.unchecked_transaction()?;
            let (by_status, durations, tail) = totals::tool_totals(&snapshot, None)?;
            let conversations = totals::conversations(&snapshot, &tail)?;
            snapshot.finish()?;
            Ok(global(&by_status, &durations, conversations))
        })
    }
}

impl SqliteStore {
    /// Cache hits and misses per tool: every record's, or one tenant's (records without
    /// a run are the default tenant's).
    pub fn cache_tally(
        &self,
        tenant: Option<&str>,
    ) -> Result<crate::summary::CacheTally, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT c.tool, sum(c.cached = 1), sum(c.cached = 0) FROM tool_calls c INDEXED BY tool_calls_cached \
                 LEFT JOIN runs r ON r.id = c.run_id \
                 WHERE c.cached IS NOT NULL AND (?1 IS NULL OR COALESCE(r.tenant, 'default') = ?1) GROUP BY c.tool",
            )?;
            let rows = stmt.query_map([tenant], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })?;
            let mut out = crate::summary::CacheTally::new();
            for row in rows {
                let (tool, hits, misses) = row?;
                out.insert(tool, crate::summary::CacheStats::of(hits.max(0) as u64, misses.max(0) as u64));
            }
            Ok(out)
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
