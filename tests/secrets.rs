//! Secrets as an attacker would look for them: a full run with secret values in seven
//! placements (AUTO, nested in an object, CONFIRM, an invalid call, a client tool,
//! arguments edited on approval, xml mode), then every byte of the database files, the
//! event stream and every command's output searched for them. The tools still get
//! the real values; a wrong or missing key is a clear error that changes nothing. The
//! secrets table and `toolgate secrets` on both backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use toolgate_test_support::toolgate;

use serde_json::Value;

/// Echoes its arguments (so the result holds the secret too) and keeps them in seen.log.
fn vault(name: &str, permission: &str) -> String {
    format!(
        r#"name: {name}
description: Opens the vault.
permission: {permission}
parameters:
  type: object
  properties:
    token: {{type: string, secret: true}}
    auth:
      type: object
      properties:
        user: {{type: string}}
        password: {{type: string, secret: true}}
    note: {{type: string}}
  required: [token]
  additionalProperties: false
entry:
  type: command
  command: sh
  args: ["-c", "tee -a seen.log; echo"]
"#
    )
}

const CLIENT: &str = "name: vault_client\ndescription: The client opens it.\nparameters:\n  type: object\n  properties:\n    pin: {type: string, secret: true}\n  required: [pin]\nentry: {type: client}\n";

const SECRETS: [&str; 7] = [
    "S1-auto-token-7f3a",
    "S2-nested-pw-91bc",
    "S3-invalid-call-4d2e",
    "S4-confirm-token-b8c1",
    "S5-client-pin-0e77",
    "S6-edited-token-5a9d",
    "S7-xml-token-c3f0",
];

const REPLIES: &str = r#"replies:
  - content: Opening.
    tool_calls:
      - {id: c_auto, name: vault_auto, arguments: {token: S1-auto-token-7f3a, auth: {user: ann, password: S2-nested-pw-91bc}}}
      - {id: c_bad, name: vault_auto, arguments: {token: S3-invalid-call-4d2e, colour: red}}
      - {id: c_confirm, name: vault_confirm, arguments: {token: S4-confirm-token-b8c1, note: keep}}
      - {id: c_client, name: vault_client, arguments: {pin: S5-client-pin-0e77}}
  - content: Done with the vault.
"#;

const XML_REPLIES: &str = r#"replies:
  - content: "<tool_call><name>vault_auto</name><params><token><![CDATA[S7-xml-token-c3f0]]></token></params></tool_call>"
  - content: Opened in xml.
"#;

fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir(p.join("tools")).unwrap();
    std::fs::write(p.join("tools/vault_auto.yaml"), vault("vault_auto", "auto")).unwrap();
    std::fs::write(
        p.join("tools/vault_confirm.yaml"),
        vault("vault_confirm", "confirm"),
    )
    .unwrap();
    std::fs::write(p.join("tools/vault_client.yaml"), CLIENT).unwrap();
    std::fs::write(
        p.join("agent.yaml"),
        "name: keeper\nmodel: scripted:replies.yaml\ntools: [vault_auto, vault_confirm, vault_client]\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(
        p.join("xml_agent.yaml"),
        "name: xml_keeper\nmode: xml\nmodel: scripted:xml_replies.yaml\ntools: [vault_auto]\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(p.join("replies.yaml"), REPLIES).unwrap();
    std::fs::write(p.join("xml_replies.yaml"), XML_REPLIES).unwrap();
    dir
}

