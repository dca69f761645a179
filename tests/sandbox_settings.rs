//! The sandbox as configured and as shown: `tools list`/`show` and `GET /v1/tools` give
//! each tool's sandbox; a wrong `sandbox:` is one line naming the file and line; an
//! agent's `sandbox:` tightens its tools' (the stricter wins); on a kernel that cannot
//! enforce a tool's sandbox the tool refuses to run with one line naming the missing
//! feature, unless its file says `off` (a lower Landlock ABI is simulated with
//! `TOOLGATE_SANDBOX_ABI`); `toolgate doctor` says what the machine supports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::launching;
use crate::serving;

use std::path::Path;
use std::process::Output;

use launching::{command, stderr, with_tools};
use serde_json::{Value, json};

const WRITER: &str = "name: writer\ndescription: Writes a note in the workspace.\npermission: auto\n\
    entry: {type: command, command: sh, args: [-c, 'echo noted > note.txt && echo done']}\n";

const OPEN: &str = "name: open\ndescription: Runs anywhere.\npermission: auto\n\
    entry: {type: command, command: sh, args: [-c, 'echo free']}\nsandbox: {fs: off, network: true}\n";

const OFF: &str = "name: bare\ndescription: No sandbox at all.\npermission: auto\n\
    entry: {type: command, command: sh, args: [-c, 'echo bare']}\nsandbox: off\n";

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command(args, dir, "0");
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", String::from_utf8_lossy(&o.stdout), stderr(o)))
}

