//! The record: schema and migrations (also by several processes opening one new SQLite
//! file at once), files toolgate must refuse, a locked and a full database, a process
//! killed while it records (SQLite's), summaries and queries checked against
//! hand-computed numbers on both backends ([`on_both`]), and the change feed between
//! two stores on one database (on both backends).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use rusqlite::Connection;
use serde_json::{Value, json};
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{
    APPLICATION_ID, CallCounts, CallQuery, CallRecord, ConversationSummary, Durations, GlobalStats,
    SCHEMA_VERSION, Scope, Store, StoreError, StoreOptions, ToolStats,
};

use crate::databases::TestDb;

/// Runs `check` on a new database of each backend; a failure names the backend.
pub fn on_both(check: impl Fn(&TestDb, &Store)) {
    for db in TestDb::both() {
        let store = db.open();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&db, &store)));
        if let Err(panic) = outcome {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("on {}: {why}", db.name());
        }
    }
}

fn record(
    conv: &str,
    tool: &str,
    status: CallStatus,
    started_at: i64,
    duration_ms: f64,
) -> CallRecord {
    CallRecord {
        call_id: format!("call_{started_at}"),
        run_id: Some(format!("run_{conv}")),
        conversation_id: conv.into(),
        agent: Some("assistant".into()),
        caller: CallerKind::Agent,
        tool: tool.into(),
        arguments: json!({"x": 1}),
        result: Some("ok".into()),
        result_size: 2,
        status,
        error_kind: None,
        error_message: None,
        started_at,
        duration_ms,
        replaced: false,
        attempts: Vec::new(),
        cached: None,
    }
}

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

#[test]
fn schema_is_marked_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let store = Store::open(&path).unwrap();
    rt().block_on(store.record_calls(vec![record("c", "echo", CallStatus::Succeeded, 1, 1.0)]))
        .unwrap();
    store.close();
    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let app: i64 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(
        (version, app, mode.as_str()),
        (SCHEMA_VERSION, APPLICATION_ID, "wal")
    );
    drop(conn);
    let again = Store::open(&path).unwrap();
    assert_eq!(
        again
            .conversation_summary("c")
            .block()
            .unwrap()
            .calls
            .total_calls,
        1
    );
}

