//! The escape table of issue 29, tried by a sandboxed command tool and by a sandboxed
//! stdio MCP server (a tiny server of the official Python SDK), both started by this
//! test process, which plays the server: it holds the database open, its key file
//! beside it, a file in its `$HOME`, `TOOLGATE_*` variables and another tool's
//! credential in its environment.
//!
//! Every row fails sandboxed and succeeds with the sandbox loosened, so the test can
//! fail: `{fs: off, network: true}` for the file and network rows (and for the limit
//! rows, whose sandboxed tool lowers the limit so the bounded attempt stays small, or
//! whose loosened one lifts it), `sandbox: off` for the two rows where the barrier is
//! the tool's own user and environment (as root, tools run as `nobody` whatever their
//! file and network settings). Before the rows, each configuration runs a legitimate
//! call (read and write its workspace), so a refusal is never a tool that did not start.
#![allow(clippy::too_many_lines, reason = "scenario tests read best whole")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolgate_test_support::serving;

use std::io::Write;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolgate::store::Store;
use toolgate::tool::{Part, ToolContext, ToolLibrary, ToolOutput};

const KEY: &str = "key-material-3c51e0";
const HOME_SECRET: &str = "home-secret-8a0f2b";
const OUTSIDE_SECRET: &str = "outside-secret-41d7";
const MARK: &str = "toolgate-mark-77e0c4";
const OTHER_TOKEN: &str = "other-tool-token-b92d";

/// The sandbox of each tool (command) and server (MCP) by configuration name.
const CONFIGS: [(&str, &str, &str); 6] = [
    ("default", "", ""),
    // As root every tool runs as `nobody`, whose processes all count: room for the
    // servers of tests running beside this one.
    (
        "procs",
        "sandbox: {limits: {processes: 128}}\n",
        "sandbox: {limits: {processes: 128}}\n",
    ),
    // The server's own start (Python, the SDK) takes about a CPU second.
    (
        "cpu",
        "sandbox: {limits: {cpu: 1}}\n",
        "sandbox: {limits: {cpu: 4}}\n",
    ),
    (
        "open",
        "sandbox: {fs: off, network: true}\n",
        "sandbox: {fs: off, network: true}\n",
    ),
    (
        "open_mem",
        "sandbox: {fs: off, network: true, limits: {memory: off}}\n",
        "sandbox: {fs: off, network: true, limits: {memory: off}}\n",
    ),
    ("off", "sandbox: off\n", "sandbox: off\n"),
];

/// One escape: what is tried, under which configuration it must fail and under which
/// it must work.
struct Row {
    name: &'static str,
    request: Value,
    confined: &'static str,
    loosened: &'static str,
}

