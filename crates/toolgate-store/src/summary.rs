//! Usage summaries, whatever the backend: their shapes (one conversation, one tool, the
//! whole database, each with the same counters, [`CallCounts`]) and the arithmetic
//! every backend shares (the tally of statuses, nearest-rank percentiles, the duration
//! histogram's buckets), so that both backends give the same numbers for the same
//! records; and one run's execution summary, joined into its tree.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::RunRow;
use toolgate_protocol::{CallStatus, RunTree, ToolTally, TreeTally};

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
    pub(crate) fn tally<'a>(rows: impl IntoIterator<Item = (&'a str, u64)>) -> Self {
        let mut c = CallCounts::default();
        for (status, n) in rows {
            c.total_calls += n;
            let bucket = match status.parse::<CallStatus>().ok() {
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
    /// For a tool that keeps its results (`cache:`): how often a call was served from
    /// the cache. Absent for a tool without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheStats>,
}

/// How a tool's kept results were used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, ToSchema)]
pub struct CacheStats {
    /// Calls served from the cache (the tool did not run).
    pub hits: u64,
    /// Calls the tool ran (nothing kept for those arguments, or it had expired).
    pub misses: u64,
    /// Hits as a percentage of both, to one decimal.
    pub hit_rate: f64,
}

impl CacheStats {
    pub fn of(hits: u64, misses: u64) -> CacheStats {
        CacheStats {
            hits,
            misses,
            hit_rate: rate(hits, hits + misses),
        }
    }
}

/// Hits and misses per tool.
pub type CacheTally = BTreeMap<String, CacheStats>;

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

/// A duration in milliseconds rounded to microseconds: as fine as a duration is worth
/// reporting.
pub(crate) fn microseconds(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// Nearest-rank p50 and p95 of `durations` (reordered in place).
pub(crate) fn percentiles(durations: &mut [f64]) -> Durations {
    let n = durations.len();
    if n == 0 {
        return Durations::default();
    }
    let mut at = |p: f64| {
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        let (_, v, _) = durations.select_nth_unstable_by(rank, f64::total_cmp);
        microseconds(*v)
    };
    Durations {
        p50: at(0.50),
        p95: at(0.95),
    }
}

/// A duration's histogram bucket: microseconds, exact below one millisecond and to
/// three significant digits from there (an error under 0.5%).
pub(crate) fn bucket(ms: f64) -> i64 {
    let us = (ms * 1000.0).round();
    if !us.is_finite() || us <= 0.0 {
        return 0;
    }
    let us = us.min(1e15) as i64;
    if us < 1000 {
        return us;
    }
    let mut scale = 1i64;
    while us / scale >= 1000 {
        scale *= 10;
    }
    (us + scale / 2) / scale * scale
}

/// Calls per (tool, status).
pub(crate) type ByStatus = BTreeMap<(String, String), u64>;
/// Calls per (tool, bucket).
pub(crate) type Histogram = BTreeMap<(String, i64), u64>;

/// The statistics of a tally.
pub(crate) fn global(
    by_status: &ByStatus,
    durations: &Histogram,
    conversations: u64,
) -> GlobalStats {
    let mut statuses: BTreeMap<&str, u64> = BTreeMap::new();
    for ((_, status), n) in by_status {
        *statuses.entry(status.as_str()).or_default() += n;
    }
    let mut all: BTreeMap<i64, u64> = BTreeMap::new();
    for ((_, b), n) in durations {
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
            .map(|name| tool_stats(name, by_status, durations))
            .collect(),
    }
}

/// One tool's statistics out of the totals of every tool.
pub(crate) fn tool_stats(tool: &str, by_status: &ByStatus, durations: &Histogram) -> ToolStats {
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
        cache: None,
    }
}

/// Nearest-rank p50 and p95 of a histogram of microsecond buckets, in ascending order.
pub(crate) fn histogram_percentiles(
    buckets: impl Iterator<Item = (i64, u64)> + Clone,
) -> Durations {
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

/// Calls and summed milliseconds per (tool, status): one run's, for its tree.
pub(crate) type RunCalls = BTreeMap<(String, String), (u64, f64)>;

/// One run's own execution summary, without its children.
pub(crate) fn run_node(row: &RunRow, calls: RunCalls) -> RunTree {
    let mut summary = TreeTally::default();
    let mut tools: BTreeMap<String, ToolTally> = BTreeMap::new();
    for ((tool, status), (n, ms)) in calls {
        let t = tools.entry(tool).or_default();
        t.calls += n;
        t.total_ms += ms;
        summary.calls += n;
        summary.call_ms += ms;
        match status.as_str() {
            "succeeded" | "client" => {
                t.succeeded += n;
                summary.succeeded += n;
            }
            "denied" => summary.denied += n,
            _ => {
                t.failed += n;
                summary.failed += n;
            }
        }
    }
    summary.usage = row.usage;
    summary.run_ms = (row.updated_at - row.created_at).max(0);
    summary.rate();
    RunTree {
        run_id: row.id.clone(),
        agent: row.agent.clone(),
        status: row.status,
        parent_call_id: row.parent_call_id.clone(),
        depth: row.depth,
        summary,
        tools,
        totals: summary,
        children: Vec::new(),
    }
}

/// The tree of `rows` (its top run first): each run's node joins its parent's, deepest
/// first, in the order they started, the parent's totals including the child's.
pub(crate) fn join_tree(
    rows: &[RunRow],
    mut nodes: std::collections::HashMap<String, RunTree>,
) -> Option<RunTree> {
    let top = rows.first()?;
    let mut order: Vec<&RunRow> = rows.iter().skip(1).collect();
    order.sort_by_key(|r| (std::cmp::Reverse(r.depth), r.created_at));
    for row in order {
        let Some(child) = nodes.remove(&row.id) else {
            continue;
        };
        if let Some(parent) = row.parent_run_id.as_ref().and_then(|p| nodes.get_mut(p)) {
            parent.totals.add(&child.totals);
            parent.children.push(child);
        }
    }
    nodes.remove(&top.id)
}

#[cfg(test)]
mod tests {
    use super::bucket;

    #[test]
    fn buckets_are_exact_below_a_millisecond_and_three_digits_above() {
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(-1.0), 0);
        assert_eq!(bucket(f64::NAN), 0);
        assert_eq!(bucket(0.0004), 0);
        assert_eq!(bucket(0.123), 123);
        assert_eq!(bucket(0.999), 999);
        assert_eq!(bucket(10.0), 10_000);
        assert_eq!(bucket(19.0), 19_000);
        assert_eq!(bucket(12.345), 12_300);
        assert_eq!(bucket(12.355), 12_400);
        assert_eq!(bucket(99.96), 100_000);
        assert_eq!(bucket(30_000.0), 30_000_000);
    }
}