#[test]
fn tools_list_and_show_give_each_sandbox() {
    let dir = with_tools(&[
        ("writer.yaml", WRITER),
        ("open.yaml", OPEN),
        ("bare.yaml", OFF),
    ]);
    let out = run(dir.path(), &["tools", "list", "--json"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = json_of(&out);
    let sandbox = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["sandbox"]
            .clone()
    };
    assert_eq!(sandbox("writer")["fs"], "workspace-write");
    assert_eq!(sandbox("writer")["network"], false);
    assert_eq!(sandbox("writer")["limits"]["memory"], "4G");
    assert_eq!(sandbox("open")["fs"], "off");
    assert_eq!(sandbox("open")["network"], true);
    assert_eq!(sandbox("bare"), json!("off"));
    assert_eq!(
        sandbox("shell")["fs"],
        "workspace-write",
        "the shell built-in too"
    );
    assert_eq!(sandbox("calculator"), Value::Null, "starts no program");

    let table = run(dir.path(), &["tools", "list"], &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("SANDBOX"), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("open").contains("fs off, network"), "{text}");
    assert!(line("bare").contains("off"), "{text}");

    let show = run(dir.path(), &["tools", "show", "writer", "--json"], &[]);
    assert_eq!(json_of(&show)["spec"]["sandbox"]["fs"], "workspace-write");
    let show = run(dir.path(), &["tools", "show", "open"], &[]);
    assert!(
        String::from_utf8_lossy(&show.stdout).contains("sandbox:    {\"fs\":\"off\""),
        "{}",
        String::from_utf8_lossy(&show.stdout)
    );
}

#[tokio::test]
async fn the_api_lists_each_tools_sandbox() {
    let site = serving::Site::new();
    let server = serving::Server::start(&site, None, &[]);
    let (status, tools) = server.get("/v1/tools").await;
    assert_eq!(status, 200);
    let find = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(find("nap")["sandbox"]["fs"], "workspace-write", "{tools}");
    assert_eq!(find("nap")["sandbox"]["network"], false);
    assert!(find("calculator").get("sandbox").is_none());
    // Each with its origin, as `toolgate tools list --json` shows it.
    assert_eq!(find("calculator")["source"], "built-in", "{tools}");
    let nap = find("nap");
    assert!(nap["source"].as_str().unwrap().ends_with(".yaml"), "{nap}");
}

#[test]
fn a_wrong_sandbox_is_one_line_naming_the_file_and_line() {
    let dir = with_tools(&[
        (
            "typo.yaml",
            "name: typo\nentry: {type: command, command: sh}\nsandbox:\n  fs: workspace-write\n  netwrok: true\n",
        ),
        (
            "client.yaml",
            "name: client\nentry: {type: client}\nsandbox: {network: true}\n",
        ),
        (
            "limit.yaml",
            "name: limit\nentry: {type: command, command: sh}\nsandbox: {limits: {memory: lots}}\n",
        ),
    ]);
    let out = run(dir.path(), &["tools", "check"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        text.contains("typo.yaml:5:") && text.contains("netwrok"),
        "{text}"
    );
    assert!(
        text.contains("client.yaml:3:") && text.contains("start programs"),
        "{text}"
    );
    assert!(
        text.contains("limit.yaml:3:") && text.contains("memory"),
        "{text}"
    );
}

#[test]
fn an_agents_sandbox_tightens_its_tools() {
    let dir = with_tools(&[("writer.yaml", WRITER)]);
    let d = dir.path();
    std::fs::write(
        d.join("replies.yaml"),
        "replies:\n  - content: Noting.\n    tool_calls: [{id: c1, name: writer, arguments: {}}]\n  - content: Done.\n",
    )
    .unwrap();
    let agent = |sandbox: &str| {
        format!(
            "name: noter\nmodel: scripted:replies.yaml\ntools: [writer]\nworkspace: ws\n{sandbox}"
        )
    };
    std::fs::create_dir(d.join("ws")).unwrap();
    std::fs::write(d.join("free.yaml"), agent("")).unwrap();
    std::fs::write(
        d.join("strict.yaml"),
        agent("sandbox: {fs: workspace-read}\n"),
    )
    .unwrap();
    let out = run(d, &["run", "--agent", "strict.yaml", "--json", "go"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !d.join("ws/note.txt").exists(),
        "workspace-read wrote a note"
    );
    let calls = json_of(&run(d, &["calls", "--json"], &[]));
    assert_eq!(calls["calls"][0]["status"], "failed", "{calls}");

    let out = run(d, &["run", "--agent", "free.yaml", "--json", "go"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(d.join("ws/note.txt")).unwrap(),
        "noted\n"
    );
    // An agent cannot loosen: `off` is no ceiling.
    std::fs::write(d.join("loose.yaml"), agent("sandbox: off\n")).unwrap();
    let out = run(d, &["run", "--agent", "loose.yaml", "go"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("loose.yaml:5:"), "{}", stderr(&out));
}

#[test]
fn without_the_landlock_it_needs_a_tool_refuses_in_one_line_unless_off() {
    let dir = with_tools(&[
        ("writer.yaml", WRITER),
        ("open.yaml", OPEN),
        ("bare.yaml", OFF),
    ]);
    let d = dir.path();
    let call = |tool: &str, abi: &str| {
        run(
            d,
            &["tools", "call", tool, "--json"],
            &[("TOOLGATE_SANDBOX_ABI", abi)],
        )
    };
    // ABI 3: file-system rules, but no TCP rules for network: false.
    let out = call("writer", "3");
    assert_ne!(out.status.code(), Some(0));
    let said = json_of(&out).to_string();
    assert!(
        said.contains("Landlock TCP rules (Landlock ABI 4; it has ABI 3)"),
        "{said}"
    );
    assert!(!d.join("note.txt").exists(), "nothing ran");
    // No Landlock at all.
    let out = call("writer", "0");
    let said = json_of(&out).to_string();
    assert!(
        said.contains("Landlock file-system rules") && said.contains("no Landlock at all"),
        "{said}"
    );
    // What is configured off runs.
    for (tool, word) in [("open", "free"), ("bare", "bare")] {
        let out = call(tool, "0");
        assert!(out.status.success(), "{tool}: {}", stderr(&out));
        assert!(json_of(&out).to_string().contains(word));
    }
}

#[test]
fn doctor_says_what_this_machine_supports() {
    let dir = with_tools(&[]);
    let out = run(dir.path(), &["doctor", "--json"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json_of(&out);
    assert!(report["landlock_abi"].as_u64().unwrap() >= 6, "{report}");
    assert_eq!(report["default_sandbox_starts"], true, "{report}");
    assert_eq!(report["features"]["Landlock TCP rules"], true);
    let out = run(dir.path(), &["doctor"], &[("TOOLGATE_SANDBOX_ABI", "0")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Landlock: not available"), "{text}");
    assert!(text.contains("starts in the default sandbox: no"), "{text}");
}
