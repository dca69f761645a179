//! Usage summaries on PostgreSQL, each one statement (one snapshot, one round trip): one
//! conversation over its covering index (exact nearest-rank percentiles,
//! `percentile_disc`), one tool and the whole database from the running totals plus
//! the records not folded yet (`totals.rs`), one tenant's from its records. The numbers
//! are tallied by the store's own arithmetic (`store/summary.rs`), as on SQLite.

use super::rows::get;
use super::{PgStore, StoreError};
use crate::store::summary::{
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

/// Rows of (kind, tool, status, calls, buckets, calls per bucket): kind 0 counts calls
/// per (tool, status), 1 a tool's histogram (as two arrays: a row per tool rather than
/// per bucket), 2 is the number of conversations, 3 the records not folded yet; from
/// the totals and the tail above the mark. Every tool's, or (`one_tool`) the
/// tool `$1`'s alone, over the totals' primary keys.
fn totals_sql(one_tool: bool) -> String {
    let (and, r#where) = if one_tool {
        ("AND tool = $1", "WHERE tool = $1")
    } else {
        ("", "")
    };
    let conversations = if one_tool {
        "0".to_string()
    } else {
        "(SELECT conversations FROM m) + (SELECT count(DISTINCT conversation_id) FROM tail t \
         WHERE NOT EXISTS (SELECT 1 FROM conversation_totals c WHERE c.conversation_id = t.conversation_id))"
            .to_string()
    };
    format!(
        "WITH m AS (SELECT folded_to, conversations FROM totals_mark WHERE id = 1),
        tail AS (
            SELECT tool, status, duration_ms, conversation_id FROM tool_calls
            WHERE xact >= (SELECT folded_to FROM m) {and}
        )
        SELECT 0, tool, status, calls, NULL::bigint[], NULL::bigint[] FROM tool_totals {where}
        UNION ALL SELECT 0, tool, status, count(*), NULL, NULL FROM tail GROUP BY tool, status
        UNION ALL SELECT 1, tool, '', 0, array_agg(bucket), array_agg(calls) FROM (
            SELECT tool, bucket, calls FROM duration_totals {where}
            UNION ALL SELECT tool, toolgate_bucket(duration_ms), count(*) FROM tail GROUP BY 1, 2
        ) d GROUP BY tool
        UNION ALL SELECT 2, '', '', {conversations}, NULL, NULL
        UNION ALL SELECT 3, '', '', (SELECT count(*) FROM tail), NULL, NULL",
        r#where = r#where
    )
}

/// The same rows (kinds 0, 1 and 2) for one tenant's records (records without a run are
/// the default tenant's), read from the records themselves: the totals are the whole
/// database's.
const TENANT: &str = "WITH t AS (
        SELECT c.tool, c.status, toolgate_bucket(c.duration_ms) AS bucket, c.conversation_id
        FROM tool_calls c LEFT JOIN runs r ON r.id = c.run_id
        WHERE COALESCE(r.tenant, 'default') = $1
    )
    SELECT 0, tool, status, count(*), NULL::bigint[], NULL::bigint[] FROM t GROUP BY tool, status
    UNION ALL SELECT 1, tool, '', 0, array_agg(bucket), array_agg(n) FROM (
        SELECT tool, bucket, count(*) AS n FROM t GROUP BY tool, bucket
    ) d GROUP BY tool
    UNION ALL SELECT 2, '', '', count(DISTINCT conversation_id), NULL, NULL FROM t";

/// What the rows of [`totals_sql`] or [`TENANT`] come to.
#[derive(Default)]
struct Tally {
    by_status: ByStatus,
    durations: Histogram,
    conversations: u64,
    unfolded: u64,
}

impl Tally {
    fn of(rows: &[tokio_postgres::Row]) -> Result<Tally, StoreError> {
        let mut t = Tally::default();
        for row in rows {
            let kind: i32 = get(row, 0)?;
            let n = u64::try_from(get::<i64>(row, 3)?).unwrap_or(0);
            match kind {
                0 => *t.by_status.entry((get(row, 1)?, get(row, 2)?)).or_default() += n,
                1 => {
                    let tool: String = get(row, 1)?;
                    let buckets: Vec<i64> = get(row, 4)?;
                    let calls: Vec<i64> = get(row, 5)?;
                    for (b, n) in buckets.into_iter().zip(calls) {
                        *t.durations.entry((tool.clone(), b)).or_default() +=
                            u64::try_from(n).unwrap_or(0);
                    }
                }
                2 => t.conversations = n,
                _ => t.unfolded = n,
            }
        }
        Ok(t)
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

    /// One tool's statistics: over every record (`tenant` `None`, from the running
    /// totals) or one tenant's.
    pub async fn tool_stats_of(
        &self,
        tenant: Option<&str>,
        tool: &str,
    ) -> Result<ToolStats, StoreError> {
        let t = self.tally(tenant, Some(tool)).await?;
        Ok(tool_stats(tool, &t.by_status, &t.durations))
    }

    /// Statistics of the whole database (`tenant` `None`, from the running totals) or of
    /// one tenant's records and conversations, with every tool's.
    pub async fn global_stats_of(&self, tenant: Option<&str>) -> Result<GlobalStats, StoreError> {
        let t = self.tally(tenant, None).await?;
        Ok(global(t.by_status, t.durations, t.conversations))
    }

    /// The tally of every record (of `tool` only, when given) or of one tenant's.
    async fn tally(&self, tenant: Option<&str>, tool: Option<&str>) -> Result<Tally, StoreError> {
        let (tenant, tool) = (tenant.map(str::to_string), tool.map(str::to_string));
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let rows = match &tenant {
                Some(tenant) => s.rows(&client, TENANT, &[tenant]).await?,
                None => match &tool {
                    Some(tool) => s.rows(&client, &totals_sql(true), &[tool]).await?,
                    None => s.rows(&client, &totals_sql(false), &[]).await?,
                },
            };
            let t = Tally::of(&rows)?;
            if t.unfolded >= super::totals::FOLD_AT {
                s.records_added(t.unfolded);
            }
            Ok(t)
        })
        .await
    }
}
