//! Many workers on one PostgreSQL database (a `Store` each, as `serve` processes on
//! several hosts would have): one holds a run at a time, a lease that ran out is taken
//! over and its late holder's saves refused, the executing fence holds, workers taking
//! up runs at once take each once, and every change made through one reaches the others'
//! feeds, also after the feed's connection dropped.

use std::collections::BTreeSet;
use std::time::Duration;

use toolgate::protocol::{Decision, RunStatus};
use toolgate::store::{ChangeKind, PendingState, Refusal, RunSave, Store, lease_owner_name};

use crate::databases::TestDb;
use crate::store_runs::{create, decide, next_change, pause, refusal, rt, save};

/// Two workers on one new database.
fn two_workers() -> (TestDb, Store, Store) {
    let db = TestDb::postgres();
    let (a, b) = (db.open(), db.open());
    (db, a, b)
}

/// Runs one statement on the database at `url` on a connection of its own; its rows'
/// first column, as text.
async fn sql(url: &str, statement: &str) -> Vec<String> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let rows = client.simple_query(statement).await.unwrap();
    drop(client);
    let _ = conn.await;
    rows.into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .collect()
}

#[test]
fn of_many_acquires_from_two_workers_at_once_exactly_one_wins() {
    let (_db, a, b) = two_workers();
    rt().block_on(async {
        let owner = lease_owner_name();
        create(&a, "run_race", "conv_race", &owner, 60_000).await;
        a.release_run("run_race", &owner, RunStatus::InProgress)
            .await
            .unwrap();
        let tries: Vec<_> = (0..8)
            .map(|i| {
                let store = if i % 2 == 0 { a.clone() } else { b.clone() };
                tokio::spawn(async move {
                    store
                        .acquire_run("run_race", &lease_owner_name(), 60_000)
                        .await
                })
            })
            .collect();
        let mut won = 0;
        for t in tries {
            match t.await.unwrap() {
                Ok(_) => won += 1,
                Err(e) => assert_eq!(refusal::<()>(Err(e), "postgres").0, Refusal::LeaseHeld),
            }
        }
        assert_eq!(won, 1);
    });
}

