//! Hot reload, end to end: `toolgate serve` (its run API through reqwest) and
//! `toolgate mcp` (through the official `mcp` Python SDK, tests/py/test_hot_reload.py)
//! pick up added, changed and removed tool files without a restart; a broken edit keeps
//! the last good version and is said once on stderr, naming the file; an MCP server
//! whose declaration changed is stopped and the new one used.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serving::{Server, Site, bin};

fn greet(version: &str) -> String {
    format!(
        "name: greet\ndescription: Greets.\nfinal: true\nentry:\n  type: command\n  command: sh\n  args: [-c, \"echo hello {version}\"]\n"
    )
}

/// Writes aside and renames, as editors that save atomically do.
fn write(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A run of `agent` through the API: (HTTP status, the run object or the error).
async fn run(server: &Server, agent: &str) -> (u16, Value) {
    server
        .post("/v1/runs", json!({"agent": agent, "input": "hi"}))
        .await
}

fn lines_naming(log: &Path, file: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(file))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn serve_picks_up_added_changed_broken_and_removed_tool_files() {
    let site = Site::new();
    let root = site.path().to_path_buf();
    let tools = root.join("tools");
    write(&tools.join("greet.yaml"), &greet("v1"));
    for (agent, tool) in [("greeter", "greet"), ("adder", "extra")] {
        std::fs::write(
            root.join(format!("agents/{agent}.yaml")),
            format!("name: {agent}\nmodel: scripted:{agent}.replies.yaml\ntools: [{tool}]\n"),
        )
        .unwrap();
        std::fs::write(
            root.join(format!("agents/{agent}.replies.yaml")),
            format!("replies:\n  - tool_calls: [{{name: {tool}, arguments: {{}}}}]\n  - content: the model again\n"),
        )
        .unwrap();
    }
    let log = root.join("serve.log");
    let mut cmd = Command::new(bin());
    cmd.current_dir(&root)
        .arg("--db")
        .arg(site.db())
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--reload-every",
            "200ms",
            "--agents",
        ])
        .arg(root.join("agents"))
        .arg("--tools")
        .arg(&tools)
        .arg("--workspace")
        .arg(root.join("ws"))
        .env_remove("TOOLGATE_API_KEY")
        .env_remove("TOOLGATE_RELOAD_EVERY")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let (child, base) = serving::listen(&mut cmd);
    let server = Server {
        child,
        base,
        client: reqwest::Client::new(),
        key: None,
    };

    let (status, first) = run(&server, "greeter").await;
    assert_eq!(
        (status, first["output"].as_str()),
        (200, Some("hello v1")),
        "{first}"
    );

    // Changed.
    write(&tools.join("greet.yaml"), &greet("v2"));
    let (_, second) = run(&server, "greeter").await;
    assert_eq!(second["output"], "hello v2", "{second}");

    // Broken: the last good version stays, and one line names the file.
    write(
        &tools.join("greet.yaml"),
        "name: greet\ndescription: [broken\n",
    );
    let start = Instant::now();
    while lines_naming(&log, "greet.yaml").is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no line about the broken file"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, third) = run(&server, "greeter").await;
    assert_eq!(third["output"], "hello v2", "{third}");
    // Several more looks at the folder: still one line.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let said = lines_naming(&log, "greet.yaml");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("keeping the last good version"),
        "{said:?}"
    );

    // Added: an agent whose tool did not exist runs once the file is there.
    let (status, _) = run(&server, "adder").await;
    assert_ne!(status, 200);
    write(
        &tools.join("extra.yaml"),
        &greet("extra").replace("name: greet", "name: extra"),
    );
    let (status, added) = run(&server, "adder").await;
    assert_eq!(
        (status, added["output"].as_str()),
        (200, Some("hello extra")),
        "{added}"
    );

    // Removed.
    std::fs::remove_file(tools.join("extra.yaml")).unwrap();
    let (status, removed) = run(&server, "adder").await;
    assert_ne!(status, 200, "{removed}");
    assert!(removed.to_string().contains("extra"), "{removed}");
}

#[test]
fn the_mcp_python_sdk_sees_toolgate_mcp_reload_its_tools() {
    let python = serving::python("hot_reload");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (tools, ws) = (root.join("tools"), root.join("ws"));
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py");
    write(
        &tools.join("greet.yaml"),
        "name: greet\ndescription: Greets.\npermission: auto\nentry:\n  type: command\n  command: sh\n  args: [-c, \"echo hello v1\"]\n",
    );
    write(
        &tools.join("clock.yaml"),
        &format!(
            // It writes its pid file in ws, not in its own workspace: said in its sandbox.
            "mcp_server: clock\ncommand: {}\nargs: [{}, {}]\npermission: auto\nsandbox: {{write: [{}]}}\n",
            python.display(),
            here.join("clock_server.py").display(),
            ws.join("pid1").display(),
            ws.display()
        ),
    );
    let agent = root.join("agent.yaml");
    std::fs::write(&agent, "name: reloader\ntools: [greet, clock__now]\n").unwrap();
    let errlog = root.join("mcp.log");
    let out = Command::new(&python)
        .arg(here.join("test_hot_reload.py"))
        .arg(bin())
        .arg(root.join("t.db"))
        .arg(&agent)
        .arg(&tools)
        .arg(&ws)
        .arg(&errlog)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let log = std::fs::read_to_string(&errlog).unwrap_or_default();
    assert!(
        out.status.success(),
        "test_hot_reload.py failed: {stdout}\n{}\ntoolgate's stderr:\n{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert!(summary["list_changed"].as_u64().unwrap() >= 3, "{summary}");
    let said = lines_naming(&errlog, "greet.yaml");
    assert_eq!(said.len(), 1, "{log}");
    assert!(
        said[0].contains("keeping the last good version"),
        "{said:?}"
    );
}
