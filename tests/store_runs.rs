//! Runs in the store, on both backends alike: creating one (a busy conversation and a
//! second sub-agent run refused), ids by prefix, the lease (held, run out, lost), saves
//! with the executing fence, pauses and decisions (compare-and-set, standing approvals),
//! cancels reaching the runs below, runs nobody drives, and the change feed.

use std::time::Duration;

use serde_json::json;
use toolgate::protocol::{CallStatus, CallerKind, Decision, ItemKind, RequiredItem, RunStatus};
use toolgate::store::{
    CallRecord, ChangeKind, DecisionChanges, NewRun, PendingState, Refusal, RunLink, RunSave,
    Store, StoreError, lease_owner_name,
};

use crate::databases::TestDb;

/// A runtime for one test.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `test` on a SQLite file, then on a fresh PostgreSQL database.
fn on_both(
    test: impl Fn(&TestDb, Store) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
) {
    for db in TestDb::both() {
        let store = db.open();
        rt().block_on(test(&db, store));
    }
}

/// A new run leased to `owner` for `lease_ms`.
pub async fn create(store: &Store, id: &str, conv: &str, owner: &str, lease_ms: i64) {
    store
        .create_run(
            id,
            conv,
            "assistant",
            "{\"step\":0}".into(),
            owner,
            lease_ms,
            vec!["{\"role\":\"user\",\"content\":\"hi\"}".into()],
            0,
        )
        .await
        .unwrap();
}

/// An approval item for `call`.
pub fn approval(call: &str) -> RequiredItem {
    RequiredItem {
        call_id: call.into(),
        kind: ItemKind::Approval,
        tool: "launch".into(),
        arguments: json!({"target": "moon"}),
        run_id: None,
        path: Vec::new(),
        reason: Some("it launches".into()),
        expires_at: None,
        on_timeout: None,
        policy: Some("fp1".into()),
    }
}

/// A save that changes nothing but the state.
pub fn save(status: RunStatus) -> RunSave {
    RunSave {
        status,
        state: "{\"step\":1}".into(),
        iteration: 1,
        last_error: None,
        add_pending: Vec::new(),
        set_pending: Vec::new(),
        release: status != RunStatus::InProgress,
        usage: Default::default(),
        records: Vec::new(),
        requests: Vec::new(),
        messages: Vec::new(),
        first_seq: 1,
    }
}

/// A save pausing the run on approvals of `calls`.
pub fn pause(calls: &[&str]) -> RunSave {
    RunSave {
        add_pending: calls.iter().map(|c| approval(c)).collect(),
        ..save(RunStatus::RequiresAction)
    }
}

/// The decision of `calls` of run `run` (all held by it).
pub fn decide(run: &str, calls: &[&str], still_waiting: usize) -> DecisionChanges {
    DecisionChanges {
        run_id: run.into(),
        items: calls
            .iter()
            .map(|c| (run.to_string(), c.to_string()))
            .collect(),
        standing: Vec::new(),
        still_waiting,
        claim: None,
    }
}

fn record(run: &str, call: &str) -> CallRecord {
    CallRecord {
        call_id: call.into(),
        run_id: Some(run.into()),
        conversation_id: format!("conv_{run}"),
        agent: Some("assistant".into()),
        caller: CallerKind::Agent,
        tool: "launch".into(),
        arguments: json!({"target": "moon"}),
        result: Some("ok".into()),
        result_size: 2,
        status: CallStatus::Succeeded,
        error_kind: None,
        error_message: None,
        started_at: 1,
        duration_ms: 1.0,
        replaced: false,
        attempts: Vec::new(),
        cached: None,
    }
}