#[test]
fn a_lease_that_ran_out_is_taken_by_the_other_worker_and_the_late_holder_is_refused() {
    let (_db, a, b) = two_workers();
    rt().block_on(async {
        let (mine, theirs) = (lease_owner_name(), lease_owner_name());
        create(&a, "run_out", "conv_out", &mine, 300).await;
        assert_eq!(
            refusal(b.acquire_run("run_out", &theirs, 60_000).await, "postgres").0,
            Refusal::LeaseHeld
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        let (run, _) = b.acquire_run("run_out", &theirs, 60_000).await.unwrap();
        assert_eq!(run.lease_owner.as_deref(), Some(theirs.as_str()));
        assert_eq!(
            refusal(
                a.save_run("run_out", &mine, save(RunStatus::Completed))
                    .await,
                "postgres"
            )
            .0,
            Refusal::LeaseLost
        );
        assert_eq!(
            refusal(a.renew_lease("run_out", &mine, 60_000).await, "postgres").0,
            Refusal::LeaseLost
        );
        // The late holder's release gives back nothing.
        a.release_run("run_out", &mine, RunStatus::InProgress)
            .await
            .unwrap();
        let (run, _) = a.run("run_out").await.unwrap();
        assert_eq!(run.lease_owner.as_deref(), Some(theirs.as_str()));
        b.save_run("run_out", &theirs, save(RunStatus::Completed))
            .await
            .unwrap();
        assert_eq!(a.run_status("run_out").await.unwrap(), RunStatus::Completed);
    });
}

#[test]
fn an_approved_call_moved_to_executing_is_found_so_by_the_next_worker_and_never_moved_twice() {
    let (_db, a, b) = two_workers();
    rt().block_on(async {
        let first = lease_owner_name();
        create(&a, "run_x", "conv_x", &first, 60_000).await;
        a.save_run("run_x", &first, pause(&["call_x"]))
            .await
            .unwrap();
        b.apply_decision(decide("run_x", &["call_x"], 0), Decision::Approve, None)
            .await
            .unwrap()
            .unwrap();
        // Both workers continue the approved run at once: one takes it.
        let (wa, wb) = (lease_owner_name(), lease_owner_name());
        let (ra, rb) = tokio::join!(
            a.acquire_run("run_x", &wa, 300),
            b.acquire_run("run_x", &wb, 300)
        );
        let (store, winner, loser) = match (ra, rb) {
            (Ok(_), Err(e)) => {
                assert_eq!(refusal::<()>(Err(e), "postgres").0, Refusal::LeaseHeld);
                (&a, wa, &b)
            }
            (Err(e), Ok(_)) => {
                assert_eq!(refusal::<()>(Err(e), "postgres").0, Refusal::LeaseHeld);
                (&b, wb, &a)
            }
            other => panic!("exactly one acquire wins: {other:?}"),
        };
        let fence = RunSave {
            set_pending: vec![("call_x".into(), PendingState::Executing)],
            ..save(RunStatus::InProgress)
        };
        store
            .save_run("run_x", &winner, fence.clone())
            .await
            .unwrap();
        // The winner dies; its lease runs out; the other worker finds the call executing
        // (and so never runs it) and the dead one's fence again is refused.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let next = lease_owner_name();
        let (_, pending) = loser.acquire_run("run_x", &next, 60_000).await.unwrap();
        assert_eq!(pending[0].state, PendingState::Executing);
        assert_eq!(
            refusal(store.save_run("run_x", &winner, fence).await, "postgres").0,
            Refusal::LeaseLost
        );
    });
}

#[test]
fn workers_taking_up_runs_at_once_take_each_once_and_skip_rows_another_holds() {
    let (db, a, b) = two_workers();
    rt().block_on(async {
        let owner = lease_owner_name();
        for i in 0..24 {
            create(
                &a,
                &format!("run_u{i:02}"),
                &format!("conv_u{i}"),
                &owner,
                1,
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
        // A row another worker's transaction holds is skipped, not waited for.
        let url = db.arg().to_string();
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        let conn = tokio::spawn(conn);
        client
            .batch_execute("BEGIN; SELECT id FROM runs WHERE id = 'run_u00' FOR UPDATE")
            .await
            .unwrap();
        let seen = tokio::time::timeout(Duration::from_secs(2), a.unheld_runs(100))
            .await
            .expect("unheld_runs waited for a locked row")
            .unwrap();
        assert_eq!(seen.len(), 23);
        assert!(!seen.contains(&"run_u00".to_string()));
        client.batch_execute("COMMIT").await.unwrap();
        drop(client);
        let _ = conn.await;

        let take_up = |store: Store| {
            tokio::spawn(async move {
                let me = lease_owner_name();
                let mut taken = Vec::new();
                loop {
                    let ids = store.unheld_runs(5).await.unwrap();
                    if ids.is_empty() {
                        return taken;
                    }
                    for id in ids {
                        match store.acquire_run(&id, &me, 60_000).await {
                            Ok((run, _)) => taken.push(run.id),
                            Err(e) => {
                                assert_eq!(refusal::<()>(Err(e), "postgres").0, Refusal::LeaseHeld)
                            }
                        }
                    }
                }
            })
        };
        let (ta, tb) = (take_up(a.clone()), take_up(b.clone()));
        let (ta, tb) = (ta.await.unwrap(), tb.await.unwrap());
        let all: BTreeSet<_> = ta.iter().chain(&tb).cloned().collect();
        assert_eq!(
            ta.len() + tb.len(),
            24,
            "a run was taken twice: {ta:?} {tb:?}"
        );
        assert_eq!(all.len(), 24);
    });
}

#[test]
fn a_change_made_through_one_worker_reaches_the_other_within_a_second() {
    let (_db, a, b) = two_workers();
    rt().block_on(async {
        let (mut on_a, mut on_b) = (a.watch(), b.watch());
        let within = Duration::from_secs(1);
        let owner = lease_owner_name();
        create(&a, "run_seen", "conv_seen", &owner, 60_000).await;
        let c = next_change(&mut on_b, "run_seen", within).await;
        assert_eq!(
            (c.kind, c.status),
            (ChangeKind::Created, RunStatus::InProgress)
        );
        assert_eq!(c.origin.as_deref(), Some(owner.as_str()));
        a.save_run("run_seen", &owner, pause(&["call_s"]))
            .await
            .unwrap();
        let c = next_change(&mut on_b, "run_seen", within).await;
        assert_eq!(
            (c.kind, c.status),
            (ChangeKind::Status, RunStatus::RequiresAction)
        );
        let c = next_change(&mut on_b, "run_seen", within).await;
        assert_eq!(c.kind, ChangeKind::PendingAdded);
        // A decision through the other worker reaches the first.
        let c = next_change(&mut on_a, "run_seen", within).await;
        assert_eq!(c.kind, ChangeKind::Created);
        while next_change(&mut on_a, "run_seen", within).await.kind != ChangeKind::PendingAdded {}
        b.apply_decision(decide("run_seen", &["call_s"], 0), Decision::Approve, None)
            .await
            .unwrap()
            .unwrap();
        let c = next_change(&mut on_a, "run_seen", within).await;
        assert_eq!(
            (c.kind, c.status),
            (ChangeKind::Decided, RunStatus::RequiresAction)
        );
        b.cancel_run("run_seen").await.unwrap();
        loop {
            let c = next_change(&mut on_a, "run_seen", within).await;
            if c.kind == ChangeKind::Status {
                assert_eq!(c.status, RunStatus::Cancelled);
                break;
            }
        }
    });
}

#[test]
fn the_feed_connects_again_after_its_connection_dies_and_tells_what_it_missed() {
    let (db, a, b) = two_workers();
    let url = db.arg().to_string();
    rt().block_on(async {
        let mut on_b = b.watch();
        let owner = lease_owner_name();
        let kill = "SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity WHERE application_name = 'toolgate-feed' AND datname = current_database()";
        assert_eq!(sql(&url, kill).await, ["true"]);
        // Made while the listener is away (it waits 100 ms before connecting again).
        create(&a, "run_gap", "conv_gap", &owner, 60_000).await;
        let c = next_change(&mut on_b, "run_gap", Duration::from_secs(5)).await;
        assert_eq!(c.status, RunStatus::InProgress);
        // And it listens again: later changes arrive as they are made.
        tokio::time::sleep(Duration::from_millis(500)).await;
        while on_b.try_recv().is_ok() {}
        a.cancel_run("run_gap").await.unwrap();
        let c = next_change(&mut on_b, "run_gap", Duration::from_secs(1)).await;
        assert_eq!((c.kind, c.status), (ChangeKind::Status, RunStatus::Cancelled));
    });
    // The listener ends with its store.
    drop(b);
    rt().block_on(async {
        let count = "SELECT count(*)::text FROM pg_stat_activity WHERE application_name = 'toolgate-feed' AND datname = current_database()";
        for _ in 0..50 {
            if sql(&url, count).await == ["0"] {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the feed's connection outlived its store");
    });
}

#[test]
fn a_save_writes_its_items_records_and_messages_in_order_and_a_refused_one_keeps_its_records() {
    let (db, a, b) = two_workers();
    let url = db.arg().to_string();
    rt().block_on(async {
        let (mine, theirs) = (lease_owner_name(), lease_owner_name());
        create(&a, "run_w", "conv_w", &mine, 300).await;
        let record = |call: &str| toolgate::store::CallRecord {
            call_id: call.into(),
            run_id: Some("run_w".into()),
            conversation_id: "conv_w".into(),
            agent: None,
            caller: toolgate::protocol::CallerKind::Agent,
            tool: "launch".into(),
            arguments: serde_json::json!({"n": call}),
            result: None,
            result_size: 0,
            status: toolgate::protocol::CallStatus::Failed,
            error_kind: Some(toolgate::protocol::ErrorKind::Interrupted),
            error_message: None,
            started_at: 5,
            duration_ms: 0.5,
            replaced: true,
            attempts: Vec::new(),
            cached: None,
        };
        let step = RunSave {
            records: vec![record("c1"), record("c2")],
            messages: vec!["{\"m\":1}".into(), "{\"m\":2}".into()],
            ..pause(&["p3", "p1", "p2"])
        };
        a.save_run("run_w", &mine, step).await.unwrap();
        let (_, pending) = b.run("run_w").await.unwrap();
        let calls: Vec<_> = pending.iter().map(|p| p.item.call_id.as_str()).collect();
        assert_eq!(calls, ["p3", "p1", "p2"]);
        assert_eq!(
            b.conversation_messages("conv_w").await.unwrap(),
            ["{\"role\":\"user\",\"content\":\"hi\"}", "{\"m\":1}", "{\"m\":2}"]
        );
        // A save by a holder that lost the lease keeps only its records.
        let (_, _) = b.acquire_run("run_w", &theirs, 60_000).await.unwrap();
        let late = RunSave {
            records: vec![record("c3")],
            messages: vec!["{\"m\":3}".into()],
            first_seq: 3,
            ..save(RunStatus::InProgress)
        };
        assert_eq!(
            refusal(a.save_run("run_w", &mine, late).await, "postgres").0,
            Refusal::LeaseLost
        );
        assert_eq!(b.conversation_messages("conv_w").await.unwrap().len(), 3);
        let kept = sql(
            &url,
            "SELECT string_agg(call_id || ':' || error_kind || ':' || replaced::text, ',' ORDER BY id) FROM tool_calls WHERE run_id = 'run_w'",
        )
        .await;
        assert_eq!(kept, ["c1:interrupted:true,c2:interrupted:true,c3:interrupted:true"]);
        // A position already taken: the conversation is busy.
        let clash = RunSave {
            messages: vec!["{\"m\":\"again\"}".into()],
            first_seq: 2,
            ..save(RunStatus::InProgress)
        };
        assert_eq!(
            refusal(b.save_run("run_w", &theirs, clash).await, "postgres").0,
            Refusal::ConversationBusy
        );
    });
}

#[test]
fn of_runs_created_at_once_in_one_conversation_by_two_workers_one_is_made() {
    let (_db, a, b) = two_workers();
    rt().block_on(async {
        let tries: Vec<_> = (0..6)
            .map(|i| {
                let store = if i % 2 == 0 { a.clone() } else { b.clone() };
                tokio::spawn(async move {
                    store
                        .create_run(
                            &format!("run_same{i}"),
                            "conv_same",
                            "assistant",
                            "{}".into(),
                            &lease_owner_name(),
                            60_000,
                            vec![],
                            0,
                        )
                        .await
                })
            })
            .collect();
        let mut made = 0;
        for t in tries {
            match t.await.unwrap() {
                Ok(()) => made += 1,
                Err(e) => assert_eq!(
                    refusal::<()>(Err(e), "postgres").0,
                    Refusal::ConversationBusy
                ),
            }
        }
        assert_eq!(made, 1);
    });
}
