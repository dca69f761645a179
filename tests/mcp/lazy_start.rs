//! MCP servers start at their first call: with their tool lists kept, `tools list` and
//! `tools show` on a folder declaring two servers start neither; a run that calls one
//! of their tools starts that one. The declared command notes each start in a marker
//! file before it becomes mcp-server-time.

use std::path::Path;
use std::process::Output;

use super::{command, json_out, peers, stderr, world};

/// Runs toolgate in `dir` with the kept tool lists in `dir/cache`.
fn cli(args: &[&str], dir: &Path) -> Output {
    command(args, dir)
        .env("TOOLGATE_CACHE_DIR", dir.join("cache"))
        .output()
        .unwrap()
}

/// The servers started so far, one line each (the server's name).
fn starts(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("started.log"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn listing_starts_no_server_once_its_tools_are_kept_and_a_call_starts_it() {
    let w = world(&[]);
    let dir = w.path();
    // Its command is sh, noting the start in started.log before it becomes
    // mcp-server-time (python is named in the arguments, as the sandbox wants).
    for name in ["one", "two"] {
        std::fs::write(
            dir.join(format!("tools/{name}.yaml")),
            format!(
                "mcp_server: {name}\ncommand: sh\nargs: [-c, 'echo {name} >> started.log; \
                 exec \"$0\" -m mcp_server_time --local-timezone UTC', {}]\npermission: auto\n",
                peers().python.display()
            ),
        )
        .unwrap();
    }
    let agent = "name: clock\nmodel: scripted:replies.yaml\ntools: [one__get_current_time]\n";
    let replies = "replies:\n  - content: Checking.\n    tool_calls:\n      \
                   - {id: call_1, name: one__get_current_time, arguments: {timezone: UTC}}\n  \
                   - content: Done.\n";
    std::fs::write(dir.join("agent.yaml"), agent).unwrap();
    std::fs::write(dir.join("replies.yaml"), replies).unwrap();

    // The first load ever keeps no list yet: each server is started once to list its
    // tools, and stopped.
    let first = cli(&["tools", "list", "--json"], dir);
    assert!(first.status.success(), "{}", stderr(&first));
    let mut started = starts(dir);
    started.sort();
    assert_eq!(started, ["one", "two"], "each listed once");
    std::fs::remove_file(dir.join("started.log")).unwrap();

    // Lists kept: listing, showing and checking an agent's tools start nothing.
    let listed = cli(&["tools", "list", "--json"], dir);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert_eq!(stderr(&listed), "", "no load warnings");
    let names = json_out(&listed).to_string();
    assert!(
        names.contains("one__get_current_time") && names.contains("two__convert_time"),
        "{names}"
    );
    let shown = cli(&["tools", "show", "two__get_current_time", "--json"], dir);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(starts(dir).is_empty(), "started: {:?}", starts(dir));

    // A run that calls one server's tool starts that server, and only it.
    let run = cli(&["run", "--agent", "agent.yaml", "--json", "time?"], dir);
    assert!(run.status.success(), "{}", stderr(&run));
    let out = String::from_utf8_lossy(&run.stdout);
    let finished: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|e: &serde_json::Value| e["type"] == "tool.finished")
        .collect();
    assert_eq!(finished.len(), 1, "{out}");
    assert_eq!(finished[0]["status"], "succeeded", "{out}");
    assert_eq!(starts(dir), ["one"]);
}
