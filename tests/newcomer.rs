//! A newcomer's path (issue 31, point 5): `--workspace DIR` that does not exist yet,
//! `--log-format json` keeping stderr pure JSON, the secrets key kept out of git work
//! trees (old keys still working), `examples/mcp` declaring each server once, the demo
//! scripts leaving no temporary folder, and the README's desktop config naming every
//! path a desktop app needs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use toolgate_test_support::toolgate;

fn cli(args: &[&str], dir: &Path, env: &[(&str, &Path)]) -> Output {
    let mut cmd = toolgate(dir);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_workspace_that_does_not_exist_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("new/nested/ws");
    let out = cli(
        &[
            "tools",
            "call",
            "write_file",
            "--workspace",
            ws.to_str().unwrap(),
            "--args",
            r#"{"path": "a.txt", "content": "hi"}"#,
        ],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "hi");

    // A file where the folder should be: one line, exit 2.
    let file = dir.path().join("plain.txt");
    std::fs::write(&file, "x").unwrap();
    let out = cli(
        &[
            "tools",
            "call",
            "write_file",
            "--workspace",
            file.to_str().unwrap(),
            "--args",
            r#"{"path": "a.txt", "content": "hi"}"#,
        ],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("not a folder"), "{err}");
}

/// The README's desktop config, started from `/` as a desktop app does, with a
/// workspace and a database folder that do not exist yet: it serves.
#[test]
fn the_readme_desktop_config_starts_from_the_root_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("share/toolgate/toolgate.db");
    let mut child = Command::new(toolgate_test_support::bin())
        .args(["mcp", "--agent"])
        .arg(root.join("examples/agents/assistant.yaml"))
        .arg("--tools")
        .arg(root.join("tools"))
        .arg("--workspace")
        .arg(dir.path().join("workspace"))
        .arg("--db")
        .arg(&db)
        .current_dir("/")
        .env_remove("TOOLGATE_DB")
        .env_remove("TOOLGATE_TOOLS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::{BufRead, Write};
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"desktop","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let answer: serde_json::Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("no initialize answer ({e}): {line:?} {}", stderr(&out)));
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "toolgate",
        "{answer}"
    );
    assert!(dir.path().join("workspace").is_dir());
    assert!(db.exists());
}

#[test]
fn json_logs_keep_stderr_pure_json() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    // A broken tool file: its warning is a JSON line too.
    std::fs::write(tools.join("broken.yaml"), "name: [unclosed\n").unwrap();
    let out = cli(
        &[
            "-vv",
            "--log-format",
            "json",
            "tools",
            "--tools",
            tools.to_str().unwrap(),
            "call",
            "calculator",
            "--args",
            r#"{"expression": "1+1"}"#,
        ],
        dir.path(),
        &[("TOOLGATE_DB", &dir.path().join("t.db"))],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let mut warned = false;
    for line in err.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}\nall of stderr:\n{err}"));
        if v["level"] == "WARN" && v["fields"]["message"].as_str().unwrap().contains("broken") {
            warned = true;
        }
    }
    assert!(warned, "no WARN line names broken.yaml:\n{err}");

    // A failure is a JSON line as well.
    let out = cli(
        &["--log-format", "json", "show", "run_nope"],
        dir.path(),
        &[("TOOLGATE_DB", &dir.path().join("t.db"))],
    );
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    for line in err.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        assert_eq!(v["level"], "ERROR", "{line}");
    }
}

fn set_secret(db: &Path, dir: &Path, key_dir: &Path) -> Output {
    set_secret_with(db, dir, key_dir, &[])
}

fn set_secret_with(db: &Path, dir: &Path, key_dir: &Path, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(toolgate_test_support::bin());
    let mut child = cmd
        .args(["--db", db.to_str().unwrap(), "secrets", "set", "api.TOKEN"])
        .current_dir(dir)
        .env_remove("TOOLGATE_SECRET_KEY")
        .env_remove("TOOLGATE_SECRET_KEY_FILE")
        .env("TOOLGATE_KEY_DIR", key_dir)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"hunter2\n").unwrap();
    child.wait_with_output().unwrap()
}

