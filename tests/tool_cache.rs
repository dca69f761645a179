//! Result caching for read-only tools (`cache: {ttl}`), against a real peer (the FastAPI
//! app of tests/py/flaky_api.py, which counts the requests each key had), on both
//! backends: a second identical call is served from the store without reaching the
//! peer and its record says `cached`; other arguments, an expired entry, another tenant
//! and a secret argument miss; `stats` shows the hit rate; a tool that is not read-only
//! cannot declare a cache.

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::engine::{CallOutcome, Cancel, Engine, EngineConfig, StoreCache, call, prepare};
use toolgate::protocol::CallerKind;
use toolgate::tool::{RunContext, ToolLibrary};
use toolgate_test_support::toolgate;

use crate::databases::TestDb;
use crate::tool_retries::{hits, start_api};

/// A tools folder with `item` (cached for `ttl`), `item_secret` (a secret argument) and
/// `item_write` as written by `extra`.
fn tools(dir: &Path, port: u16, ttl: &str) {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let entry = format!(
        "entry:\n  type: http\n  url: http://127.0.0.1:{port}/items/{{key}}\n  allow_hosts: [\"127.0.0.1:{port}\"]\n"
    );
    std::fs::write(
        tools.join("item.yaml"),
        format!("name: item\ndescription: Read an item.\nread_only: true\ncache: {{ttl: {ttl}}}\nparameters:\n  - {{name: key, type: string, required: true}}\n{entry}"),
    )
    .unwrap();
    std::fs::write(
        tools.join("item_secret.yaml"),
        format!("name: item_secret\nread_only: true\ncache: {{ttl: 10m}}\nparameters:\n  - {{name: key, type: string, required: true}}\n  - {{name: token, type: string, secret: true}}\n{entry}"),
    )
    .unwrap();
}

fn cli(dir: &Path, db: &TestDb, args: &[&str]) -> Output {
    toolgate(dir)
        .args(args)
        .env("TOOLGATE_DB", db.arg())
        .output()
        .unwrap()
}

