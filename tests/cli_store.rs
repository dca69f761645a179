//! The record through the binary: `tools call` records under a conversation, `calls`
//! and `stats` read it back (tables and the JSON contract) on both backends, `--db` and
//! `TOOLGATE_DB` choose the file, and bad files give one clear line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use toolgate_test_support::toolgate;

use serde_json::Value;

use crate::databases::TestDb;

fn cli(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = toolgate(dir);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn calls_are_recorded_and_summarised() {
    for db in TestDb::both() {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            recorded_and_summarised(&db)
        }));
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

/// [`calls_are_recorded_and_summarised`] on `db`.
fn recorded_and_summarised(db: &TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let on = [("TOOLGATE_DB", db.arg())];
    let cli = |args: &[&str], d: &Path, _: &[(&str, &str)]| cli(args, d, &on);
    for (tool, args) in [
        ("calculator", r#"{"expression": "2*21"}"#),
        ("calculator", r#"{"expression": "1/0"}"#),
        ("echo", r#"{"text": "hello"}"#),
        ("echo", r#"{"text": 5, "extra": 1}"#),
    ] {
        cli(
            &[
                "tools",
                "call",
                tool,
                "--args",
                args,
                "--conversation",
                "conv-1",
            ],
            d,
            &[],
        );
    }
    let out = cli(&["stats", "--conversation", "conv-1", "--json"], d, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = json(&out);
    assert_eq!(s["conversation_id"], "conv-1");
    assert_eq!(s["total_calls"], 4);
    assert_eq!(s["successful_calls"], 2);
    assert_eq!(s["failed_calls"], 2);
    assert_eq!(s["denied_calls"], 0);
    assert_eq!(s["success_rate"], 50.0);
    assert_eq!(
        s["tool_usage"],
        serde_json::json!({"calculator": 2, "echo": 2})
    );
    assert!(s["duration_ms"]["p50"].is_number() && s["duration_ms"]["p95"].is_number());

    let text =
        String::from_utf8(cli(&["stats", "--conversation", "conv-1"], d, &[]).stdout).unwrap();
    assert!(text.contains("4 (2 succeeded, 2 failed"), "{text}");

    let page = json(&cli(
        &[
            "calls",
            "--conversation",
            "conv-1",
            "--json",
            "--limit",
            "3",
        ],
        d,
        &[],
    ));
    assert_eq!(page["total"], 4);
    assert_eq!(page["calls"].as_array().unwrap().len(), 3);
    assert_eq!(page["calls"][1]["error_kind"], "execution_error");
    assert_eq!(page["calls"][0]["caller"], "user");
    let failed = json(&cli(&["calls", "--status", "failed", "--json"], d, &[]));
    assert_eq!(failed["total"], 2);
    let table = String::from_utf8(cli(&["calls"], d, &[]).stdout).unwrap();
    assert!(
        table.starts_with("ID")
            && table.contains("division by zero")
            && table.contains("4 of 4 call(s)"),
        "{table}"
    );

    let global = json(&cli(&["stats", "--json"], d, &[]));
    assert_eq!(global["total_calls"], 4);
    assert_eq!(global["conversations"], 1);
    let tool = json(&cli(&["stats", "--tool", "echo", "--json"], d, &[]));
    assert_eq!(tool["tool"], "echo");
    assert_eq!(tool["total_calls"], 2);
    // One shape of counters for a conversation, a tool and everything.
    let counters = [
        "total_calls",
        "successful_calls",
        "failed_calls",
        "denied_calls",
        "timeout_calls",
        "cancelled_calls",
        "client_calls",
        "success_rate",
    ];
    for key in counters {
        assert_eq!(s[key], global[key], "{key}");
        assert!(tool[key].is_number(), "{key}: {tool}");
        assert!(global["tools"][0][key].is_number(), "{key}: {global}");
    }
    assert_eq!(global["tools"][1], tool);
    let text = String::from_utf8(cli(&["stats"], d, &[]).stdout).unwrap();
    assert!(
        text.contains("all 1 conversation(s)")
            && text.contains(
                "4 (2 succeeded, 2 failed, 0 denied, 0 timed out, 0 cancelled, 0 client)"
            )
            && text.contains("CANCELLED  CLIENT"),
        "{text}"
    );
}

#[test]
fn a_new_conversation_id_when_none_is_given() {
    for db in TestDb::both() {
        let dir = tempfile::tempdir().unwrap();
        let on = [("TOOLGATE_DB", db.arg())];
        let out = cli(
            &[
                "tools",
                "call",
                "echo",
                "--args",
                r#"{"text": "x"}"#,
                "--json",
            ],
            dir.path(),
            &on,
        );
        let v = json(&out);
        let conv = v["conversation_id"].as_str().unwrap().to_string();
        assert!(conv.starts_with("conv_"), "{}: {conv}", db.name());
        let s = json(&cli(
            &["stats", "--conversation", &conv, "--json"],
            dir.path(),
            &on,
        ));
        assert_eq!(s["total_calls"], 1, "{}", db.name());
    }
}

#[test]
fn db_flag_and_environment_choose_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cli(
        &[
            "tools",
            "call",
            "echo",
            "--args",
            r#"{"text": "a"}"#,
            "--conversation",
            "x",
            "--db",
            "one.db",
        ],
        d,
        &[],
    );
    cli(
        &[
            "tools",
            "call",
            "echo",
            "--args",
            r#"{"text": "b"}"#,
            "--conversation",
            "x",
        ],
        d,
        &[("TOOLGATE_DB", "two.db")],
    );
    assert!(
        d.join("one.db").exists() && d.join("two.db").exists() && !d.join("toolgate.db").exists()
    );
    let s = json(&cli(
        &["stats", "--conversation", "x", "--json"],
        d,
        &[("TOOLGATE_DB", "one.db")],
    ));
    assert_eq!(s["total_calls"], 1);
}

#[test]
fn bad_database_files_give_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = cli(&["stats"], d, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("toolgate.db does not exist"),
        "{}",
        stderr(&out)
    );

    rusqlite::Connection::open(d.join("other.db"))
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let out = cli(
        &[
            "tools",
            "call",
            "echo",
            "--args",
            r#"{"text": "a"}"#,
            "--db",
            "other.db",
        ],
        d,
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1);
    assert!(
        stderr(&out).contains("other.db is not a toolgate database"),
        "{}",
        stderr(&out)
    );

    let out = cli(&["calls", "--status", "weird"], d, &[]);
    assert_eq!(out.status.code(), Some(2));
    let out = cli(&["calls", "--since", "yesterday-ish"], d, &[]);
    assert_eq!(out.status.code(), Some(2));
}

/// A database the user may read but not write. As root, file modes do not stop
/// writes, so the command runs as `nobody` (with util-linux `setpriv`).
#[test]
fn a_read_only_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cli(
        &[
            "tools",
            "call",
            "echo",
            "--args",
            r#"{"text": "a"}"#,
            "--conversation",
            "ro",
        ],
        d,
        &[],
    );
    let db = d.join("toolgate.db");
    let bin = toolgate_test_support::bin();
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    let run = |args: &[&str]| -> Output {
        if is_root {
            // Let nobody reach the folder and read (not write) the files.
            Command::new("chmod")
                .args(["755", d.to_str().unwrap()])
                .status()
                .unwrap();
            for f in ["toolgate.db", "toolgate.db-wal", "toolgate.db-shm"] {
                let _ = Command::new("chmod")
                    .args(["644", d.join(f).to_str().unwrap()])
                    .status();
            }
            let mut all = vec!["--reuid=nobody", "--regid=nogroup", "--clear-groups", bin];
            all.extend_from_slice(args);
            Command::new("setpriv")
                .args(&all)
                .current_dir(d)
                .env_remove("TOOLGATE_DB")
                .output()
                .unwrap()
        } else {
            Command::new("chmod")
                .args(["444", db.to_str().unwrap()])
                .status()
                .unwrap();
            Command::new(bin)
                .args(args)
                .current_dir(d)
                .env_remove("TOOLGATE_DB")
                .output()
                .unwrap()
        }
    };
    let out = run(&[
        "tools",
        "call",
        "echo",
        "--args",
        r#"{"text": "b"}"#,
        "--conversation",
        "ro",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("toolgate.db") && err.contains("read-only"),
        "{err}"
    );
    // Reading still works, and nothing was lost.
    let s = run(&["stats", "--conversation", "ro", "--json"]);
    assert_eq!(json(&s)["total_calls"], 1, "{}", stderr(&s));
}
