//! `toolgate tools` and `toolgate prompt` through the binary: what a user types to see,
//! check and try tools, with the exit codes scripts rely on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;
use toolgate_test_support::toolgate;

use serde_json::Value;

fn cli(args: &[&str], dir: &Path) -> Output {
    toolgate(dir).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn with_tools(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join("tools").join(name), text).unwrap();
    }
    dir
}

#[test]
fn list_shows_builtins_and_files() {
    let dir = with_tools(&[(
        "lookup.yaml",
        "name: lookup\ndescription: Look something up.\npermission: confirm\n",
    )]);
    let out = cli(&["tools", "list"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("NAME"));
    assert!(
        text.contains("lookup") && text.contains("confirm") && text.contains("client"),
        "{text}"
    );
    assert!(text.contains("calculator") && text.contains("builtin:calculator"));
    let out = cli(&["tools", "list", "--json"], dir.path());
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let lookup = all.iter().find(|t| t["name"] == "lookup").unwrap();
    assert_eq!(lookup["definition_only"], true);
    assert_eq!(lookup["source"], "tools/lookup.yaml");
    assert!(
        all.iter()
            .any(|t| t["name"] == "shell" && t["permission"] == "confirm")
    );
}

#[test]
fn show_one_tool() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(&["tools", "show", "write_file"], dir.path());
    let text = stdout(&out);
    assert!(text.contains("permission: Confirm"), "{text}");
    assert!(text.contains("append (boolean, default false)"), "{text}");
    let out = cli(&["tools", "show", "write_file", "--json"], dir.path());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["parameters"]["required"],
        serde_json::json!(["path", "content"])
    );
    let out = cli(&["tools", "show", "nope"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no tool named 'nope'"));
}

/// `label`, `icon` and `help` are kept (languages, an emoji or an inline image) and
/// shown by `tools list --json` and `tools show`; a URL icon is refused with its line.
#[test]
fn display_metadata_is_kept_and_a_url_icon_refused() {
    let dir = with_tools(&[
        (
            "lookup.yaml",
            "name: lookup\nlabel: {en_US: Look up, de_DE: Nachschlagen}\nicon: \"🔎\"\nhelp: Reads only.\n",
        ),
        (
            "far.yaml",
            "name: far\ndescription: x\nicon: https://x.example/i.png\n",
        ),
    ]);
    let out = cli(&["tools", "check"], dir.path());
    let text = stdout(&out);
    assert!(text.contains("ok      lookup"), "{text}");
    assert!(
        text.contains("tools/far.yaml:3: icon: a URL is never loaded"),
        "{text}"
    );
    std::fs::remove_file(dir.path().join("tools/far.yaml")).unwrap();
    let out = cli(&["tools", "list", "--json"], dir.path());
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let lookup = all.iter().find(|t| t["name"] == "lookup").unwrap();
    assert_eq!(lookup["label"]["de_DE"], "Nachschlagen");
    assert_eq!(lookup["icon"], "🔎");
    assert_eq!(lookup["help"]["en_US"], "Reads only.");
    let text = stdout(&cli(&["tools", "show", "lookup"], dir.path()));
    assert!(
        text.contains("label:      Look up\n  icon:       🔎\n"),
        "{text}"
    );
    // The model is told nothing of it.
    let out = cli(&["prompt", "--openai", "lookup"], dir.path());
    assert!(!stdout(&out).contains("Look up"), "{}", stdout(&out));
}

#[test]
fn check_reports_problems_with_exit_2() {
    let dir = with_tools(&[
        ("ok.yaml", "name: ok\n"),
        ("broken.yaml", "name: broken\nparameters: [\n"),
    ]);
    let out = cli(&["tools", "check"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    assert!(text.contains("ok      ok (tools/ok.yaml)"), "{text}");
    assert!(text.contains("broken  tools/broken.yaml:"), "{text}");
    assert!(text.contains("1 tool(s) loaded, 1 problem(s)"), "{text}");
    std::fs::remove_file(dir.path().join("tools/broken.yaml")).unwrap();
    assert!(
        cli(&["tools", "check", "tools"], dir.path())
            .status
            .success()
    );
}

#[test]
fn call_runs_a_tool_and_says_how_it_went() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        &[
            "tools",
            "call",
            "calculator",
            "--args",
            r#"{"expression": "(2+3)*4"}"#,
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "20");

    let out = cli(
        &[
            "tools",
            "call",
            "calculator",
            "--args",
            r#"{"expression": "2+3", "precision": 2}"#,
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "validation_error");
    assert!(
        stderr(&out).contains("'precision': is not a parameter"),
        "{}",
        stderr(&out)
    );

    let ws = tempfile::tempdir().unwrap();
    let out = cli(
        &[
            "tools",
            "call",
            "write_file",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--args",
            r#"{"path": "out/hello.txt", "content": "hi"}"#,
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out/hello.txt")).unwrap(),
        "hi"
    );

    let out = cli(
        &[
            "tools",
            "call",
            "shell",
            "--args",
            r#"{"command": "exit 5"}"#,
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("exit status 5"));

    let out = cli(
        &[
            "tools",
            "call",
            "read_file",
            "--args",
            r#"{"path": "../../etc/passwd"}"#,
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("outside the workspace"),
        "{}",
        stderr(&out)
    );

    let out = cli(
        &["tools", "call", "calculator", "--args", "{oops"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1);
}

#[test]
fn client_tool_call_exits_3() {
    let dir = with_tools(&[(
        "ask.yaml",
        "name: ask\nparameters: [{name: q, type: string, required: true}]\n",
    )]);
    let out = cli(
        &["tools", "call", "ask", "--args", r#"{"q": "why?"}"#],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("client tool"));
}

#[test]
fn prompt_for_named_tools() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(&["prompt", "calculator", "current_time"], dir.path());
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("## calculator") && text.contains("## current_time"));
    assert!(!text.contains("## shell"));
    let out = cli(&["prompt", "--openai", "echo"], dir.path());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["function"]["name"], "echo");
    let out = cli(&["prompt", "teleport"], dir.path());
    assert_eq!(out.status.code(), Some(2));
}
