//! The responses table (schema 3): a response id maps to its run and step, steps count
//! up per run, bodies are replaced as a response ends and read back after a reopen,
//! and a run's call records are found by call id.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{CallRecord, Store, StoreError};

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
    }
}

#[test]
fn responses_map_to_run_and_step_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let rt = rt();
    {
        let store = Store::open(&path).unwrap();
        rt.block_on(store.create_run(
            "run_a",
            "conv_1",
            "assistant",
            "{}".into(),
            "owner",
            30_000,
            vec![],
            0,
        ))
        .unwrap();
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
        assert_eq!((first, second), (0, 1));
        // The input items are kept with the response.
        assert_eq!(
            store.response_input("resp_1").block().unwrap().as_deref(),
            Some(r#"[{"type": "message"}]"#)
        );
        assert_eq!(store.response_input("resp_none").block().unwrap(), None);
        rt.block_on(store.update_response(
            "resp_2",
            "completed",
            json!({"id": "resp_2", "status": "completed"}).to_string(),
        ))
        .unwrap();
        // A response of a run that does not exist, or an update of an unknown id, is refused.
        assert!(matches!(
            rt.block_on(store.create_response(
                "resp_x",
                "run_none",
                None,
                "in_progress",
                "{}".into(),
                "[]".into()
            )),
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            rt.block_on(store.update_response("resp_none", "completed", "{}".into())),
            Err(StoreError::NotFound(_))
        ));
        rt.block_on(store.record_calls(vec![
            record("run_a", "c1"),
            record("run_a", "c2"),
            record("run_b", "c1"),
        ]))
        .unwrap();
        store.close();
    }
    let store = Store::open(&path).unwrap();
    let row = store.response("resp_2").block().unwrap().unwrap();
    assert_eq!(
        (row.run_id.as_str(), row.step, row.previous_id.as_deref()),
        ("run_a", 1, Some("resp_1"))
    );
    assert_eq!(row.status, "completed");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&row.body).unwrap()["status"],
        "completed"
    );
    assert!(store.response("resp_none").block().unwrap().is_none());
    let steps: Vec<u32> = store
        .run_responses("run_a")
        .block()
        .unwrap()
        .iter()
        .map(|r| r.step)
        .collect();
    assert_eq!(steps, [0, 1]);
    let found = store
        .run_call_records("run_a", &["c2".to_string(), "c9".to_string()])
        .block()
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].call_id.as_str(), found[0].run_id.as_deref()),
        ("c2", Some("run_a"))
    );
    assert!(
        store
            .run_call_records("run_a", &[])
            .block()
            .unwrap()
            .is_empty()
    );
}