/// Several commands started at once on a new database (each records a call): each migrates what is left, none runs a migration twice, and every one
/// opens the file. Before the version was read again under the write lock, one in a
/// few rounds failed with `duplicate column name` and left the file at an old version
/// with the newer schema: no command could open it again.
#[test]
fn commands_opening_a_new_database_at_once_all_migrate_it() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..12 {
        let db = dir.path().join(format!("r{round}.db"));
        let children: Vec<_> = (0..6)
            .map(|_| {
                Command::new(toolgate_test_support::bin())
                    .arg("--db")
                    .arg(&db)
                    .args(["tools", "call", "calculator", "--args"])
                    .arg(r#"{"expression": "1+1"}"#)
                    .env_remove("TOOLGATE_DB")
                    .current_dir(dir.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let version: i64 = Connection::open(&db)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION, "round {round}");
    }
}

#[test]
fn foreign_and_newer_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("other.db");
    Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT)")
        .unwrap();
    match Store::open(&foreign) {
        Err(e @ StoreError::Foreign { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains("other.db is not a toolgate database") && m.contains("1 table"),
                "{m}"
            );
        }
        other => panic!("{:?}", other.err()),
    }
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    let m = Store::open(&junk).err().unwrap().to_string();
    assert!(
        m.contains("junk.db") && m.contains("not an SQLite database"),
        "{m}"
    );

    let newer = dir.path().join("newer.db");
    {
        let c = Connection::open(&newer).unwrap();
        c.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let m = Store::open(&newer).err().unwrap().to_string();
    assert!(
        m.contains("newer.db was written by a newer toolgate (schema 99"),
        "{m}"
    );
    let c = Connection::open(&newer).unwrap();
    let v: i64 = c
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let tables: i64 = c
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!((v, tables), (99, 0));
}

#[test]
fn a_locked_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let store = Store::open_with(
        &path,
        StoreOptions {
            busy_timeout: Duration::from_millis(200),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let err = rt()
        .block_on(store.record_calls(vec![record("c", "echo", CallStatus::Succeeded, 1, 1.0)]))
        .unwrap_err();
    let m = err.to_string();
    assert!(
        m.contains("locked.db") && m.contains("locked by another process"),
        "{m}"
    );
    holder.execute_batch("COMMIT").unwrap();
    // Once the lock is gone, writing works again.
    rt().block_on(store.record_calls(vec![record("c", "echo", CallStatus::Succeeded, 2, 1.0)]))
        .unwrap();
    assert_eq!(
        store
            .conversation_summary("c")
            .block()
            .unwrap()
            .calls
            .total_calls,
        1
    );
}

#[test]
fn a_full_database_is_a_clear_error_and_keeps_what_it_had() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.db");
    let store = Store::open_with(
        &path,
        StoreOptions {
            max_bytes: Some(512 * 1024),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let rt = rt();
    let mut written = 0;
    let err = loop {
        let batch: Vec<_> = (0..10)
            .map(|i| {
                let mut r = record("c", "echo", CallStatus::Succeeded, written * 100 + i, 1.0);
                r.set_result(&"z".repeat(2000));
                r
            })
            .collect();
        match rt.block_on(store.record_calls(batch)) {
            Ok(()) => written += 1,
            Err(e) => break e,
        }
        assert!(written < 1000, "the size cap never hit");
    };
    let m = err.to_string();
    assert!(m.contains("full.db") && m.contains("is full"), "{m}");
    assert!(written > 0, "the first batch failed: {m}");
    assert_eq!(
        store
            .conversation_summary("c")
            .block()
            .unwrap()
            .calls
            .total_calls,
        written as u64 * 10
    );
}

#[test]
fn summaries_match_hand_computed_numbers() {
    on_both(|_, store| {
        let mut records = Vec::new();
        // Conversation a: 20 calls with durations 1..=20 ms.
        for i in 1..=20i64 {
            let (tool, status) = match i % 4 {
                0 => ("shell", CallStatus::Denied),
                1 => ("echo", CallStatus::Failed),
                _ => ("echo", CallStatus::Succeeded),
            };
            records.push(record("a", tool, status, 1000 + i, i as f64));
        }
        records.push(record("b", "web_search", CallStatus::Client, 5000, 0.0));
        records.push(record("b", "echo", CallStatus::Timeout, 5001, 30_000.0));
        records.push(record("b", "echo", CallStatus::Cancelled, 5002, 3.0));
        rt().block_on(store.record_calls(records)).unwrap();

        let a = store.conversation_summary("a").block().unwrap();
        assert_eq!(
            a.calls,
            CallCounts {
                total_calls: 20,
                successful_calls: 10,
                failed_calls: 5,
                denied_calls: 5,
                success_rate: 50.0,
                ..CallCounts::default()
            }
        );
        assert_eq!(a.tool_usage.get("echo"), Some(&15));
        assert_eq!(a.tool_usage.get("shell"), Some(&5));
        assert_eq!((a.duration_ms.p50, a.duration_ms.p95), (10.0, 19.0));
        assert_eq!((a.first_call_at, a.last_call_at), (Some(1001), Some(1020)));
        let json = serde_json::to_value(&a).unwrap();
        // The design's contract for a conversation summary.
        for key in [
            "conversation_id",
            "total_calls",
            "successful_calls",
            "failed_calls",
            "denied_calls",
            "success_rate",
            "tool_usage",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert!(json["duration_ms"]["p50"].is_number() && json["duration_ms"]["p95"].is_number());

        let b = store.conversation_summary("b").block().unwrap();
        assert_eq!(
            b.calls,
            CallCounts {
                total_calls: 3,
                timeout_calls: 1,
                cancelled_calls: 1,
                client_calls: 1,
                ..CallCounts::default()
            }
        );

        let none = store.conversation_summary("nobody").block().unwrap();
        assert_eq!(none.calls, CallCounts::default());

        let echo = store.tool_stats(Scope::All, "echo").block().unwrap();
        assert_eq!(
            echo.calls,
            CallCounts {
                total_calls: 17,
                successful_calls: 10,
                failed_calls: 5,
                timeout_calls: 1,
                cancelled_calls: 1,
                success_rate: 58.8,
                ..CallCounts::default()
            }
        );
        let search = store.tool_stats(Scope::All, "web_search").block().unwrap();
        assert_eq!(
            (search.calls.client_calls, search.calls.success_rate),
            (1, 0.0)
        );
        let g = store.global_stats(Scope::All).block().unwrap();
        assert_eq!(
            g.calls,
            CallCounts {
                total_calls: 23,
                successful_calls: 10,
                failed_calls: 5,
                denied_calls: 5,
                timeout_calls: 1,
                cancelled_calls: 1,
                client_calls: 1,
                success_rate: 45.5,
            }
        );
        assert_eq!(g.conversations, 2);
        assert_eq!(
            g.tools.iter().map(|t| t.tool.as_str()).collect::<Vec<_>>(),
            ["echo", "shell", "web_search"]
        );
        assert_eq!(g.tools[0], echo);
    });
}

/// The counters of a summary's JSON, by the names `CallCounts` gives them.
fn counters(summary: &Value) -> serde_json::Map<String, Value> {
    let names = serde_json::to_value(CallCounts::default()).unwrap();
    names
        .as_object()
        .unwrap()
        .keys()
        .map(|k| {
            let v = summary
                .get(k)
                .unwrap_or_else(|| panic!("no {k} in {summary}"));
            (k.clone(), v.clone())
        })
        .collect()
}

#[test]
fn every_summary_has_one_shape_of_counters() {
    on_both(|_, store| {
        let records = vec![
            record("c", "echo", CallStatus::Succeeded, 1, 1.0),
            record("c", "echo", CallStatus::Cancelled, 2, 2.0),
            record("c", "echo", CallStatus::Client, 3, 0.0),
        ];
        rt().block_on(store.record_calls(records)).unwrap();
        let conversation =
            serde_json::to_value(store.conversation_summary("c").block().unwrap()).unwrap();
        let tool =
            serde_json::to_value(store.tool_stats(Scope::All, "echo").block().unwrap()).unwrap();
        let global = serde_json::to_value(store.global_stats(Scope::All).block().unwrap()).unwrap();
        // One conversation, one tool: the three count the same calls the same way.
        assert_eq!(counters(&conversation), counters(&tool));
        assert_eq!(counters(&tool), counters(&global));
        assert_eq!(counters(&global["tools"][0]), counters(&tool));
        let c = counters(&tool);
        assert_eq!(
            (&c["cancelled_calls"], &c["client_calls"]),
            (&json!(1), &json!(1))
        );
        assert_eq!(c["success_rate"], json!(50.0));
        for summary in [&conversation, &tool, &global] {
            assert!(summary["duration_ms"]["p95"].is_number(), "{summary}");
        }
    });
}

/// The property names a schema gives an object: its own, and those of the schemas
/// it includes by reference (`allOf`), looked up in `components`.
fn schema_properties(schema: &Value, components: &Value) -> Vec<String> {
    if let Some(name) = schema["$ref"].as_str() {
        let name = name.trim_start_matches("#/components/schemas/");
        return schema_properties(&components[name], components);
    }
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        names.extend(schema_properties(part, components));
    }
    names.sort();
    names
}

#[test]
fn summary_schemas_match_their_json() {
    use utoipa::{PartialSchema, ToSchema};
    let schema = |s: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>| {
        serde_json::to_value(s).unwrap()
    };
    let mut components = serde_json::Map::new();
    components.insert("CallCounts".into(), schema(CallCounts::schema()));
    components.insert("Durations".into(), schema(Durations::schema()));
    components.insert("ToolStats".into(), schema(ToolStats::schema()));
    let components = Value::Object(components);
    assert_eq!(CallCounts::name(), "CallCounts");

    on_both(|_, store| {
        // A tool that keeps its results: its stats carry every optional part.
        let kept = CallRecord {
            cached: Some(true),
            ..record("c", "echo", CallStatus::Succeeded, 1, 1.0)
        };
        rt().block_on(store.record_calls(vec![kept])).unwrap();
        let keys = |v: Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let cases = [
            (
                schema(ConversationSummary::schema()),
                serde_json::to_value(store.conversation_summary("c").block().unwrap()).unwrap(),
            ),
            (
                schema(ToolStats::schema()),
                serde_json::to_value(store.tool_stats(Scope::All, "echo").block().unwrap())
                    .unwrap(),
            ),
            (
                schema(GlobalStats::schema()),
                serde_json::to_value(store.global_stats(Scope::All).block().unwrap()).unwrap(),
            ),
            (
                schema(Durations::schema()),
                serde_json::to_value(Durations::default()).unwrap(),
            ),
        ];
        for (schema, json) in cases {
            assert_eq!(
                schema_properties(&schema, &components),
                keys(json),
                "{schema}"
            );
        }
    });
}

#[test]
fn queries_filter_and_page() {
    on_both(|_, store| {
        let records: Vec<_> = (0..30i64)
            .map(|i| {
                record(
                    if i < 20 { "a" } else { "b" },
                    if i % 3 == 0 { "shell" } else { "echo" },
                    CallStatus::Succeeded,
                    i * 10,
                    1.0,
                )
            })
            .collect();
        rt().block_on(store.record_calls(records)).unwrap();
        let q = |q: CallQuery| store.calls(&q).block().unwrap();
        let page = q(CallQuery {
            conversation_id: Some("a".into()),
            limit: Some(7),
            offset: 14,
            ..Default::default()
        });
        assert_eq!((page.total, page.calls.len()), (20, 6));
        assert_eq!(page.calls[0].record.started_at, 140);
        let newest = q(CallQuery {
            newest_first: true,
            limit: Some(1),
            ..Default::default()
        });
        assert_eq!(newest.calls[0].record.started_at, 290);
        assert_eq!(
            q(CallQuery {
                tool: Some("shell".into()),
                ..Default::default()
            })
            .total,
            10
        );
        assert_eq!(
            q(CallQuery {
                since: Some(100),
                until: Some(200),
                ..Default::default()
            })
            .total,
            10
        );
        assert_eq!(
            q(CallQuery {
                run_id: Some("run_b".into()),
                ..Default::default()
            })
            .total,
            10
        );
        assert_eq!(
            q(CallQuery {
                status: Some(CallStatus::Denied),
                ..Default::default()
            })
            .total,
            0
        );
    });
}

/// When run as the recorder child: record batches of 10 until killed, printing the
/// number of committed batches after each commit.
#[test]
fn recorder_child() {
    let Ok(path) = std::env::var("TOOLGATE_TEST_RECORDER_DB") else {
        return;
    };
    let store = Store::open(&path).unwrap();
    let rt = rt();
    for batch in 0..i64::MAX {
        let records: Vec<_> = (0..10)
            .map(|i| record("kill", "echo", CallStatus::Succeeded, batch * 10 + i, 1.0))
            .collect();
        rt.block_on(store.record_calls(records)).unwrap();
        println!("{}", batch + 1);
    }
}

#[test]
fn killed_while_recording_leaves_a_consistent_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kill.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::recorder_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("TOOLGATE_TEST_RECORDER_DB", &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acknowledged = 0i64;
    while acknowledged < 200 {
        let line = lines.next().unwrap().unwrap();
        if let Ok(n) = line.trim().parse::<i64>() {
            acknowledged = n;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let conn = Connection::open(&path).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let store = Store::open(&path).unwrap();
    let total = store
        .conversation_summary("kill")
        .block()
        .unwrap()
        .calls
        .total_calls as i64;
    assert_eq!(total % 10, 0, "a batch was half written");
    assert!(
        total >= acknowledged * 10,
        "acknowledged records were lost: {total} < {}",
        acknowledged * 10
    );
    // The store goes on working.
    rt().block_on(store.record_calls(vec![record("kill", "echo", CallStatus::Succeeded, -1, 1.0)]))
        .unwrap();
}

/// Waits (at most 5 s) for the next change of `run` on `changes`.
async fn next_change(
    changes: &mut tokio::sync::broadcast::Receiver<toolgate::store::Change>,
    run: &str,
) -> toolgate::store::Change {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let c = changes.recv().await.unwrap();
            if c.run_id == run {
                return c;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no change of {run} within 5 s"))
}

#[test]
fn a_change_made_through_one_store_is_seen_by_another_on_the_same_database() {
    use toolgate::protocol::RunStatus;
    use toolgate::store::ChangeKind;
    for db in crate::databases::TestDb::both() {
        // Two stores on one database: as two processes would have.
        let (a, b) = (db.open(), db.open());
        rt().block_on(async {
            let mut seen = b.watch();
            let owner = toolgate::store::lease_owner_name();
            a.create_run(
                "run_feed",
                "conv_feed",
                "a",
                "{}".into(),
                &owner,
                10_000,
                vec![],
                0,
            )
            .await
            .unwrap();
            let c = next_change(&mut seen, "run_feed").await;
            assert_eq!(
                (c.kind, c.status),
                (ChangeKind::Created, RunStatus::InProgress)
            );
            assert_eq!(c.tenant, "default");
            assert_eq!(c.origin.as_deref(), Some(owner.as_str()));
            // Made by a lease this process took: told apart from another process's.
            assert!(c.made_here());
            // A lease renewal is no change; a cancel is.
            a.renew_lease("run_feed", &owner, 10_000).await.unwrap();
            a.cancel_run("run_feed").await.unwrap();
            let c = next_change(&mut seen, "run_feed").await;
            assert_eq!(
                (c.kind, c.status),
                (ChangeKind::Status, RunStatus::Cancelled),
                "{c:?}"
            );
        });
    }
}