fn cli(args: &[&str], dir: &Path, key: Option<&str>) -> Output {
    let mut cmd = toolgate(dir);
    cmd.args(args);
    match key {
        Some(k) => cmd.env("TOOLGATE_SECRET_KEY", k),
        None => cmd.env_remove("TOOLGATE_SECRET_KEY"),
    };
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_clean(what: &str, haystack: &[u8]) {
    for s in SECRETS {
        assert!(
            !haystack.windows(s.len()).any(|w| w == s.as_bytes()),
            "{s} found in clear in {what}"
        );
    }
}

fn last_json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

#[test]
fn no_secret_is_ever_written_or_shown_in_clear() {
    let site = site();
    let dir = site.path();
    let run = cli(
        &["run", "--agent", "agent.yaml", "--json", "open it"],
        dir,
        None,
    );
    assert_eq!(run.status.code(), Some(3), "{}", text(&run));
    assert_clean("the run --json event stream", &run.stdout);
    assert_clean("run's stderr", &run.stderr);
    let paused = last_json(&run);
    let id = paused["id"].as_str().unwrap().to_string();
    let items = paused["required_action"]["items"].as_array().unwrap();
    assert_eq!(items[0]["arguments"]["token"], "[secret]");
    assert_eq!(items[1]["arguments"]["pin"], "[secret]");
    // The key was made beside the database, readable by its owner only.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("toolgate.db.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // Edited on approval: a new secret for the token; the note stays as it was.
    let edited = cli(
        &[
            "approve",
            &id,
            "--call",
            "c_confirm",
            "--args",
            r#"{"token": "S6-edited-token-5a9d", "note": "keep"}"#,
            "--json",
        ],
        dir,
        None,
    );
    assert_eq!(edited.status.code(), Some(3), "{}", text(&edited));
    assert_clean("approve's output", &text(&edited).into_bytes());
    let done = cli(
        &[
            "submit", &id, "--call", "c_client", "--output", "opened", "--json",
        ],
        dir,
        None,
    );
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    assert_clean("submit's output", &text(&done).into_bytes());
    assert_eq!(last_json(&done)["status"], "completed");

    // xml mode: the secret sits in the model's own text.
    let xml = cli(
        &[
            "run",
            "--agent",
            "xml_agent.yaml",
            "--json",
            "open it in xml",
        ],
        dir,
        None,
    );
    assert_eq!(xml.status.code(), Some(0), "{}", text(&xml));
    assert_clean("the xml run's events", &xml.stdout);

    // Everything a person or script reads.
    for args in [
        vec!["show", id.as_str(), "--json"],
        vec!["show", id.as_str()],
        vec!["runs", "--json"],
        vec!["calls", "--json"],
        vec!["calls"],
        vec!["stats", "--json"],
    ] {
        let out = cli(&args, dir, None);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        assert_clean(&format!("{args:?}"), &text(&out).into_bytes());
    }
    // The tools got the real values (the invalid call never ran).
    let seen = std::fs::read_to_string(dir.join("seen.log")).unwrap();
    for s in [
        "S1-auto-token-7f3a",
        "S2-nested-pw-91bc",
        "S6-edited-token-5a9d",
        "S7-xml-token-c3f0",
    ] {
        assert!(seen.contains(s), "the tool did not get {s}: {seen}");
    }
    assert!(
        !seen.contains("S4-confirm-token-b8c1"),
        "the edit was not applied"
    );
    std::fs::remove_file(dir.join("seen.log")).unwrap();

    // The raw files, as an attacker with the disk would read them.
    let mut found_db = false;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("toolgate.db") && !name.ends_with(".key") {
            found_db = true;
            assert_clean(&name, &std::fs::read(&path).unwrap());
        }
    }
    assert!(found_db);
    // And after a checkpoint moved the WAL into the main file.
    let conn = rusqlite::Connection::open(dir.join("toolgate.db")).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    assert_clean(
        "toolgate.db",
        &std::fs::read(dir.join("toolgate.db")).unwrap(),
    );
}

