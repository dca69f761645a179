//! MCP servers as tool sources, against real servers installed by tests/mcp/setup.sh:
//! PyPI `mcp-server-time` (stdio), npm `@modelcontextprotocol/server-everything` (stdio
//! and streamable HTTP) and a small server of the official Python SDK whose schema uses
//! anyOf/$ref/const. Through the binary: list, show and call; a run with an AUTO and a
//! CONFIRM MCP tool approved from another process; a server killed during a call and
//! started again; progress as tool.output events; a server that does not start.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use toolgate_test_support::toolgate;

use serde_json::{Value, json};
use tempfile::TempDir;

#[path = "mcp/lazy_start.rs"]
mod lazy_start;

/// The servers' paths from tests/mcp/setup.sh (run once; a failure fails every test).
struct Peers {
    python: PathBuf,
    everything: PathBuf,
}

fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = Command::new(root.join("tests/mcp/setup.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("cannot run tests/mcp/setup.sh");
        assert!(
            out.status.success(),
            "tests/mcp/setup.sh failed: the MCP servers these tests need are not installed"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .map(PathBuf::from)
                .unwrap_or_else(|| panic!("tests/mcp/setup.sh printed no {key}=: {text}"))
        };
        Peers {
            python: get("python"),
            everything: get("everything"),
        }
    })
}

/// The YAML form: confirm by default, get_current_time auto.
fn time_yaml() -> String {
    format!(
        "mcp_server: time\ncommand: {}\nargs: [-m, mcp_server_time, --local-timezone, UTC]\n\
         env: {{TZ: UTC}}\npermission: confirm\npermissions: {{get_current_time: auto}}\ntimeout: 30s\n",
        peers().python.display()
    )
}

/// A desktop client's mcp.json, keys toolgate does not use included.
fn mcp_json() -> String {
    json!({"mcpServers": {
        "time": {"command": peers().python, "args": ["-m", "mcp_server_time"], "autoApprove": []},
        "everything": {"type": "stdio", "command": "node", "args": [peers().everything]},
    }})
    .to_string()
}

