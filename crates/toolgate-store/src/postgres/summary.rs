//! Usage summaries on PostgreSQL, each one statement (one snapshot, one round trip): one
//! conversation over its covering index (exact nearest-rank percentiles,
//! `percentile_disc`), one tool and the whole database from the running totals (kept
//! by the process while their mark stays) plus the records not folded yet
//! (`totals.rs`), one tenant's from its records. The numbers
//! are tallied by the store's own arithmetic (`store/summary.rs`), as on SQLite.

use std::sync::Arc;

use super::rows::get;
use super::totals::Folded;
use super::{PgStore, StoreError};
use crate::Scope;
use crate::summary::{
    ByStatus, CallCounts, ConversationSummary, Durations, GlobalStats, Histogram, ToolStats,
    global, microseconds, tool_stats,
};

/// One conversation's calls per (tool, status) with their first and last start, beside
/// the conversation's p50 and p95 durations.
const CONVERSATION: &str = "WITH g AS (
        SELECT tool, status, count(*) AS n, min(started_at) AS first, max(started_at) AS last
        FROM tool_calls WHERE conversation_id = $1 GROUP BY tool, status
    ), p AS (
        SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
               percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95
        FROM tool_calls WHERE conversation_id = $1
    )
    SELECT g.tool, g.status, g.n, g.first, g.last, p.p50, p.p95 FROM g, p";

/// Rows of (kind, tool, status, calls, buckets, calls per bucket), from the running
/// totals and the tail above the mark: kind 0 counts folded calls per (tool, status), 1
/// is a tool's folded histogram (two arrays: a row per tool rather than per bucket),
/// both only when the mark is not `$1` (the mark of the totals this process keeps); 2
/// and 3 are the same of the tail, 4 the number of conversations, 5 the records not
/// folded yet, 6 the mark.
const TOTALS: &str = "WITH m AS (SELECT folded_to, conversations FROM totals_mark WHERE id = 1),
    stale AS (SELECT folded_to <> $1 AS yes FROM m),
    tail AS (SELECT * FROM toolgate_tail())
    SELECT 0, tool, status, calls, NULL::bigint[], NULL::bigint[] FROM tool_totals
        WHERE (SELECT yes FROM stale)
    UNION ALL SELECT 1, tool, '', 0, array_agg(bucket), array_agg(calls) FROM duration_totals
        WHERE (SELECT yes FROM stale) GROUP BY tool
    UNION ALL SELECT 2, tool, status, count(*), NULL, NULL FROM tail GROUP BY tool, status
    UNION ALL SELECT 3, tool, '', 0, array_agg(bucket), array_agg(n) FROM (
        SELECT tool, toolgate_bucket(duration_ms) AS bucket, count(*) AS n FROM tail GROUP BY 1, 2
    ) d GROUP BY tool
    UNION ALL SELECT 4, '', '', (SELECT conversations FROM m) + (SELECT count(DISTINCT conversation_id)
        FROM tail t WHERE NOT EXISTS
            (SELECT 1 FROM conversation_totals c WHERE c.conversation_id = t.conversation_id)), NULL, NULL
    UNION ALL SELECT 5, '', '', (SELECT count(*) FROM tail), NULL, NULL
    UNION ALL SELECT 6, '', '', (SELECT folded_to FROM m), NULL, NULL";

/// The same rows (kinds 2, 3 and 4) for one tenant's records (records without a run
/// are the default tenant's), read from the records themselves: the totals are the
/// whole database's.
const TENANT: &str = "WITH t AS (
        SELECT c.tool, c.status, toolgate_bucket(c.duration_ms) AS bucket, c.conversation_id
        FROM tool_calls c LEFT JOIN runs r ON r.id = c.run_id
        WHERE COALESCE(r.tenant, 'default') = $1
    )
    SELECT 2, tool, status, count(*), NULL::bigint[], NULL::bigint[] FROM t GROUP BY tool, status
    UNION ALL SELECT 3, tool, '', 0, array_agg(bucket), array_agg(n) FROM (
        SELECT tool, bucket, count(*) AS n FROM t GROUP BY tool, bucket
    ) d GROUP BY tool
    UNION ALL SELECT 4, '', '', count(DISTINCT conversation_id), NULL, NULL FROM t";

/// What the rows of [`TOTALS`] or [`TENANT`] come to.
#[derive(Default)]
struct Read {
    /// The folded totals (when the kept ones were stale).
    folded: (ByStatus, Histogram),
    /// The records not folded yet (or, for a tenant, all of its records).
    tail: (ByStatus, Histogram),
    conversations: u64,
    unfolded: u64,
    mark: i64,
}

impl Read {
    fn of(rows: &[tokio_postgres::Row]) -> Result<Read, StoreError> {
        let mut r = Read::default();
        for row in rows {
            let kind: i32 = get(row, 0)?;
            let n = get::<i64>(row, 3)?;
            let count = u64::try_from(n).unwrap_or(0);
            let into = if kind < 2 { &mut r.folded } else { &mut r.tail };
            match kind {
                0 | 2 => *into.0.entry((get(row, 1)?, get(row, 2)?)).or_default() += count,
                1 | 3 => {
                    let tool: String = get(row, 1)?;
                    let buckets: Vec<i64> = get(row, 4)?;
                    let calls: Vec<i64> = get(row, 5)?;
                    for (b, n) in buckets.into_iter().zip(calls) {
                        *into.1.entry((tool.clone(), b)).or_default() +=
                            u64::try_from(n).unwrap_or(0);
                    }
                }
                4 => r.conversations = count,
                5 => r.unfolded = count,
                _ => r.mark = n,
            }
        }
        Ok(r)
    }
}

