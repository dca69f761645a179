//! Approval deadlines in the store, on both backends: `expire_due` denies exactly the
//! waiting approvals past their deadline in paused runs (only a tree's, when given),
//! writing the same decision, state and decider; `warn_due` warns once; the count of
//! waiting approvals. On PostgreSQL, workers sweeping at once expire (and warn about)
//! each item exactly once.

use std::collections::BTreeSet;
use std::path::Path;

use toolgate::protocol::Decision;
use toolgate::store::{DEADLINE, DueItem, EXPIRED, PendingState, Store, StoreError};

use crate::databases::TestDb;
use crate::rows::{exec, item, now_ms, read, run};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `(run, call)` of each item, in order.
fn ids(due: &[DueItem]) -> Vec<(String, String)> {
    due.iter()
        .map(|d| (d.run_id.clone(), d.pending.item.call_id.clone()))
        .collect()
}

/// A tree (`top` paused, its child `kid` paused) and a run of its own (`solo`), with
/// items past, near and far from their deadlines, and some that never expire here.
fn seed(db: &TestDb) {
    let now = now_ms();
    let mut sql = String::new();
    sql += &run("top", None, "requires_action");
    sql += &run("kid", Some("top"), "requires_action");
    sql += &run("solo", None, "requires_action");
    sql += &run("busy", None, "in_progress");
    // Past their deadline.
    sql += &item("kid", "k_past", "approval", Some(now - 60_000));
    sql += &item("top", "t_past", "approval", Some(now - 30_000));
    sql += &item("solo", "s_past", "approval", Some(now - 10_000));
    // Near (within a minute), far, none.
    sql += &item("solo", "s_near", "approval", Some(now + 30_000));
    sql += &item("solo", "s_far", "approval", Some(now + 3_600_000));
    sql += &item("solo", "s_none", "approval", None);
    // Past, but not an approval, or in a run that is not paused.
    sql += &item("solo", "s_client", "submit_tool_output", Some(now - 10_000));
    sql += &item("busy", "b_past", "approval", Some(now - 10_000));
    exec(db, &sql);
}

#[test]
fn expired_approvals_are_denied_once_and_only_in_the_tree_asked() {
    for db in TestDb::both() {
        let name = db.name();
        let store = db.open();
        seed(&db);
        let rt = rt();
        assert_eq!(
            rt.block_on(store.waiting_approvals()).unwrap().approvals,
            6,
            "{name}"
        );

        // Only the tree of `top` (named by a prefix of its id), oldest deadline first.
        let due = rt.block_on(store.expire_due(Some("to".into()))).unwrap();
        assert_eq!(
            ids(&due),
            [
                ("kid".into(), "k_past".into()),
                ("top".into(), "t_past".into())
            ],
            "{name}"
        );
        for d in &due {
            assert_eq!(d.top_run_id, "top", "{name}");
            // As found: waiting, undecided.
            assert_eq!(d.pending.state, PendingState::Waiting, "{name}");
            assert!(d.pending.decision.is_none(), "{name}");
            assert_eq!(d.pending.item.tool, "pay", "{name}");
            assert_eq!(
                d.pending.item.reason.as_deref(),
                Some("confirm_if: args.amount > 1000"),
                "{name}"
            );
        }
        // What was written: the decision, its state, who and when; the run touched.
        let rows = read(
            &db,
            "SELECT p.call_id, p.state, p.decision, p.decided_by, CAST(p.decided_at AS TEXT), CAST(r.updated_at AS TEXT)
             FROM pending p JOIN runs r ON r.id = p.run_id WHERE p.call_id IN ('k_past', 't_past') ORDER BY p.call_id",
        );
        for row in &rows {
            assert_eq!(row[1].as_deref(), Some("decided"), "{name}: {row:?}");
            let decision: Decision = serde_json::from_str(row[2].as_deref().unwrap()).unwrap();
            assert_eq!(
                decision,
                Decision::Deny {
                    reason: Some(EXPIRED.into())
                },
                "{name}"
            );
            assert_eq!(row[3].as_deref(), Some(DEADLINE), "{name}");
            let decided_at: i64 = row[4].as_deref().unwrap().parse().unwrap();
            assert!((decided_at - now_ms()).abs() < 60_000, "{name}: {row:?}");
            assert_eq!(row[5], row[4], "{name}: the run's updated_at");
        }
        assert_eq!(rows.len(), 2, "{name}");
        assert_eq!(
            rt.block_on(store.waiting_approvals()).unwrap().approvals,
            4,
            "{name}"
        );

        // Then everything else due; nothing twice.
        let rest = rt.block_on(store.expire_due(None)).unwrap();
        assert_eq!(ids(&rest), [("solo".into(), "s_past".into())], "{name}");
        assert_eq!(rest[0].top_run_id, "solo", "{name}");
        assert!(
            rt.block_on(store.expire_due(None)).unwrap().is_empty(),
            "{name}"
        );
        let untouched = read(
            &db,
            "SELECT call_id FROM pending WHERE state = 'waiting' AND decision IS NULL ORDER BY call_id",
        );
        let untouched: Vec<&str> = untouched.iter().map(|r| r[0].as_deref().unwrap()).collect();
        assert_eq!(
            untouched,
            ["b_past", "s_client", "s_far", "s_near", "s_none"],
            "{name}"
        );

        // A tree that does not exist.
        assert!(
            matches!(
                rt.block_on(store.expire_due(Some("nope".into()))),
                Err(StoreError::NotFound(_))
            ),
            "{name}"
        );

        // Warned about once, within the lead only.
        let warned = rt.block_on(store.warn_due(60_000)).unwrap();
        assert_eq!(ids(&warned), [("solo".into(), "s_near".into())], "{name}");
        assert_eq!(warned[0].pending.state, PendingState::Waiting, "{name}");
        assert!(
            rt.block_on(store.warn_due(60_000)).unwrap().is_empty(),
            "{name}"
        );
        let marked = read(
            &db,
            "SELECT call_id FROM pending WHERE warned_at IS NOT NULL ORDER BY call_id",
        );
        assert_eq!(marked, [[Some("s_near".to_string())]], "{name}");

        let waiting = rt.block_on(store.waiting_approvals()).unwrap();
        assert_eq!(waiting.approvals, 3, "{name}");
        assert_eq!(waiting.oldest_ms, Some(900), "{name}");
    }
}

