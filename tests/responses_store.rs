//! The responses table (schema 3), on both backends: a response id maps to its run and
//! step, steps count up per run, bodies are replaced as a response ends and read back
//! after a reopen, and a run's call records are found by call id. On PostgreSQL,
//! workers creating responses of one run at once get distinct steps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::json;
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{CallRecord, Store, StoreError};

use crate::databases::TestDb;
use crate::rows::{exec, run};

/// Waits for a store operation from a synchronous test.
trait Block: std::future::Future + Sized {
    fn block(self) -> Self::Output {
        rt().block_on(self)
    }
}

impl<F: std::future::Future> Block for F {}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn record(run: &str, call: &str) -> CallRecord {
    CallRecord {
        call_id: call.into(),
        run_id: Some(run.into()),
        conversation_id: "conv_1".into(),
        agent: Some("assistant".into()),
        caller: CallerKind::Agent,
        tool: "calculator".into(),
        arguments: json!({"expression": "1+1"}),
        result: Some("2".into()),
        result_size: 1,
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

#[test]
fn responses_map_to_run_and_step_and_survive_a_reopen() {
    for db in TestDb::both() {
        let name = db.name();
        let rt = rt();
        {
            let store = db.open();
            exec(&db, &run("run_a", None, "in_progress"));
            let first = rt
                .block_on(store.create_response(
                    "resp_1",
                    "run_a",
                    None,
                    "in_progress",
                    "{}".into(),
                    r#"[{"type": "message"}]"#.into(),
                ))
                .unwrap();
            let second = rt
                .block_on(store.create_response(
                    "resp_2",
                    "run_a",
                    Some("resp_1"),
                    "in_progress",
                    "{}".into(),
                    "[]".into(),
                ))
                .unwrap();
            assert_eq!((first, second), (0, 1), "{name}");
            // The input items are kept with the response.
            assert_eq!(
                store.response_input("resp_1").block().unwrap().as_deref(),
                Some(r#"[{"type": "message"}]"#),
                "{name}"
            );
            assert_eq!(store.response_input("resp_none").block().unwrap(), None);
            rt.block_on(store.update_response(
                "resp_2",
                "completed",
                json!({"id": "resp_2", "status": "completed"}).to_string(),
            ))
            .unwrap();
            // A response of a run that does not exist, or an update of an unknown id, is
            // refused, with the same words on both backends.
            let missing = rt
                .block_on(store.create_response(
                    "resp_x",
                    "run_none",
                    None,
                    "in_progress",
                    "{}".into(),
                    "[]".into(),
                ))
                .unwrap_err();
            assert_eq!(
                missing,
                StoreError::NotFound("run_none".into()),
                "{name}: {missing}"
            );
            assert_eq!(
                missing.to_string(),
                "there is no run 'run_none' (toolgate runs lists them)"
            );
            assert_eq!(
                rt.block_on(store.update_response("resp_none", "completed", "{}".into())),
                Err(StoreError::NotFound("resp_none".into())),
                "{name}"
            );
            // A third, deleted: the others stay; a second delete finds nothing.
            rt.block_on(store.create_response(
                "resp_3",
                "run_a",
                Some("resp_2"),
                "in_progress",
                "{}".into(),
                "[]".into(),
            ))
            .unwrap();
            assert!(store.delete_response("resp_3").block().unwrap(), "{name}");
            assert!(!store.delete_response("resp_3").block().unwrap(), "{name}");
            store.close();
            // A closed store writes nothing more.
            assert!(
                matches!(
                    rt.block_on(store.update_response("resp_2", "failed", "{}".into())),
                    Err(StoreError::WriterGone { .. })
                ),
                "{name}"
            );
        }
        let store = db.open();
        let row = store.response("resp_2").block().unwrap().unwrap();
        assert_eq!(
            (row.run_id.as_str(), row.step, row.previous_id.as_deref()),
            ("run_a", 1, Some("resp_1")),
            "{name}"
        );
        assert_eq!(row.status, "completed", "{name}");
        assert!(row.created_at <= row.updated_at, "{name}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&row.body).unwrap()["status"],
            "completed",
            "{name}"
        );
        assert!(store.response("resp_none").block().unwrap().is_none());
        let steps: Vec<u32> = store
            .run_responses("run_a")
            .block()
            .unwrap()
            .iter()
            .map(|r| r.step)
            .collect();
        // The deleted third is gone; the others stay.
        assert_eq!(steps, [0, 1], "{name}");
        assert!(store.run_responses("run_none").block().unwrap().is_empty());
    }
}

#[test]
fn a_runs_call_records_are_found_by_call_id() {
    for db in TestDb::both() {
        let name = db.name();
        let store = db.open();
        exec(&db, &run("run_a", None, "in_progress"));
        store
            .record_calls(vec![
                record("run_a", "c1"),
                record("run_a", "c2"),
                record("run_b", "c1"),
            ])
            .block()
            .unwrap();
        let found = store
            .run_call_records("run_a", &["c2".to_string(), "c9".to_string()])
            .block()
            .unwrap();
        assert_eq!(found.len(), 1, "{name}");
        assert_eq!(
            (found[0].call_id.as_str(), found[0].run_id.as_deref()),
            ("c2", Some("run_a")),
            "{name}"
        );
        assert!(
            store
                .run_call_records("run_a", &[])
                .block()
                .unwrap()
                .is_empty(),
            "{name}"
        );
    }
}

/// Workers (stores of their own on one database) creating responses of one run at once
/// get distinct steps, 0 to n - 1.
#[test]
fn workers_creating_responses_of_one_run_at_once_get_distinct_steps_on_postgres() {
    let db = TestDb::postgres();
    drop(db.open());
    exec(&db, &run("run_a", None, "in_progress"));
    let (workers, each) = (3, 8);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(workers));
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let url = db.arg().to_string();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let store = Store::open(Path::new(&url)).unwrap();
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                barrier.wait();
                rt.block_on(async {
                    let made = (0..each).map(|i| {
                        let store = store.clone();
                        async move {
                            store
                                .create_response(
                                    &format!("resp_{w}_{i}"),
                                    "run_a",
                                    None,
                                    "in_progress",
                                    "{}".into(),
                                    "[]".into(),
                                )
                                .await
                                .unwrap()
                        }
                    });
                    futures_util::future::join_all(made).await
                })
            })
        })
        .collect();
    let steps: Vec<u32> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let distinct: BTreeSet<u32> = steps.iter().copied().collect();
    assert_eq!(steps.len(), distinct.len(), "a step given twice: {steps:?}");
    assert_eq!(distinct, (0..(workers * each) as u32).collect());
    let store = db.open();
    let stored: Vec<u32> = store
        .run_responses("run_a")
        .block()
        .unwrap()
        .iter()
        .map(|r| r.step)
        .collect();
    assert_eq!(stored, (0..(workers * each) as u32).collect::<Vec<_>>());
}