impl PgStore {
    /// The summary of one conversation.
    pub async fn conversation_summary(
        &self,
        conversation_id: &str,
    ) -> Result<ConversationSummary, StoreError> {
        let conversation = conversation_id.to_string();
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let rows = s.rows(&client, CONVERSATION, &[&conversation]).await?;
            let mut summary = ConversationSummary {
                conversation_id: conversation,
                ..Default::default()
            };
            let mut by_status: Vec<(String, u64)> = Vec::new();
            for row in &rows {
                let (tool, status): (String, String) = (get(row, 0)?, get(row, 1)?);
                let n = u64::try_from(get::<i64>(row, 2)?).unwrap_or(0);
                let (first, last): (i64, i64) = (get(row, 3)?, get(row, 4)?);
                *summary.tool_usage.entry(tool).or_default() += n;
                by_status.push((status, n));
                summary.first_call_at = Some(summary.first_call_at.map_or(first, |f| f.min(first)));
                summary.last_call_at = Some(summary.last_call_at.map_or(last, |l| l.max(last)));
                summary.duration_ms = Durations {
                    p50: microseconds(get(row, 5)?),
                    p95: microseconds(get(row, 6)?),
                };
            }
            summary.calls = CallCounts::tally(by_status.iter().map(|(st, n)| (st.as_str(), *n)));
            Ok(summary)
        })
        .await
    }

    /// One tool's statistics over the records of `scope`: every record's (from the
    /// running totals) or one tenant's.
    pub async fn tool_stats(&self, scope: Scope<'_>, tool: &str) -> Result<ToolStats, StoreError> {
        let tool = tool.to_string();
        self.summarise(scope.tenant(), move |by_status, durations, _| {
            tool_stats(&tool, by_status, durations)
        })
        .await
    }

    /// Cache hits and misses per tool: every record's, or one tenant's (records without
    /// a run are the default tenant's).
    pub async fn cache_tally(
        &self,
        tenant: Option<&str>,
    ) -> Result<crate::summary::CacheTally, StoreError> {
        let tenant = tenant.map(str::to_string);
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let rows = client
                .query(
                    "SELECT c.tool, count(*) FILTER (WHERE c.cached), count(*) FILTER (WHERE NOT c.cached) \
                     FROM tool_calls c LEFT JOIN runs r ON r.id = c.run_id \
                     WHERE c.cached IS NOT NULL AND ($1::text IS NULL OR COALESCE(r.tenant, 'default') = $1) \
                     GROUP BY c.tool",
                    &[&tenant],
                )
                .await
                .map_err(|e| s.error(e))?;
            let mut out = crate::summary::CacheTally::new();
            for row in rows {
                let (hits, misses): (i64, i64) = (row.get(1), row.get(2));
                out.insert(
                    row.get(0),
                    crate::summary::CacheStats::of(hits.max(0) as u64, misses.max(0) as u64),
                );
            }
            Ok(out)
        })
        .await
    }

    /// Statistics of the whole database (from the running totals) or of one tenant's
    /// records and conversations, with every tool's.
    pub async fn global_stats(&self, scope: Scope<'_>) -> Result<GlobalStats, StoreError> {
        self.summarise(scope.tenant(), global).await
    }

    /// `f` of the calls per (tool, status), the histogram and the conversations: every
    /// record's (the folded totals, kept while the mark stays, plus the tail) or one
    /// tenant's.
    async fn summarise<T: Send + 'static>(
        &self,
        tenant: Option<&str>,
        f: impl FnOnce(&ByStatus, &Histogram, u64) -> T + Send + 'static,
    ) -> Result<T, StoreError> {
        let tenant = tenant.map(str::to_string);
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            if let Some(tenant) = &tenant {
                let r = Read::of(&s.rows(&client, TENANT, &[tenant]).await?)?;
                return Ok(f(&r.tail.0, &r.tail.1, r.conversations));
            }
            let kept = s.folded();
            let kept_mark = kept.as_ref().map_or(-1, |k| k.mark);
            let r = Read::of(&s.rows(&client, TOTALS, &[&kept_mark]).await?)?;
            if r.unfolded >= super::totals::FOLD_AT {
                s.records_added(r.unfolded);
            }
            let folded = match kept {
                Some(k) if k.mark == r.mark => k,
                _ => {
                    let (by_status, durations) = r.folded;
                    let fresh = Arc::new(Folded {
                        mark: r.mark,
                        by_status,
                        durations,
                    });
                    s.keep_folded(fresh.clone());
                    fresh
                }
            };
            let (tail_status, tail_durations) = r.tail;
            if tail_status.is_empty() {
                return Ok(f(&folded.by_status, &folded.durations, r.conversations));
            }
            let mut by_status = folded.by_status.clone();
            let mut durations = folded.durations.clone();
            for (k, n) in tail_status {
                *by_status.entry(k).or_default() += n;
            }
            for (k, n) in tail_durations {
                *durations.entry(k).or_default() += n;
            }
            Ok(f(&by_status, &durations, r.conversations))
        })
        .await
    }
}