/// Where things are, and the fake services the network rows reach.
struct Site {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    tcp_port: u16,
    dns_port: u16,
    _store: Store,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        write(&ws.join("hello.txt"), "hello from the workspace\n");
        write(&root.join("home/secret.txt"), HOME_SECRET);
        let outside = root.join("outside");
        write(&outside.join("secret.txt"), OUTSIDE_SECRET);
        // Writable for anyone: only the sandbox stands between a tool and it.
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("link")).unwrap();
        let store = Store::open(root.join("toolgate.db")).unwrap();
        let key = root.join("toolgate.db.key");
        write(&key, KEY);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let tcp_port = serve_hello();
        let dns_port = serve_dns();
        Site {
            _dir: dir,
            root,
            ws,
            tcp_port,
            dns_port,
            _store: store,
        }
    }

    /// The tools folder: per configuration, a command tool `escape_NAME` and an MCP
    /// server `sb_NAME` (whose tool is `sb_NAME__attempt`); and a tool holding a
    /// credential the others must not see.
    fn library(&self) -> Arc<ToolLibrary> {
        let python = serving::python("the sandbox escape table");
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sandbox");
        let tools = self.root.join("tools");
        for (name, command_sandbox, mcp_sandbox) in CONFIGS {
            write(
                &tools.join(format!("escape_{name}.yaml")),
                &format!(
                    "name: escape_{name}\ndescription: Tries one escape.\npermission: auto\ntimeout: 60\n\
                     parameters:\n  type: object\n  properties:\n    request: {{type: string}}\n  required: [request]\n\
                     entry:\n  type: command\n  command: {}\n  args: [{}]\n{command_sandbox}",
                    python.display(),
                    here.join("escape.py").display()
                ),
            );
            write(
                &tools.join(format!("sb_{name}.yaml")),
                &format!(
                    "mcp_server: sb_{name}\ncommand: {}\nargs: [{}]\ncwd: ../ws\npermission: auto\ntimeout: 60s\n{mcp_sandbox}",
                    python.display(),
                    here.join("escape_server.py").display()
                ),
            );
        }
        write(
            &tools.join("holder.yaml"),
            "name: holder\ndescription: Holds a credential.\ncredentials: {token: {env: OTHER_TOOL_TOKEN}}\n\
             entry: {type: command, command: echo}\n",
        );
        let lib = ToolLibrary::load(&tools, &toolgate::tool::sources::standard()).unwrap();
        assert!(lib.errors().is_empty(), "{:?}", lib.errors());
        Arc::new(lib)
    }

    fn rows(&self) -> Vec<Row> {
        let row = |name, request: Value, confined, loosened| Row {
            name,
            request,
            confined,
            loosened,
        };
        let read = |path: PathBuf, expect: &str| json!({"row": "read_file", "path": path, "expect": expect});
        let home = self.root.join("home");
        vec![
            row(
                "read the database",
                read(self.root.join("toolgate.db"), "SQLite format 3"),
                "default",
                "open",
            ),
            row(
                "read its key file",
                read(self.root.join("toolgate.db.key"), KEY),
                "default",
                "open",
            ),
            row(
                "read a file in $HOME",
                read(home.join("secret.txt"), HOME_SECRET),
                "default",
                "open",
            ),
            row(
                "write outside the workspace",
                json!({"row": "write_outside", "path": self.root.join("outside/written.txt")}),
                "default",
                "open",
            ),
            row(
                "follow a symlink out",
                read(self.ws.join("link"), OUTSIDE_SECRET),
                "default",
                "open",
            ),
            row(
                "connect to a server on 127.0.0.1",
                json!({"row": "connect", "port": self.tcp_port}),
                "default",
                "open",
            ),
            row(
                "resolve a name and connect out",
                json!({"row": "resolve_and_connect", "dns_port": self.dns_port, "port": self.tcp_port}),
                "default",
                "open",
            ),
            row(
                "a fork bomb (200 processes at once)",
                json!({"row": "fork_bomb", "count": 200}),
                "procs",
                "open",
            ),
            row(
                "allocate 10 GB",
                json!({"row": "allocate", "gib": 10}),
                "default",
                "open_mem",
            ),
            row(
                "busy-loop past the CPU limit",
                json!({"row": "busy", "seconds": 6}),
                "cpu",
                "open",
            ),
            row(
                "read another tool's credential or the server's TOOLGATE_* variables",
                json!({"row": "secrets_in_reach", "markers": [MARK, OTHER_TOKEN]}),
                "default",
                "off",
            ),
            row(
                "signal the server's pid",
                json!({"row": "signal_server", "pid": std::process::id()}),
                "default",
                "off",
            ),
        ]
    }
}

/// A TCP server on 127.0.0.1 that says hello to each connection.
fn serve_hello() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let _ = conn.write_all(b"hello\n");
        }
    });
    port
}

/// A resolver on UDP 127.0.0.1 that answers every A question with 127.0.0.1.
fn serve_dns() -> u16 {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            if n < 12 {
                continue;
            }
            let mut answer = buf[..n].to_vec();
            answer[2..4].copy_from_slice(&[0x81, 0x80]);
            answer[6..8].copy_from_slice(&[0, 1]);
            answer.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
            let _ = socket.send_to(&answer, from);
        }
    });
    port
}

/// Whether the attempt worked, and what the tool said.
async fn attempt(lib: &ToolLibrary, tool: &str, ws: &Path, request: &Value) -> (bool, String) {
    let ctx = ToolContext::new(ws.to_path_buf());
    let mut args = Map::new();
    args.insert("request".into(), Value::String(request.to_string()));
    let Some(t) = lib.get(tool) else {
        return (false, format!("no tool {tool}"));
    };
    match t.invoke(&ctx, args).await {
        Err(e) => (false, format!("error: {e}")),
        Ok(out) if out.is_error => (false, format!("error output: {}", text(&out))),
        Ok(out) => (
            verdict(&out).is_some_and(|v| v["escaped"] == true),
            text(&out),
        ),
    }
}