/// The refusal kind of `e` (panics on any other error).
#[track_caller]
pub fn refusal<T: std::fmt::Debug>(r: Result<T, StoreError>, db: &str) -> (Refusal, String) {
    match r {
        Err(StoreError::Refused(kind, message)) => (kind, message),
        other => panic!("{db}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_run_is_created_read_by_prefix_and_its_conversation_is_held() {
    on_both(|db, store| {
        let name = db.name();
        Box::pin(async move {
            let owner = lease_owner_name();
            create(&store, "run_abc1", "conv_1", &owner, 10_000).await;
            let (run, pending) = store.run("run_abc").await.unwrap();
            assert_eq!(run.id, "run_abc1", "{name}");
            assert_eq!(run.status, RunStatus::InProgress, "{name}");
            assert_eq!(run.lease_owner.as_deref(), Some(owner.as_str()), "{name}");
            assert!(run.lease_until.unwrap() > run.created_at, "{name}");
            assert_eq!(run.tenant, "default", "{name}");
            assert!(pending.is_empty(), "{name}");
            assert_eq!(
                store.conversation_messages("conv_1").await.unwrap(),
                ["{\"role\":\"user\",\"content\":\"hi\"}"],
                "{name}"
            );
            assert_eq!(
                store.run_status("run_abc1").await.unwrap(),
                RunStatus::InProgress
            );

            // A second run in a conversation with an unfinished one is refused.
            let other = store
                .create_run(
                    "run_abc2",
                    "conv_1",
                    "a",
                    "{}".into(),
                    &owner,
                    10_000,
                    vec![],
                    1,
                )
                .await;
            let (kind, message) = refusal(other, name);
            assert_eq!(kind, Refusal::ConversationBusy, "{name}");
            assert!(message.contains("run_abc1"), "{name}: {message}");

            create(&store, "run_abd1", "conv_2", &owner, 10_000).await;
            let (kind, _) = refusal(store.run("run_ab").await, name);
            assert_eq!(kind, Refusal::AmbiguousId, "{name}");
            match store.run("run_zz").await {
                Err(StoreError::NotFound(id)) => assert_eq!(id, "run_zz", "{name}"),
                other => panic!("{name}: {:?}", other.map(|r| r.0.id)),
            }
            match store.run_status("run_abc").await {
                Err(StoreError::NotFound(_)) => {}
                other => panic!("{name}: run_status takes whole ids: {other:?}"),
            }
            // A message position taken twice is a busy conversation.
            store.cancel_run("run_abc1").await.unwrap();
            let taken = store
                .create_run(
                    "run_abc3",
                    "conv_1",
                    "a",
                    "{}".into(),
                    &owner,
                    10_000,
                    vec!["{}".into()],
                    0,
                )
                .await;
            assert_eq!(refusal(taken, name).0, Refusal::ConversationBusy, "{name}");
        })
    });
}

#[test]
fn a_lease_is_held_until_it_runs_out_and_a_lost_one_saves_nothing_but_records() {
    on_both(|db, store| {
        let name = db.name();
        Box::pin(async move {
            let (a, b) = (lease_owner_name(), lease_owner_name());
            create(&store, "run_l", "conv_l", &a, 10_000).await;
            let (kind, message) = refusal(store.acquire_run("run_l", &b, 10_000).await, name);
            assert_eq!(kind, Refusal::LeaseHeld, "{name}");
            assert!(
                message.contains("being continued by another process"),
                "{name}: {message}"
            );
            // A short lease runs out.
            store.renew_lease("run_l", &a, 1).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
            let (run, _) = store.acquire_run("run_l", &b, 10_000).await.unwrap();
            assert_eq!(run.lease_owner.as_deref(), Some(b.as_str()), "{name}");
            // The first holder lost it: its renewal and its save are refused, the save's
            // records kept.
            assert_eq!(
                refusal(store.renew_lease("run_l", &a, 10_000).await, name).0,
                Refusal::LeaseLost
            );
            let lost = store
                .save_run(
                    "run_l",
                    &a,
                    RunSave {
                        records: vec![record("run_l", "call_kept")],
                        ..save(RunStatus::Completed)
                    },
                )
                .await;
            let (kind, message) = refusal(lost, name);
            assert_eq!(kind, Refusal::LeaseLost, "{name}");
            assert!(message.contains("taken over"), "{name}: {message}");
            let (run, _) = store.run("run_l").await.unwrap();
            assert_eq!(
                (run.status, run.iteration),
                (RunStatus::InProgress, 0),
                "{name}"
            );
            assert_eq!(run.state, "{\"step\":0}", "{name}");
            // The holder saves; releasing, it gives the lease back.
            store
                .save_run("run_l", &b, save(RunStatus::Completed))
                .await
                .unwrap();
            let (run, _) = store.run("run_l").await.unwrap();
            assert_eq!(run.status, RunStatus::Completed, "{name}");
            assert_eq!((run.lease_owner, run.lease_until), (None, None), "{name}");
            let (kind, message) = refusal(store.acquire_run("run_l", &a, 10_000).await, name);
            assert_eq!(kind, Refusal::NotResumable, "{name}");
            assert!(message.contains("is completed"), "{name}: {message}");
            assert_eq!(
                refusal(store.cancel_run("run_l").await, name).0,
                Refusal::NotResumable
            );
        })
    });
}

#[test]
fn a_pause_is_decided_once_and_the_executing_fence_is_found_by_the_next_holder() {
    on_both(|db, store| {
        let name = db.name();
        Box::pin(async move {
            let a = lease_owner_name();
            create(&store, "run_p", "conv_p", &a, 10_000).await;
            store
                .save_run("run_p", &a, pause(&["call_1", "call_2"]))
                .await
                .unwrap();
            let (run, pending) = store.run("run_p").await.unwrap();
            assert_eq!(run.status, RunStatus::RequiresAction, "{name}");
            assert_eq!(run.lease_owner, None, "{name}");
            let calls: Vec<_> = pending.iter().map(|p| p.item.call_id.as_str()).collect();
            assert_eq!(
                calls,
                ["call_1", "call_2"],
                "{name}: in the order they were added"
            );
            assert!(
                pending.iter().all(|p| p.state == PendingState::Waiting),
                "{name}"
            );
            assert_eq!(
                pending[0].item.reason.as_deref(),
                Some("it launches"),
                "{name}"
            );
            assert_eq!(pending[0].item.policy.as_deref(), Some("fp1"), "{name}");
            assert_eq!(
                pending[0].item.arguments,
                json!({"target": "moon"}),
                "{name}"
            );

            // Approve always: the standing approval is written with the decision.
            let mut first = decide("run_p", &["call_1"], 1);
            first.standing = vec![("run_p".into(), "launch".into(), "fp1".into())];
            let decided = store
                .apply_decision(first.clone(), Decision::ApproveAlways, None)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(decided.calls, ["call_1"], "{name}");
            assert_eq!(decided.waiting, 1, "{name}");
            assert_eq!(decided.waited[0].0, "assistant", "{name}");
            assert_eq!(
                store
                    .standing_approvals("conv_p", "assistant")
                    .await
                    .unwrap(),
                [("launch".to_string(), "fp1".to_string())],
                "{name}"
            );
            // The same item again: someone got there first, nothing is written.
            assert!(
                store
                    .apply_decision(first, Decision::Approve, None)
                    .await
                    .unwrap()
                    .is_none()
            );
            // Both items, one already decided: none is written.
            let both = decide("run_p", &["call_2", "call_1"], 0);
            assert!(
                store
                    .apply_decision(both, Decision::Approve, None)
                    .await
                    .unwrap()
                    .is_none()
            );
            let (_, pending) = store.run("run_p").await.unwrap();
            assert_eq!(
                pending[1].state,
                PendingState::Waiting,
                "{name}: rolled back"
            );
            let deny = Decision::Deny {
                reason: Some("no".into()),
            };
            store
                .apply_decision(decide("run_p", &["call_2"], 0), deny.clone(), None)
                .await
                .unwrap()
                .unwrap();
            let (_, pending) = store.run("run_p").await.unwrap();
            assert_eq!(pending[1].decision, Some(deny), "{name}");

            // The next holder moves the approved call to executing, then dies.
            let (_, pending) = store.acquire_run("run_p", &a, 1).await.unwrap();
            assert!(
                pending.iter().all(|p| p.state == PendingState::Decided),
                "{name}"
            );
            let fence = RunSave {
                set_pending: vec![("call_1".into(), PendingState::Executing)],
                ..save(RunStatus::InProgress)
            };
            store.save_run("run_p", &a, fence).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
            // Whoever takes it up finds the call executing (it never runs it again), and the
            // dead holder's late save is refused.
            let b = lease_owner_name();
            assert_eq!(store.unheld_runs(10).await.unwrap(), ["run_p"], "{name}");
            let (_, pending) = store.acquire_run("run_p", &b, 10_000).await.unwrap();
            assert_eq!(pending[0].state, PendingState::Executing, "{name}");
            assert!(store.unheld_runs(10).await.unwrap().is_empty(), "{name}");
            let late = RunSave {
                set_pending: vec![("call_1".into(), PendingState::Done)],
                ..save(RunStatus::InProgress)
            };
            assert_eq!(
                refusal(store.save_run("run_p", &a, late).await, name).0,
                Refusal::LeaseLost
            );
            let (_, pending) = store.run("run_p").await.unwrap();
            assert_eq!(pending[0].state, PendingState::Executing, "{name}");
            // A cancelled run takes no decision.
            store.cancel_run("run_p").await.unwrap();
            assert!(
                store
                    .apply_decision(decide("run_p", &["call_2"], 0), Decision::Approve, None)
                    .await
                    .unwrap()
                    .is_none()
            );
        })
    });
}

#[test]
fn a_tree_of_runs_is_read_paused_and_cancelled_together() {
    on_both(|db, store| {
        let name = db.name();
        Box::pin(async move {
            let owner = lease_owner_name();
            create(&store, "run_top", "conv_top", &owner, 10_000).await;
            let child = |id: &str, conv: &str, parent: &str, depth: u32| NewRun {
                id: id.into(),
                conversation_id: conv.into(),
                agent: "helper".into(),
                state: "{}".into(),
                owner: owner.clone(),
                lease_ms: 10_000,
                messages: vec![],
                first_seq: 0,
                link: Some(RunLink {
                    parent_run_id: parent.into(),
                    parent_call_id: "call_sub".into(),
                    depth,
                }),
                tenant: "default".into(),
                started_by: None,
            };
            store
                .create_linked_run(child("run_kid", "conv_kid", "run_top", 1))
                .await
                .unwrap();
            store
                .create_linked_run(child("run_grandkid", "conv_gk", "run_kid", 2))
                .await
                .unwrap();
            let again = store
                .create_linked_run(child("run_kid2", "conv_kid2", "run_top", 1))
                .await;
            let (kind, message) = refusal(again, name);
            assert_eq!(kind, Refusal::ChildExists, "{name}");
            assert!(message.contains("run_kid"), "{name}: {message}");

            assert_eq!(
                store
                    .child_run("run_top", "call_sub")
                    .await
                    .unwrap()
                    .unwrap()
                    .id,
                "run_kid"
            );
            assert!(
                store
                    .child_run("run_top", "call_none")
                    .await
                    .unwrap()
                    .is_none()
            );
            assert_eq!(
                store.root_run("run_grandkid").await.unwrap().id,
                "run_top",
                "{name}"
            );
            assert_eq!(
                store.runs_below("run_top").await.unwrap(),
                ["run_kid", "run_grandkid"]
            );

            // The grandchild pauses; then the runs above it: the top shows its item.
            store
                .save_run("run_grandkid", &owner, pause(&["call_deep"]))
                .await
                .unwrap();
            store
                .save_run("run_kid", &owner, save(RunStatus::RequiresAction))
                .await
                .unwrap();
            store
                .save_run("run_top", &owner, save(RunStatus::RequiresAction))
                .await
                .unwrap();
            let (_, pending) = store.run("run_top").await.unwrap();
            assert_eq!(pending.len(), 1, "{name}");
            assert_eq!(
                pending[0].item.run_id.as_deref(),
                Some("run_grandkid"),
                "{name}"
            );
            assert_eq!(
                pending[0].item.path,
                ["run_top", "run_kid", "run_grandkid"],
                "{name}"
            );
            // Decided through the top run.
            let changes = DecisionChanges {
                run_id: "run_top".into(),
                items: vec![("run_grandkid".into(), "call_deep".into())],
                standing: vec![("run_grandkid".into(), "launch".into(), "fp".into())],
                still_waiting: 0,
                claim: None,
            };
            store
                .apply_decision(changes, Decision::Approve, None)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                store
                    .standing_approvals("conv_gk", "helper")
                    .await
                    .unwrap()
                    .len(),
                1
            );

            let (id, before) = store.cancel_run("run_top").await.unwrap();
            assert_eq!(
                (id.as_str(), before),
                ("run_top", RunStatus::RequiresAction),
                "{name}"
            );
            for id in ["run_kid", "run_grandkid"] {
                let (run, _) = store.run(id).await.unwrap();
                assert_eq!(run.status, RunStatus::Cancelled, "{name}: {id}");
                assert_eq!(
                    run.last_error.as_deref(),
                    Some("cancelled with the run above it")
                );
            }
        })
    });
}

#[test]
fn runs_nobody_drives_are_those_in_progress_at_the_top_with_no_live_lease() {
    on_both(|db, store| {
        let name = db.name();
        Box::pin(async move {
            let owner = lease_owner_name();
            create(&store, "run_held", "conv_h", &owner, 60_000).await;
            create(&store, "run_gone", "conv_g", &owner, 1).await;
            create(&store, "run_back", "conv_b", &owner, 60_000).await;
            create(&store, "run_paused", "conv_p2", &owner, 60_000).await;
            store
                .release_run("run_back", &owner, RunStatus::InProgress)
                .await
                .unwrap();
            store
                .save_run("run_paused", &owner, pause(&["c"]))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
            let mut ids = store.unheld_runs(10).await.unwrap();
            ids.sort();
            assert_eq!(ids, ["run_back", "run_gone"], "{name}");
            assert_eq!(store.unheld_runs(1).await.unwrap().len(), 1, "{name}");
        })
    });
}

/// Waits (at most `within`) for the next change of `run` on `changes`.
pub async fn next_change(
    changes: &mut tokio::sync::broadcast::Receiver<toolgate::store::Change>,
    run: &str,
    within: Duration,
) -> toolgate::store::Change {
    tokio::time::timeout(within, async {
        loop {
            match changes.recv().await {
                Ok(c) if c.run_id == run => return c,
                Ok(_) => {}
                Err(e) => panic!("the feed: {e}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no change of {run} within {within:?}"))
}

#[test]
fn the_feed_tells_of_creation_pause_decision_and_end_but_not_of_renewals() {
    on_both(|db, store| {
        let name = db.name();
        Box::pin(async move {
            let mut seen = store.watch();
            let owner = lease_owner_name();
            let within = Duration::from_secs(5);
            create(&store, "run_f", "conv_f", &owner, 10_000).await;
            let c = next_change(&mut seen, "run_f", within).await;
            assert_eq!(
                (c.kind, c.status),
                (ChangeKind::Created, RunStatus::InProgress),
                "{name}"
            );
            assert_eq!(c.origin.as_deref(), Some(owner.as_str()), "{name}");
            assert!(c.made_here(), "{name}");
            store.renew_lease("run_f", &owner, 10_000).await.unwrap();
            // (A save in the same millisecond as the creation would change nothing.)
            tokio::time::sleep(Duration::from_millis(5)).await;
            store
                .save_run("run_f", &owner, save(RunStatus::InProgress))
                .await
                .unwrap();
            let c = next_change(&mut seen, "run_f", within).await;
            assert_eq!(
                (c.kind, c.status),
                (ChangeKind::Saved, RunStatus::InProgress),
                "{name}"
            );
            store
                .save_run("run_f", &owner, pause(&["call_f"]))
                .await
                .unwrap();
            let c = next_change(&mut seen, "run_f", within).await;
            assert_eq!(
                (c.kind, c.status),
                (ChangeKind::Status, RunStatus::RequiresAction),
                "{name}"
            );
            assert_eq!(c.origin.as_deref(), Some(owner.as_str()), "{name}");
            let c = next_change(&mut seen, "run_f", within).await;
            assert_eq!(c.kind, ChangeKind::PendingAdded, "{name}");
            let mut seqs = vec![c.seq];
            store
                .apply_decision(decide("run_f", &["call_f"], 0), Decision::Approve, None)
                .await
                .unwrap()
                .unwrap();
            let c = next_change(&mut seen, "run_f", within).await;
            assert_eq!(
                (c.kind, c.status),
                (ChangeKind::Decided, RunStatus::RequiresAction),
                "{name}"
            );
            seqs.push(c.seq);
            store.cancel_run("run_f").await.unwrap();
            // (The decision also touched the run: a save, when its time moved.)
            let mut c = next_change(&mut seen, "run_f", within).await;
            while c.kind == ChangeKind::Saved {
                c = next_change(&mut seen, "run_f", within).await;
            }
            assert_eq!(
                (c.kind, c.status),
                (ChangeKind::Status, RunStatus::Cancelled),
                "{name}"
            );
            seqs.push(c.seq);
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{name}: {seqs:?}");
            assert_eq!(c.tenant, "default", "{name}");
        })
    });
}