#[test]
fn a_wrong_or_missing_key_is_a_clear_error_and_changes_nothing() {
    let site = site();
    let dir = site.path();
    let run = cli(
        &["run", "--agent", "agent.yaml", "--json", "open it"],
        dir,
        None,
    );
    assert_eq!(run.status.code(), Some(3), "{}", text(&run));
    let id = last_json(&run)["id"].as_str().unwrap().to_string();
    let ok = cli(
        &["approve", &id, "--call", "c_confirm", "--no-resume"],
        dir,
        None,
    );
    assert_eq!(ok.status.code(), Some(3), "{}", text(&ok));
    let ok = cli(
        &[
            "submit",
            &id,
            "--call",
            "c_client",
            "--output",
            "x",
            "--no-resume",
        ],
        dir,
        None,
    );
    assert_eq!(ok.status.code(), Some(3), "{}", text(&ok));

    // Another key: the sealed values cannot be opened; one line says so.
    let wrong = cli(&["resume", &id], dir, Some(&"ab".repeat(32)));
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(err.contains("cannot be opened with this key"), "{err}");
    // No key at all.
    std::fs::rename(dir.join("toolgate.db.key"), dir.join("kept.key")).unwrap();
    let missing = cli(&["resume", &id], dir, None);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("toolgate.db.key does not exist"),
        "{}",
        text(&missing)
    );
    // A key given in a malformed form.
    let bad = cli(&["resume", &id], dir, Some("not-a-key"));
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("TOOLGATE_SECRET_KEY"));
    // The right key back: the run goes on as if nothing happened.
    std::fs::rename(dir.join("kept.key"), dir.join("toolgate.db.key")).unwrap();
    let resumed = cli(&["resume", &id, "--json"], dir, None);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert_eq!(last_json(&resumed)["status"], "completed");
    let seen = std::fs::read_to_string(dir.join("seen.log")).unwrap();
    assert!(seen.contains("S4-confirm-token-b8c1"), "{seen}");
}

/// `toolgate tools call` of a tool that echoes its secret arguments: neither its final
/// output (plain or `--json`) nor an error shows a secret value in clear.
#[test]
fn tools_call_shows_no_echoed_secret() {
    let site = site();
    let dir = site.path();
    let args = r#"{"token": "S1-auto-token-7f3a", "auth": {"user": "ann", "password": "S2-nested-pw-91bc"}}"#;
    for json in [false, true] {
        let mut argv = vec!["tools", "call", "vault_auto", "--args", args];
        if json {
            argv.push("--json");
        }
        let out = cli(&argv, dir, None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_clean("tools call's stdout", &out.stdout);
        assert_clean("tools call's stderr", &out.stderr);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("[secret]"),
            "the echo is there, masked: {}",
            text(&out)
        );
    }
    // Refused arguments: the error names no secret either.
    let bad = r#"{"token": "S3-invalid-call-4d2e", "colour": "red"}"#;
    for json in [false, true] {
        let mut argv = vec!["tools", "call", "vault_auto", "--args", bad];
        if json {
            argv.push("--json");
        }
        let out = cli(&argv, dir, None);
        assert_ne!(out.status.code(), Some(0), "{}", text(&out));
        assert_clean("a refused call's output", &out.stdout);
        assert_clean("a refused call's error", &out.stderr);
    }
}

/// A secret that is a number, a boolean-free float, or integers inside an array: the
/// stored conversation and state hold none of them in clear (they once did, as JSON
/// numbers), and the tool still gets them as numbers.
#[test]
fn secret_numbers_are_sealed_like_strings() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir(p.join("tools")).unwrap();
    std::fs::write(
        p.join("tools/pay.yaml"),
        r#"name: pay
description: Pays with a PIN.
permission: confirm
parameters:
  type: object
  properties:
    pin: {type: integer, secret: true}
    amount: {type: number, secret: true}
    codes: {type: array, items: {type: integer, secret: true}}
    to: {type: string}
  required: [pin, amount]
entry:
  type: command
  command: sh
  args: ["-c", "tee -a seen.log; echo paid"]
"#,
    )
    .unwrap();
    std::fs::write(
        p.join("agent.yaml"),
        "name: payer\nmodel: scripted:replies.yaml\ntools: [pay]\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(
        p.join("replies.yaml"),
        "replies:\n  - content: Paying.\n    tool_calls:\n      - {id: c_pay, name: pay, arguments: {pin: 739184, amount: 88123.75, codes: [551907, 662018], to: bob}}\n  - content: Paid.\n",
    )
    .unwrap();
    let numbers = ["739184", "88123.75", "551907", "662018"];
    let clean = |what: &str, bytes: &[u8]| {
        for n in numbers {
            assert!(
                !bytes.windows(n.len()).any(|w| w == n.as_bytes()),
                "{n} found in clear in {what}"
            );
        }
    };
    let run = cli(
        &["run", "--agent", "agent.yaml", "--json", "pay bob"],
        p,
        None,
    );
    assert_eq!(run.status.code(), Some(3), "{}", text(&run));
    clean("the run's events", &run.stdout);
    let id = last_json(&run)["id"].as_str().unwrap().to_string();
    for entry in std::fs::read_dir(p).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("toolgate.db") && !name.ends_with(".key") {
            clean(&name, &std::fs::read(&path).unwrap());
        }
    }
    let done = cli(&["approve", &id, "--call", "c_pay", "--json"], p, None);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done));
    clean("approve's output", &text(&done).into_bytes());
    let seen: Value =
        serde_json::from_str(std::fs::read_to_string(p.join("seen.log")).unwrap().trim()).unwrap();
    assert_eq!(seen["pin"], 739184, "the tool gets the number itself");
    assert_eq!(seen["amount"], 88123.75);
    assert_eq!(seen["codes"], serde_json::json!([551907, 662018]));
    std::fs::remove_file(p.join("seen.log")).unwrap();
    let conn = rusqlite::Connection::open(p.join("toolgate.db")).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    clean(
        "toolgate.db",
        &std::fs::read(p.join("toolgate.db")).unwrap(),
    );
}

