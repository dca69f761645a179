//! Running totals of the call records on PostgreSQL: calls per tool and status, a
//! duration histogram per tool, calls per conversation (and how many conversations),
//! calls per run. A summary reads the totals plus the records not folded yet, in one
//! statement (one snapshot), so it is always exact while it reads a few rows.
//!
//! Record ids commit out of order across workers, so "fold every id up to a mark" could
//! pass over a record whose transaction commits later. The mark is a transaction id
//! instead: every record carries its writing transaction's (`xact`), and a fold takes the
//! records of transactions below its snapshot's `xmin`, all of which have ended: no
//! record can appear there any more. Folds run one at a time (an advisory lock), in the
//! background of whichever process wrote (or read) enough records since its last fold,
//! and never hold up a writer: the writers touch no shared row. The totals change only
//! with the mark, so a process keeps the last totals it read beside their mark.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::rows::get;
use super::{PgStore, StoreError};
use crate::summary::{ByStatus, Histogram};

/// Records written (or seen unfolded by a summary) that start a fold.
pub(super) const FOLD_AT: u64 = 1024;

/// The advisory lock a fold holds (one fold at a time, across workers): "tg_total".
const FOLD_LOCK: i64 = 0x7467_5f74_6f74_616c;

/// One statement folds the records of the ended transactions in `[$1, $2)`.
const FOLD: &str = "WITH t AS (
        SELECT tool, status, conversation_id, run_id, duration_ms FROM tool_calls
        WHERE xact >= $1 AND xact < $2
    ), by_status AS (
        INSERT INTO tool_totals (tool, status, calls)
        SELECT tool, status, count(*) FROM t GROUP BY tool, status
        ON CONFLICT (tool, status) DO UPDATE SET calls = tool_totals.calls + excluded.calls
    ), durations AS (
        INSERT INTO duration_totals (tool, bucket, calls)
        SELECT tool, toolgate_bucket(duration_ms), count(*) FROM t GROUP BY 1, 2
        ON CONFLICT (tool, bucket) DO UPDATE SET calls = duration_totals.calls + excluded.calls
    ), conversations AS (
        INSERT INTO conversation_totals (conversation_id, calls)
        SELECT conversation_id, count(*) FROM t GROUP BY conversation_id
        ON CONFLICT (conversation_id) DO UPDATE SET calls = conversation_totals.calls + excluded.calls
        RETURNING (xmax = 0) AS new
    ), runs AS (
        INSERT INTO run_totals (run_id, tool, status, calls, total_ms)
        SELECT run_id, tool, status, count(*), sum(duration_ms) FROM t WHERE run_id IS NOT NULL
        GROUP BY run_id, tool, status
        ON CONFLICT (run_id, tool, status) DO UPDATE
            SET calls = run_totals.calls + excluded.calls, total_ms = run_totals.total_ms + excluded.total_ms
    )
    UPDATE totals_mark SET folded_to = $2,
        conversations = conversations + (SELECT count(*) FROM conversations WHERE new)
    WHERE id = 1";

/// When this process folds next, and the folded totals it last read.
#[derive(Default)]
pub(super) struct Folding {
    /// Records written or seen unfolded since the last fold began.
    unfolded: AtomicU64,
    /// A fold of this process is running.
    running: AtomicBool,
    /// The totals as of a mark: a fold changes them only with the mark, so a summary
    /// that finds the same mark reads only the tail (`summary.rs`).
    folded: std::sync::Mutex<Option<Arc<Folded>>>,
}

/// The running totals as they were folded up to `mark`.
#[derive(Debug)]
pub(super) struct Folded {
    pub mark: i64,
    pub by_status: ByStatus,
    pub durations: Histogram,
}

impl PgStore {
    /// The folded totals this process read last, if any.
    pub(super) fn folded(&self) -> Option<Arc<Folded>> {
        let folded = self.inner.folding.folded.lock();
        folded.map(|f| f.clone()).unwrap_or_default()
    }

    /// Keeps `folded` for the next summary.
    pub(super) fn keep_folded(&self, folded: Arc<Folded>) {
        if let Ok(mut kept) = self.inner.folding.folded.lock() {
            *kept = Some(folded);
        }
    }
}

impl PgStore {
    /// Counts `n` records written (or found unfolded by a summary); past [`FOLD_AT`]
    /// since the last fold, starts one in the background.
    pub(crate) fn records_added(&self, n: u64) {
        let folding = &self.inner.folding;
        let seen = folding.unfolded.fetch_add(n, Ordering::Relaxed) + n;
        if seen < FOLD_AT || folding.running.swap(true, Ordering::AcqRel) {
            return;
        }
        folding.unfolded.store(0, Ordering::Relaxed);
        let Ok(rt) = self.runtime() else {
            folding.running.store(false, Ordering::Release);
            return;
        };
        let store = self.clone();
        rt.spawn(async move {
            let started = std::time::Instant::now();
            match store.fold().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(
                    transactions = n,
                    ms = started.elapsed().as_secs_f64() * 1e3,
                    "totals folded"
                ),
                // The totals stay behind; summaries read the tail meanwhile.
                Err(e) => tracing::warn!(error = %e, "totals not folded"),
            }
            store.inner.folding.running.store(false, Ordering::Release);
        });
    }

    /// Folds the records of every ended transaction not folded yet into the totals;
    /// returns how many transaction ids it covered (0: another fold runs, or nothing new).
    pub(crate) async fn fold(&self) -> Result<u64, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.error(e))?;
        let locked = tx
            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&FOLD_LOCK])
            .await
            .map_err(|e| self.error(e))?;
        if !get::<bool>(&locked, 0)? {
            return Ok(0);
        }
        // Every transaction below this statement's xmin has ended (committed or not):
        // the records below it are all there is, and the next statement sees them all.
        let mark = tx
            .query_one(
                "SELECT folded_to, pg_snapshot_xmin(pg_current_snapshot())::text::bigint FROM totals_mark WHERE id = 1",
                &[],
            )
            .await
            .map_err(|e| self.error(e))?;
        let (from, to): (i64, i64) = (get(&mark, 0)?, get(&mark, 1)?);
        if to <= from {
            return Ok(0);
        }
        let stmt = tx.prepare_cached(FOLD).await.map_err(|e| self.error(e))?;
        tx.execute(&stmt, &[&from, &to])
            .await
            .map_err(|e| self.error(e))?;
        tx.commit().await.map_err(|e| self.error(e))?;
        self.committed();
        Ok((to - from) as u64)
    }
}