/// The probe's answer: the command tool's JSON, or the MCP tool's text (also given as
/// structured content `{"result": TEXT}`).
fn verdict(out: &ToolOutput) -> Option<Value> {
    out.parts.iter().find_map(|p| {
        let v = match p {
            Part::Json { json } => match json.get("result").and_then(Value::as_str) {
                Some(text) => serde_json::from_str(text).ok()?,
                None => json.clone(),
            },
            Part::Text { text } => serde_json::from_str(text).ok()?,
            _ => return None,
        };
        v.get("escaped").is_some().then_some(v)
    })
}

fn text(out: &ToolOutput) -> String {
    out.parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => text.clone(),
            Part::Json { json } => json.to_string(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs every row through `tool_of(config)`, and says what went wrong (empty: all good).
async fn table(
    lib: &ToolLibrary,
    site: &Site,
    runner: &str,
    tool_of: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut wrong = Vec::new();
    let works = json!({"row": "works", "workspace_file": site.ws.join("hello.txt")});
    for (config, _, _) in CONFIGS {
        let (ok, said) = attempt(lib, &tool_of(config), &site.ws, &works).await;
        if !ok {
            wrong.push(format!(
                "{runner} [{config}]: a legitimate call failed: {said}"
            ));
        }
    }
    for row in site.rows() {
        let (escaped, said) = attempt(lib, &tool_of(row.confined), &site.ws, &row.request).await;
        // Why it failed, for whoever reads the test's output.
        eprintln!("{runner}: {} [{}]: {said}", row.name, row.confined);
        if escaped {
            wrong.push(format!(
                "{runner}: '{}' worked sandboxed [{}]: {said}",
                row.name, row.confined
            ));
        }
        let (escaped, said) = attempt(lib, &tool_of(row.loosened), &site.ws, &row.request).await;
        if !escaped {
            wrong.push(format!(
                "{runner}: '{}' did not work loosened [{}], so this row cannot fail: {said}",
                row.name, row.loosened
            ));
        }
    }
    wrong
}

#[tokio::test(flavor = "multi_thread")]
async fn every_escape_fails_sandboxed_and_works_loosened() {
    let site = Site::new();
    // SAFETY: set before any thread of this test reads the environment; nextest runs
    // each test in a process of its own.
    unsafe {
        std::env::set_var("HOME", site.root.join("home"));
        std::env::set_var("TOOLGATE_ESCAPE_MARK", MARK);
        std::env::set_var("OTHER_TOOL_TOKEN", OTHER_TOKEN);
    }
    let lib = site.library();
    let mut wrong = table(&lib, &site, "command tool", |c| format!("escape_{c}")).await;
    let written = site.root.join("outside/written.txt");
    assert!(written.exists(), "the loosened write left no file");
    std::fs::remove_file(&written).unwrap();
    wrong.extend(table(&lib, &site, "MCP server", |c| format!("sb_{c}__attempt")).await);
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_database_and_tools_inside_the_workspace_are_out_of_sight() {
    let site = Site::new();
    let lib = site.library();
    // The workspace is the folder that holds the database and the tools folder.
    let ws = &site.root;
    let read =
        |path: PathBuf, expect: &str| json!({"row": "read_file", "path": path, "expect": expect});
    let db = read(site.root.join("toolgate.db"), "SQLite format 3");
    let key = read(site.root.join("toolgate.db.key"), KEY);
    let tool_file = read(site.root.join("tools/holder.yaml"), "OTHER_TOOL_TOKEN");
    let mut wrong = Vec::new();
    for (what, request) in [("database", &db), ("key", &key), ("tool file", &tool_file)] {
        let (escaped, said) = attempt(&lib, "escape_default", ws, request).await;
        if escaped {
            wrong.push(format!("the {what} was read sandboxed: {said}"));
        }
        let (escaped, said) = attempt(&lib, "escape_open", ws, request).await;
        if !escaped {
            wrong.push(format!("the {what} was not read with fs: off: {said}"));
        }
    }
    // The rest of the workspace is the tool's: it writes a new file at its top.
    let works = json!({"row": "works", "workspace_file": site.root.join("ws/hello.txt")});
    let (ok, said) = attempt(&lib, "escape_default", ws, &works).await;
    if !ok || !site.root.join("written-by-tool.txt").exists() {
        wrong.push(format!("the tool could not use its workspace: {said}"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
