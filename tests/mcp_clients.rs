//! Held CONFIRM calls end with the MCP clients people run (issue 31, point 1):
//! the OpenAI Agents SDK (PyPI `openai-agents`, `MCPServerStreamableHttp` on its default
//! 5 s timeout) against `/mcp/{agent}`: the held call is cancelled when the SDK gives up
//! and never runs, even when approved later; the official `mcp` SDK: a retried identical
//! call joins the held one (seen in its progress notifications), one approval answers
//! both, one run; `toolgate mcp` over stdio: a client that leaves while a call is held
//! leaves it cancelled; and the MCP Inspector CLI (npm `@modelcontextprotocol/inspector`,
//! on Node 22) lists, calls an AUTO tool, and gets the default hold's "not approved in
//! time" for a CONFIRM one. Python and Node come from tests/py/setup.sh and
//! tests/node/setup.sh; these tests fail, never skip, without them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use serving::Site;

const KEY: &str = "mcp-clients-key";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn last_json(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the last line is not JSON ({e}): {stdout}"))
}

/// A site whose agents hold write_file: `keeper` and `joiner` for 120 s, `quick` for
/// the gateway's default.
fn site() -> Site {
    let site = Site::new();
    for (name, hold) in [
        ("keeper", "mcp_hold: 120s\n"),
        ("joiner", "mcp_hold: 120s\n"),
        ("quick", ""),
    ] {
        std::fs::write(
            site.path().join(format!("agents/{name}.yaml")),
            format!(
                "name: {name}\nmodel: scripted:plain.replies.yaml\ninstructions: Write.\n\
                 tools: [calculator, write_file]\n{hold}"
            ),
        )
        .unwrap();
    }
    site
}

fn holds_script(python: &Path, mode: &str, base: &str) -> Value {
    let stdout = serving::ran(
        &format!("tests/py/test_mcp_holds.py {mode}"),
        Command::new(python)
            .arg(root().join("tests/py/test_mcp_holds.py"))
            .args([mode, base, KEY])
            .output()
            .unwrap(),
    );
    last_json(&stdout)
}

#[test]
fn the_agents_sdk_giving_up_cancels_the_held_call_for_good() {
    let python = serving::python("the MCP client tests");
    let site = site();
    let server = site.serve(Some(KEY));
    let out = holds_script(&python, "agents", &server.base);
    assert!(out["keeper_run"].is_string(), "{out}");
    assert_eq!(out["keeper_late_approve"], 409, "{out}");
    assert!(out["quick_run"].is_string(), "{out}");
    // Nothing was written, then or later.
    assert!(!site.path().join("ws/agents_sdk.txt").exists());
    assert!(!site.path().join("ws/quick.txt").exists());
    let shown = serving::toolgate_in(
        site.path(),
        &site.db(),
        &["show", out["keeper_run"].as_str().unwrap(), "--json"],
    );
    let run: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(run["status"], "cancelled", "{run}");
}

#[test]
fn a_retried_identical_call_joins_the_held_one() {
    let python = serving::python("the MCP client tests");
    let site = site();
    let server = site.serve(Some(KEY));
    let out = holds_script(&python, "join", &server.base);
    assert_eq!(out["runs"], 1, "{out}");
    assert!(out["progress"].as_u64().unwrap() >= 1, "{out}");
    assert_eq!(
        std::fs::read_to_string(site.path().join("ws/joined.txt")).unwrap(),
        "written once"
    );
}

#[test]
fn the_mcp_inspector_cli_lists_calls_and_reads_the_hold_s_end() {
    let tools = serving::node_tools("the MCP client tests");
    let modules = tools.join("node_modules");
    let node = modules.join("node/bin/node");
    let cli = modules.join("@modelcontextprotocol/inspector-cli/build/index.js");
    let site = site();
    let agent = site.path().join("agents/quick.yaml");
    let inspect = |extra: &[&str]| -> Value {
        let mut cmd = Command::new(&node);
        cmd.arg(&cli)
            .arg(serving::bin())
            .args(["mcp", "--agent"])
            .arg(&agent)
            .arg("--tools")
            .arg(site.path().join("tools"))
            .arg("--workspace")
            .arg(site.path().join("ws"))
            .arg("--db")
            .arg(site.db())
            .args(extra)
            .env_remove("TOOLGATE_DB");
        let stdout = serving::ran(
            &format!("the MCP Inspector CLI {extra:?}"),
            cmd.output().unwrap(),
        );
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
    };
    let listed = inspect(&["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["calculator", "write_file"], "{listed}");
    let sum = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "calculator",
        "--tool-arg",
        "expression=6*7",
    ]);
    assert_ne!(sum["isError"], true, "{sum}");
    assert!(sum.to_string().contains("42"), "{sum}");
    let held = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "write_file",
        "--tool-arg",
        "path=inspected.txt",
        "--tool-arg",
        "content=never",
    ]);
    assert_eq!(held["isError"], true, "{held}");
    assert!(held.to_string().contains("not approved in time"), "{held}");
    assert!(!site.path().join("ws/inspected.txt").exists());
}