/// `tools call NAME --args ARGS --json`: the call's JSON (its `cached` flag).
fn call_cli(dir: &Path, db: &TestDb, name: &str, args: Value) -> Value {
    let out = cli(
        dir,
        db,
        &["tools", "call", name, "--args", &args.to_string(), "--json"],
    );
    assert!(
        out.status.success(),
        "{}: {}",
        db.name(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_second_identical_call_is_served_from_the_cache_until_it_expires() {
    let api = start_api();
    for db in TestDb::both() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        tools(d, api.port, "2s");
        let (k1, k2) = (format!("{}-one", db.name()), format!("{}-two", db.name()));

        let first = call_cli(d, &db, "item", json!({"key": k1}));
        assert_eq!(first["cached"], false, "{first}");
        let second = call_cli(d, &db, "item", json!({"key": k1}));
        assert_eq!(second["cached"], true, "{}: {second}", db.name());
        assert_eq!(
            second["output"], first["output"],
            "the model gets the same result"
        );
        assert_eq!(
            hits(&api, &k1),
            1,
            "{}: the second call never reached the peer",
            db.name()
        );

        assert_eq!(
            call_cli(d, &db, "item", json!({"key": k2}))["cached"],
            false
        );
        assert_eq!(hits(&api, &k2), 1);

        std::thread::sleep(std::time::Duration::from_millis(2300));
        assert_eq!(
            call_cli(d, &db, "item", json!({"key": k1}))["cached"],
            false
        );
        assert_eq!(
            hits(&api, &k1),
            2,
            "{}: an expired entry runs the tool again",
            db.name()
        );

        // A secret argument is never part of a kept key: each call runs.
        let secret = format!("{}-secret", db.name());
        for _ in 0..2 {
            let out = call_cli(
                d,
                &db,
                "item_secret",
                json!({"key": secret, "token": "s3cr3t"}),
            );
            assert!(out.get("cached").is_none(), "{out}");
        }
        assert_eq!(hits(&api, &secret), 2);

        // The hit rate, as `stats` reads it from the records.
        let out = cli(d, &db, &["stats", "--tool", "item", "--json"]);
        let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            stats["cache"],
            json!({"hits": 1, "misses": 3, "hit_rate": 25.0}),
            "{}",
            db.name()
        );
        let out = cli(d, &db, &["stats"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            text.contains("CACHE HITS") && text.contains("1 (25.0%)"),
            "{text}"
        );
    }
}

/// Runs `item` for `tenant` through an engine whose cache is the store.
async fn run_for(
    store: &toolgate::store::Store,
    dir: &Path,
    tenant: &str,
    key: &str,
) -> CallOutcome {
    let lib = ToolLibrary::load(&dir.join("tools"), &toolgate::tool::sources::standard()).unwrap();
    let engine = Engine::new(
        EngineConfig {
            workspace: dir.to_path_buf(),
            context: Arc::new(RunContext {
                tenant: Some(tenant.to_string()),
                ..Default::default()
            }),
            cache: Some(Arc::new(StoreCache(store.clone()))),
            ..EngineConfig::default()
        },
        None,
    );
    let tool = lib.get("item").cloned().unwrap();
    let args = json!({"key": key}).as_object().unwrap().clone();
    let prepared = prepare(
        call("c1", "item", args),
        Ok(tool),
        "conv",
        CallerKind::Agent,
    );
    let outcomes = engine.execute_batch(vec![prepared], &Cancel::new()).await;
    toolgate::run::commit_outcomes(store, outcomes)
        .await
        .unwrap()
        .remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenants_kept_results_are_not_anothers() {
    let api = start_api();
    for db in TestDb::both() {
        let dir = tempfile::tempdir().unwrap();
        tools(dir.path(), api.port, "10m");
        let store = db.open();
        let key = format!("{}-walled", db.name());
        assert_eq!(
            run_for(&store, dir.path(), "acme", &key)
                .await
                .record
                .cached,
            Some(false)
        );
        assert_eq!(
            run_for(&store, dir.path(), "acme", &key)
                .await
                .record
                .cached,
            Some(true)
        );
        assert_eq!(hits(&api, &key), 1);
        let other = run_for(&store, dir.path(), "globex", &key).await;
        assert_eq!(
            other.record.cached,
            Some(false),
            "{}: another tenant misses",
            db.name()
        );
        assert_eq!(hits(&api, &key), 2);
    }
}

/// A tool declared safe to cache with secret arguments may echo one: the kept result
/// holds `[secret]` in its place, never the value (nothing secret at rest).
#[test]
fn a_kept_result_never_holds_a_secret_in_clear() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("echo_token.yaml"),
        "name: echo_token\nread_only: true\ncache: {ttl: 10m, secret_arguments: true}\nparameters:\n  - {name: token, type: string, secret: true, required: true}\nentry: {type: command, command: sh, args: [-c, cat], stream: false}\n",
    )
    .unwrap();
    let db = TestDb::sqlite();
    let args = json!({"token": "s3cr3t-value"});
    assert_eq!(
        call_cli(dir.path(), &db, "echo_token", args.clone())["cached"],
        false
    );
    let again = call_cli(dir.path(), &db, "echo_token", args);
    assert_eq!(again["cached"], true, "{again}");
    assert!(!again.to_string().contains("s3cr3t-value"), "{again}");
    let conn = rusqlite::Connection::open(db.arg()).unwrap();
    let kept: Vec<String> = conn
        .prepare("SELECT output FROM tool_cache")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(kept.len(), 1);
    assert!(
        !kept[0].contains("s3cr3t-value") && kept[0].contains("[secret]"),
        "{kept:?}"
    );
}

#[test]
fn only_a_read_only_tool_may_keep_its_results() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("send.yaml"),
        "name: send\ndescription: Sends.\ncache: {ttl: 10m}\nentry: {type: http, url: \"https://x.example/send\", method: POST}\n",
    )
    .unwrap();
    std::fs::write(
        tools.join("peek.yaml"),
        "name: peek\nread_only: true\ncache: {ttl: 0}\n",
    )
    .unwrap();
    let db = TestDb::sqlite();
    let out = cli(dir.path(), &db, &["tools", "check"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("tools/send.yaml:3: cache: only a read-only tool's results are kept"),
        "{text}"
    );
    assert!(
        text.contains("tools/peek.yaml:3: cache: ttl must be more than 0"),
        "{text}"
    );
}