fn world(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn command(args: &[&str], dir: &Path) -> Command {
    let mut cmd = toolgate(dir);
    cmd.args(args);
    cmd
}

fn cli(args: &[&str], dir: &Path) -> Output {
    command(args, dir).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", String::from_utf8_lossy(&o.stdout), stderr(o)))
}

fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn call(dir: &Path, tool: &str, args: Value) -> Value {
    let out = cli(
        &["tools", "call", tool, "--args", &args.to_string(), "--json"],
        dir,
    );
    json_out(&out)
}

fn records(dir: &Path, run: &str) -> Vec<Value> {
    let out = cli(&["calls", "--run", run, "--json"], dir);
    json_out(&out)["calls"].as_array().unwrap().clone()
}

#[test]
fn both_servers_list_show_and_call() {
    let w = world(&[("tools/time.yaml", &time_yaml())]);
    let everything = format!(
        "{{\"mcpServers\": {{\"everything\": {{\"command\": \"node\", \"args\": [\"{}\"]}}}}}}",
        peers().everything.display()
    );
    std::fs::write(w.path().join("tools/mcp.json"), everything).unwrap();
    let dir = w.path();
    let out = cli(&["tools", "list", "--json"], dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "no load warnings");
    let listed = json_out(&out);
    let find = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {listed}"))
            .clone()
    };
    let get_time = find("time__get_current_time");
    assert_eq!(get_time["permission"], "auto", "the file's permissions");
    assert_eq!(get_time["entry"], "mcp:time");
    assert!(get_time["source"].as_str().unwrap().ends_with("time.yaml"));
    assert_eq!(
        find("time__convert_time")["permission"],
        "confirm",
        "the file's permission"
    );
    // Without a word from the file: readOnlyHint -> auto, none or destructive -> confirm.
    assert_eq!(find("everything__get-sum")["permission"], "auto");
    assert_eq!(
        find("everything__toggle-simulated-logging")["permission"],
        "confirm"
    );

    let show = json_out(&cli(
        &["tools", "show", "time__get_current_time", "--json"],
        dir,
    ));
    assert_eq!(show["parameters"]["required"], json!(["timezone"]));
    assert_eq!(show["spec"]["timeout"], json!(30.0));

    let r = call(
        dir,
        "time__get_current_time",
        json!({"timezone": "Europe/Paris"}),
    );
    assert_eq!(r["status"], "succeeded", "{r}");
    assert!(r["output"].to_string().contains("Europe/Paris"), "{r}");
    let r = call(dir, "everything__echo", json!({"message": "hello"}));
    assert_eq!(r["output"]["parts"][0]["text"], "Echo: hello", "{r}");
    let r = call(dir, "everything__get-tiny-image", json!({}));
    let parts = r["output"]["parts"].as_array().unwrap();
    assert!(
        parts
            .iter()
            .any(|p| p["type"] == "image" && p["mime"] == "image/png" && p["data"].is_string()),
        "{r}"
    );
    let r = call(
        dir,
        "everything__get-structured-content",
        json!({"location": "New York"}),
    );
    assert_eq!(r["output"]["parts"][0]["type"], "json", "{r}");
    assert!(
        r["output"]["parts"][0]["json"]["temperature"].is_number(),
        "{r}"
    );
    // Arguments are checked against the server's schema before the call.
    let bad = cli(
        &[
            "tools",
            "call",
            "everything__get-sum",
            "--args",
            "{\"a\": 1}",
        ],
        dir,
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("'b': is required"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn an_mcp_json_agent_runs_auto_and_confirm_tools_approved_elsewhere() {
    let replies = "replies:\n  - content: Checking.\n    tool_calls:\n      \
        - {id: call_time, name: time__get_current_time, arguments: {timezone: UTC}}\n      \
        - {id: call_echo, name: everything__echo, arguments: {message: gated}}\n  \
        - content: All done.\n";
    let agent = "name: mcp_user\nmodel: scripted:replies.yaml\ntools: [time__get_current_time, everything__echo]\n\
                 permissions: {everything__echo: confirm}\nworkspace: .\n";
    let w = world(&[
        ("tools/mcp.json", &mcp_json()),
        ("agent.yaml", agent),
        ("replies.yaml", replies),
    ]);
    let dir = w.path();
    let out = cli(
        &["run", "--agent", "agent.yaml", "--json", "What time is it?"],
        dir,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run = lines(&out).pop().unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    let items = run["required_action"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{run}");
    assert_eq!(items[0]["tool"], "everything__echo");
    assert_eq!(items[0]["arguments"], json!({"message": "gated"}));
    // The AUTO call already ran and is recorded.
    let recs = records(dir, &id);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0]["tool"], "time__get_current_time");
    assert_eq!(recs[0]["status"], "succeeded");

    // Another process approves; the run continues there, with a server of its own.
    let out = cli(&["approve", &id, "--call", "call_echo"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("All done."));
    let recs = records(dir, &id);
    let echo = recs
        .iter()
        .find(|r| r["tool"] == "everything__echo")
        .unwrap();
    assert_eq!(echo["status"], "succeeded", "{echo}");
    assert!(echo["result"].to_string().contains("Echo: gated"), "{echo}");
    let done = json_out(&cli(&["show", &id, "--json"], dir));
    assert_eq!(done["status"], "completed");
}

/// A child process killed when the test ends, pass or fail.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn streamable_http_servers_are_reached_by_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Killed(
        Command::new("node")
            .arg(&peers().everything)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = BufReader::new(server.0.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "the HTTP server exited before listening"
        );
        if line.contains("listening") {
            break;
        }
    }
    let decl = "mcp_server: web\nurl: http://127.0.0.1:${EVERYTHING_PORT}/mcp\nheaders: {X-Test: \"on\"}\n";
    let w = world(&[("tools/web.yaml", decl)]);
    let dir = w.path();
    let out = command(
        &[
            "tools",
            "call",
            "web__echo",
            "--args",
            "{\"message\": \"over http\"}",
            "--json",
        ],
        dir,
    )
    .env("EVERYTHING_PORT", port.to_string())
    .output()
    .unwrap();
    let r = json_out(&out);
    assert_eq!(r["status"], "succeeded", "{r}");
    assert_eq!(r["output"]["parts"][0]["text"], "Echo: over http");
}

/// The agent and replies of a run whose first call is long (progress each second),
/// and whose second call goes to the same server.
fn long_then_echo(seconds: u32) -> TempDir {
    let decl = format!(
        "mcp_server: everything\ncommand: sh\nargs: [-c, 'echo $$ > server.pid; exec node {}']\n",
        peers().everything.display()
    );
    let replies = format!(
        "replies:\n  - content: Working.\n    tool_calls:\n      \
         - {{id: call_long, name: everything__trigger-long-running-operation, arguments: {{duration: {seconds}, steps: {seconds}}}}}\n  \
         - content: Again.\n    tool_calls:\n      \
         - {{id: call_echo, name: everything__echo, arguments: {{message: back}}}}\n  \
         - content: Finished.\n"
    );
    let agent = "name: worker\nmodel: scripted:replies.yaml\n\
                 tools: [everything__trigger-long-running-operation, everything__echo]\nworkspace: .\n";
    world(&[
        ("tools/everything.yaml", &decl),
        ("agent.yaml", agent),
        ("replies.yaml", &replies),
    ])
}

#[test]
fn progress_reaches_tool_output_events() {
    let w = long_then_echo(3);
    let dir = w.path();
    let out = cli(&["run", "--agent", "agent.yaml", "--json", "go"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = lines(&out);
    let progress: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool.output" && e["call_id"] == "call_long")
        .filter_map(|e| e["part"]["text"].as_str())
        .collect();
    assert_eq!(progress, ["progress 1/3", "progress 2/3", "progress 3/3"]);
    let run = events.last().unwrap()["id"].as_str().unwrap().to_string();
    let recs = records(dir, &run);
    let long = recs.iter().find(|r| r["call_id"] == "call_long").unwrap();
    assert_eq!(long["status"], "succeeded", "{long}");
    assert!(
        long["result"]
            .to_string()
            .contains("Long running operation completed"),
        "{long}"
    );
}

#[test]
fn a_server_killed_during_a_call_fails_it_clearly_and_the_next_call_restarts_it() {
    let w = long_then_echo(120);
    let dir = w.path();
    let mut run = Killed(
        command(&["run", "--agent", "agent.yaml", "--json", "go"], dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Wait until the long call is running on the server (its first progress), then
    // kill the server.
    let mut events = BufReader::new(run.0.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            events.read_line(&mut line).unwrap() > 0,
            "the run ended before any progress"
        );
        let e: Value = serde_json::from_str(&line).unwrap();
        if e["type"] == "tool.output" && e["call_id"] == "call_long" {
            break;
        }
    }
    let pid = std::fs::read_to_string(dir.join("server.pid")).unwrap();
    let killed = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut events, &mut rest).unwrap();
    let status = run.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{rest}");
    let last: Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    let id = last["id"].as_str().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    let recs = records(dir, id);
    let long = recs.iter().find(|r| r["call_id"] == "call_long").unwrap();
    assert_eq!(long["status"], "failed", "{long}");
    assert_eq!(long["error_kind"], "server_unavailable", "{long}");
    assert!(
        long["error_message"]
            .as_str()
            .unwrap()
            .contains("stopped during the call"),
        "{long}"
    );
    let echo = recs.iter().find(|r| r["call_id"] == "call_echo").unwrap();
    assert_eq!(
        echo["status"], "succeeded",
        "the server was started again: {echo}"
    );
    let new_pid = std::fs::read_to_string(dir.join("server.pid")).unwrap();
    assert_ne!(new_pid, pid, "a new server process");
}

#[test]
fn a_server_that_does_not_start_is_one_line_and_the_rest_loads() {
    let w = world(&[
        ("tools/time.yaml", &time_yaml()),
        (
            "tools/broken.yaml",
            &format!(
                "mcp_server: broken\ncommand: {}\nargs: [-m, no_such_mcp_module]\n",
                peers().python.display()
            ),
        ),
        (
            "tools/missing.yaml",
            "mcp_server: missing\ncommand: /nonexistent/server\n",
        ),
    ]);
    let dir = w.path();
    let out = cli(&["tools", "list", "--json"], dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings = stderr(&out);
    let warnings: Vec<&str> = warnings.lines().collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("broken.yaml") && warnings[0].contains("MCP server 'broken'"),
        "{warnings:?}"
    );
    assert!(
        warnings[0].contains("no_such_mcp_module"),
        "its stderr says why: {warnings:?}"
    );
    assert!(warnings[1].contains("missing.yaml") && warnings[1].contains("/nonexistent/server"));
    let listed = json_out(&out).to_string();
    assert!(listed.contains("time__get_current_time"));
    assert!(!listed.contains("broken__"));
}

/// A desktop `mcp.json` as Cursor and VS Code write them: one entry toolgate cannot take
/// (legacy SSE, an unset variable, a `${input:...}` prompt) is one line naming it, and the
/// real mcp-server-time entry beside them (its `TZ` read through `${env:VAR}`, its `LANG`
/// through `${VAR:-default}`) loads.
#[test]
fn each_mcp_json_entry_loads_or_is_refused_on_its_own() {
    let file = json!({"mcpServers": {
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "time": {"command": peers().python, "args": ["-m", "mcp_server_time"],
                 "env": {"TZ": "${env:TOOLGATE_TEST_TZ}",
                         "LANG": "${TOOLGATE_TEST_SURELY_UNSET_LANG:-C.UTF-8}"}},
        "unset": {"command": "node", "args": ["${TOOLGATE_TEST_SURELY_UNSET_31}"]},
        "asks": {"command": "node", "env": {"KEY": "${input:api-key}"}},
    }})
    .to_string();
    let w = world(&[("tools/mcp.json", &file)]);
    let out = command(&["tools", "list", "--json"], w.path())
        .env("TOOLGATE_TEST_TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings = stderr(&out);
    let warnings: Vec<&str> = warnings.lines().collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    for (name, why) in [
        ("legacy", "legacy HTTP+SSE"),
        ("unset", "TOOLGATE_TEST_SURELY_UNSET_31 is not set"),
        ("asks", "${input:api-key}"),
    ] {
        let line = warnings
            .iter()
            .find(|l| l.contains(&format!("MCP server '{name}'")))
            .unwrap_or_else(|| panic!("no line names '{name}': {warnings:?}"));
        assert!(line.contains("mcp.json:") && line.contains(why), "{line}");
    }
    let listed = json_out(&out).to_string();
    assert!(listed.contains("time__get_current_time"), "{listed}");
}

/// The rooms server (tests/mcp/rooms_server.py) declared with `extra` lines.
fn rooms(extra: &str) -> String {
    format!(
        "mcp_server: rooms\ncommand: {}\nargs: ['{}']\n{extra}",
        peers().python.display(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/mcp/rooms_server.py")
            .display()
    )
}

#[test]
fn a_timed_out_call_is_cancelled_on_the_server_and_the_run_goes_on() {
    let replies = "replies:\n  - content: Waiting.\n    tool_calls:\n      \
        - {id: call_wait, name: rooms__wait, arguments: {seconds: 600}}\n  \
        - content: Booking.\n    tool_calls:\n      \
        - {id: call_book, name: rooms__book, arguments: {room: 7}}\n  \
        - content: Booked.\n";
    let agent = "name: booker\nmodel: scripted:replies.yaml\ntools: [rooms__wait, rooms__book]\n\
                 permissions: {rooms__wait: auto, rooms__book: auto}\nworkspace: .\n";
    let w = world(&[
        ("tools/rooms.yaml", &rooms("timeout: 2s\n")),
        ("agent.yaml", agent),
        ("replies.yaml", replies),
    ]);
    let dir = w.path();
    let out = cli(&["run", "--agent", "agent.yaml", "--json", "book"], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = lines(&out).pop().unwrap();
    let recs = records(dir, run["id"].as_str().unwrap());
    let wait = recs.iter().find(|r| r["call_id"] == "call_wait").unwrap();
    assert_eq!(wait["status"], "timeout", "{wait}");
    let book = recs.iter().find(|r| r["call_id"] == "call_book").unwrap();
    assert_eq!(book["status"], "succeeded", "{book}");
    // The server was told (notifications/cancelled) and stopped the call.
    assert_eq!(
        std::fs::read_to_string(dir.join("cancelled.txt")).unwrap_or_default(),
        "cancelled\n",
        "the server did not see the call cancelled"
    );
}

#[test]
fn schemas_with_any_of_and_refs_are_checked_fully() {
    let w = world(&[("tools/rooms.yaml", &rooms(""))]);
    let dir = w.path();
    let r = call(
        dir,
        "rooms__book",
        json!({"room": 12, "when": {"hour": 9, "zone": "UTC"}}),
    );
    assert_eq!(r["status"], "succeeded", "{r}");
    assert!(
        r["output"].to_string().contains("booked 12 at 9:00 UTC"),
        "{r}"
    );
    let r = call(dir, "rooms__book", json!({"room": "blue"}));
    assert!(r["output"].to_string().contains("booked blue"), "{r}");
    // anyOf refused, $ref followed, const checked, each with its path.
    let bad = cli(
        &[
            "tools",
            "call",
            "rooms__book",
            "--args",
            "{\"room\": [1], \"when\": {\"hour\": \"nine\", \"zone\": \"CET\"}}",
        ],
        dir,
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    let why = stderr(&bad);
    assert!(why.contains("'room':"), "{why}");
    assert!(why.contains("'when':"), "{why}");
}