/// The secrets table, on both backends: set and replaced (its created time kept), a
/// tenant's own preferred over the shared one, listed by name in byte order, removed.
#[test]
fn secrets_are_scoped_listed_in_order_and_removed_on_both_backends() {
    use crate::databases::TestDb;
    use toolgate::store::SecretScope::{self, Shared, Tenant};
    for db in TestDb::both() {
        let name = db.name();
        let store = db.open();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for (tenant, secret, sealed) in [
            (Shared, "b_token", "[[tgsecret:v1:shared-b]]"),
            (Shared, "a_token", "[[tgsecret:v1:shared-a]]"),
            (Shared, "Z_token", "[[tgsecret:v1:shared-Z]]"),
            (Tenant("acme"), "a_token", "[[tgsecret:v1:acme-a]]"),
        ] {
            rt.block_on(store.set_secret(tenant, secret, sealed.into()))
                .unwrap();
        }
        let names = |scope: SecretScope| -> Vec<String> {
            rt.block_on(store.secrets(scope))
                .unwrap()
                .into_iter()
                .map(|s| s.name)
                .collect()
        };
        // Byte order, as SQLite sorts (capitals first), whatever the database's collation.
        assert_eq!(names(Shared), ["Z_token", "a_token", "b_token"], "{name}");
        assert_eq!(names(Tenant("acme")), ["a_token"], "{name}");
        let get = |tenant: Option<&str>, secret: &str| {
            rt.block_on(store.secret(SecretScope::of(tenant), secret))
                .unwrap()
        };
        assert_eq!(
            get(Some("acme"), "a_token").as_deref(),
            Some("[[tgsecret:v1:acme-a]]"),
            "{name}: the tenant's own first"
        );
        assert_eq!(
            get(Some("acme"), "b_token").as_deref(),
            Some("[[tgsecret:v1:shared-b]]"),
            "{name}: else the shared one"
        );
        assert_eq!(
            get(None, "a_token").as_deref(),
            Some("[[tgsecret:v1:shared-a]]"),
            "{name}"
        );
        assert_eq!(get(Some("other"), "nope"), None, "{name}");
        // Replaced: the value and its update time change, not its creation.
        let before = rt.block_on(store.secrets(Shared)).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        rt.block_on(store.set_secret(Shared, "a_token", "[[tgsecret:v1:new]]".into()))
            .unwrap();
        let after = rt.block_on(store.secrets(Shared)).unwrap();
        assert_eq!(after[1].created_at, before[1].created_at, "{name}");
        assert!(after[1].updated_at > before[1].updated_at, "{name}");
        assert_eq!(before[0].created_at, before[0].updated_at, "{name}");
        assert_eq!(
            get(None, "a_token").as_deref(),
            Some("[[tgsecret:v1:new]]"),
            "{name}"
        );
        // Removed from one scope only.
        assert!(
            rt.block_on(store.remove_secret(Tenant("acme"), "a_token"))
                .unwrap(),
            "{name}"
        );
        assert!(
            !rt.block_on(store.remove_secret(Tenant("acme"), "a_token"))
                .unwrap(),
            "{name}"
        );
        assert_eq!(
            get(Some("acme"), "a_token").as_deref(),
            Some("[[tgsecret:v1:new]]"),
            "{name}"
        );
        assert!(names(Tenant("acme")).is_empty(), "{name}");
    }
}