fn key_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".key") {
            found.push(entry.display().to_string());
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn the_secrets_key_stays_out_of_a_git_work_tree() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let key_dir = dir.path().join("keys");

    // Inside a work tree: the key goes to the per-user folder, not beside the database.
    let out = set_secret(&repo.join("toolgate.db"), &repo, &key_dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(key_files(&repo).is_empty(), "{:?}", key_files(&repo));
    let keys = key_files(&key_dir);
    assert_eq!(keys.len(), 1, "{keys:?}");
    // The same database finds its key again.
    let out = set_secret(&repo.join("toolgate.db"), &repo, &key_dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(key_files(&key_dir), keys);

    // Outside a work tree: beside the database, as before.
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let out = set_secret(&plain.join("toolgate.db"), &plain, &key_dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(plain.join("toolgate.db.key").exists());

    // An existing key beside a database that is now inside a work tree keeps working.
    std::fs::create_dir(plain.join(".git")).unwrap();
    let out = set_secret(&plain.join("toolgate.db"), &plain, &key_dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(key_files(&key_dir), keys, "no second per-user key");
    let out = cli(
        &["secrets", "list", "--json"],
        &plain,
        &[("TOOLGATE_DB", &plain.join("toolgate.db"))],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("api.TOKEN"));
}

#[test]
fn a_configured_key_file_is_used_wherever_the_database_is() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("conf/toolgate.key");
    std::fs::create_dir(dir.path().join("conf")).unwrap();
    let key_dir = dir.path().join("keys");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    // Two databases, one key file named by the configuration: nothing derived from
    // either database's place.
    for db in [a.join("one.db"), b.join("two.db")] {
        let out = set_secret_with(
            &db,
            dir.path(),
            &key_dir,
            &[("TOOLGATE_SECRET_KEY_FILE", &key)],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert!(key.exists());
    assert_eq!(key_files(&a), Vec::<String>::new());
    assert_eq!(key_files(&b), Vec::<String>::new());
    assert_eq!(key_files(&key_dir), Vec::<String>::new());
}

#[test]
fn examples_mcp_declares_each_server_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mcp");
    let mut names = Vec::new();
    for path in walk(&root) {
        let text = std::fs::read_to_string(&path).unwrap();
        if path.extension().is_some_and(|e| e == "json") {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            names.extend(v["mcpServers"].as_object().unwrap().keys().cloned());
        } else if let Some(line) = text.lines().find(|l| l.starts_with("mcp_server:")) {
            let name = line["mcp_server:".len()..].split('#').next().unwrap();
            names.push(name.trim().to_string());
        }
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "declared twice: {names:?}");
}

#[test]
fn the_demo_scripts_leave_no_temporary_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for script in ["examples/demo.sh", "examples/subagents.sh"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = Command::new("bash")
            .arg(script)
            .current_dir(root)
            .env("TOOLGATE_BIN", toolgate_test_support::bin())
            .env("TMPDIR", tmp.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("TOOLGATE_DB")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{script}: {}", stderr(&out));
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "{script} left {left:?}");
    }
}

#[test]
fn the_readme_desktop_config_names_every_path() {
    // The README is the front page; the desktop config and the full set-up are in the
    // book.
    let read = |path: &str| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
    };
    let mcp = read("docs/src/howto/mcp-server.md");
    let start = mcp.find("\"mcpServers\": {\n    \"toolgate\"").unwrap();
    let block = &mcp[start..start + mcp[start..].find("```").unwrap()];
    for flag in ["\"--agent\"", "\"--tools\"", "\"--workspace\"", "\"--db\""] {
        assert!(block.contains(flag), "{flag} missing from:\n{block}");
    }
    assert!(
        read("README.md").contains("cargo install --path ."),
        "how to put toolgate on PATH"
    );
    let setup = read("docs/src/tutorials/setup.md");
    for need in ["python3-venv", "npm", "chromium", "root"] {
        assert!(setup.contains(need), "the set-up does not say {need}");
    }
}