/// How long the items of a sweep test take to fall due, one after the other.
const SPREAD: std::time::Duration = std::time::Duration::from_millis(400);

/// When the `n`th of `total` items falls due, from `start` on: spread over [`SPREAD`].
fn falls_due(start: i64, n: usize, total: usize) -> i64 {
    start + (SPREAD.as_millis() as i64 * n as i64) / total.max(1) as i64
}

/// Items falling due in many runs, for several workers (stores of their own) to sweep.
fn many_due(db: &TestDb, runs: usize, per_run: usize) -> BTreeSet<(String, String)> {
    let now = now_ms();
    let mut sql = String::new();
    let mut all = BTreeSet::new();
    for r in 0..runs {
        let id = format!("run_{r:02}");
        sql += &run(&id, None, "requires_action");
        for i in 0..per_run {
            let call = format!("c_{i}");
            let n = r * per_run + i;
            sql += &item(
                &id,
                &call,
                "approval",
                Some(falls_due(now, n, runs * per_run)),
            );
            all.insert((id.clone(), call));
        }
    }
    exec(db, &sql);
    all
}

/// Runs `sweep` from `workers` threads, each with a store of its own on `db`, at once;
/// every item any of them returned, with how many times.
fn sweep_at_once<F>(db: &TestDb, workers: usize, sweep: F) -> Vec<(String, String)>
where
    F: Fn(&Store) -> Result<Vec<DueItem>, StoreError> + Send + Sync + Copy + 'static,
{
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(workers));
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            let url = db.arg().to_string();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let store = Store::open(Path::new(&url)).unwrap();
                barrier.wait();
                let mut got = Vec::new();
                // Sweeps as a server's timer makes them, while the items fall due one
                // after the other (and once more after the last).
                let end =
                    std::time::Instant::now() + SPREAD + std::time::Duration::from_millis(200);
                while std::time::Instant::now() < end {
                    got.extend(ids(&sweep(&store).unwrap()));
                    std::thread::sleep(std::time::Duration::from_millis(3));
                }
                got.extend(ids(&sweep(&store).unwrap()));
                got
            })
        })
        .collect();
    threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect()
}

#[test]
fn workers_sweeping_at_once_expire_each_item_exactly_once_on_postgres() {
    let db = TestDb::postgres();
    drop(db.open());
    let all = many_due(&db, 12, 4);
    let got = sweep_at_once(&db, 4, |store| rt().block_on(store.expire_due(None)));
    let unique: BTreeSet<_> = got.iter().cloned().collect();
    assert_eq!(got.len(), unique.len(), "an item expired twice: {got:?}");
    assert_eq!(unique, all);
    let decided = read(
        &db,
        "SELECT count(*)::text FROM pending WHERE state = 'decided' AND decided_by = 'deadline'",
    );
    assert_eq!(decided[0][0].as_deref(), Some("48"));
}

#[test]
fn workers_sweeping_one_tree_at_once_expire_each_item_exactly_once_on_postgres() {
    let db = TestDb::postgres();
    drop(db.open());
    let now = now_ms();
    let mut sql = run("top", None, "requires_action");
    let mut all = BTreeSet::new();
    for k in 0..5 {
        let kid = format!("kid_{k}");
        sql += &run(&kid, Some("top"), "requires_action");
        for i in 0..3 {
            let call = format!("c_{i}");
            sql += &item(&kid, &call, "approval", Some(falls_due(now, k * 3 + i, 15)));
            all.insert((kid.clone(), call));
        }
    }
    exec(&db, &sql);
    let got = sweep_at_once(&db, 3, |store| {
        rt().block_on(store.expire_due(Some("top".into())))
    });
    let unique: BTreeSet<_> = got.iter().cloned().collect();
    assert_eq!(got.len(), unique.len(), "an item expired twice: {got:?}");
    assert_eq!(unique, all);
}

#[test]
fn workers_warning_at_once_warn_about_each_item_exactly_once_on_postgres() {
    let db = TestDb::postgres();
    drop(db.open());
    let now = now_ms();
    let mut sql = String::new();
    let mut all = BTreeSet::new();
    for r in 0..10 {
        let id = format!("run_{r:02}");
        sql += &run(&id, None, "requires_action");
        for i in 0..4 {
            let call = format!("c_{i}");
            // Within the lead (a minute) one after the other.
            let due = falls_due(now, r * 4 + i, 40) + 60_000;
            sql += &item(&id, &call, "approval", Some(due));
            all.insert((id.clone(), call));
        }
    }
    exec(&db, &sql);
    let got = sweep_at_once(&db, 4, |store| rt().block_on(store.warn_due(60_000)));
    let unique: BTreeSet<_> = got.iter().cloned().collect();
    assert_eq!(
        got.len(),
        unique.len(),
        "an item warned about twice: {got:?}"
    );
    assert_eq!(unique, all);
}