/// `toolgate --db DB secrets set/list/rm`, on both backends; with neither key variable
/// set, a PostgreSQL database's key is made (0600) in the per-user key folder, named
/// from the URL's host, port and database.
#[test]
fn secrets_are_set_listed_and_removed_from_the_command_line_on_both_backends() {
    use crate::databases::TestDb;
    for db in TestDb::both() {
        let name = db.name();
        drop(db.open());
        let dir = tempfile::tempdir().unwrap();
        let key_dir = dir.path().join("keys");
        let cli = |args: &[&str], stdin: Option<&str>| {
            let mut cmd = Command::new(toolgate_test_support::bin());
            cmd.arg("--db")
                .arg(db.arg())
                .args(args)
                .current_dir(dir.path())
                .env_remove("TOOLGATE_DB")
                .env_remove("TOOLGATE_SECRET_KEY")
                .env_remove("TOOLGATE_SECRET_KEY_FILE")
                .env("TOOLGATE_KEY_DIR", &key_dir)
                .env("FROM_ENV_VALUE", "S-from-env-3c1d")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = cmd.spawn().unwrap();
            {
                use std::io::Write;
                let mut input = child.stdin.take().unwrap();
                if let Some(text) = stdin {
                    input.write_all(text.as_bytes()).unwrap();
                }
            }
            child.wait_with_output().unwrap()
        };
        let set = cli(&["secrets", "set", "GH_TOKEN"], Some("S-stdin-9f2e\n"));
        assert_eq!(set.status.code(), Some(0), "{name}: {}", text(&set));
        let set = cli(
            &["secrets", "set", "api.key", "--from-env", "FROM_ENV_VALUE"],
            None,
        );
        assert_eq!(set.status.code(), Some(0), "{name}: {}", text(&set));
        let list = cli(&["secrets", "list", "--json"], None);
        assert_eq!(list.status.code(), Some(0), "{name}: {}", text(&list));
        let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
        let names: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["GH_TOKEN", "api.key"], "{name}");
        let shown = text(&list);
        assert!(
            !shown.contains("S-stdin-9f2e") && !shown.contains("S-from-env-3c1d"),
            "{name}: {shown}"
        );
        // Where the key went.
        let key_file = match &db {
            TestDb::Sqlite { path, .. } => {
                std::path::PathBuf::from(format!("{}.key", path.display()))
            }
            TestDb::Postgres { url } => {
                let u = url::Url::parse(url).unwrap();
                key_dir.join(format!(
                    "postgres-{}-{}-{}.key",
                    u.host_str().unwrap(),
                    u.port().unwrap_or(5432),
                    u.path().trim_start_matches('/')
                ))
            }
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&key_file)
                .unwrap_or_else(|e| panic!("{name}: {}: {e}", key_file.display()))
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
        let rm = cli(&["secrets", "rm", "GH_TOKEN"], None);
        assert_eq!(rm.status.code(), Some(0), "{name}: {}", text(&rm));
        let again = cli(&["secrets", "rm", "GH_TOKEN"], None);
        assert_eq!(again.status.code(), Some(2), "{name}: {}", text(&again));
        assert!(
            text(&again).contains("no secret named 'GH_TOKEN'"),
            "{name}: {}",
            text(&again)
        );
        let list = cli(&["secrets", "list"], None);
        assert_eq!(list.status.code(), Some(0), "{name}: {}", text(&list));
        let table = String::from_utf8_lossy(&list.stdout);
        assert!(
            table.contains("api.key") && !table.contains("GH_TOKEN"),
            "{name}: {table}"
        );
    }
}
