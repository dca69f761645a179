//! The workspace's crate layering, checked from `cargo metadata --no-deps` (no build):
//! each crate's normal and build dependencies on workspace crates stay within the set
//! the table below allows it, nothing but the server and the root package takes the
//! HTTP server stack (`axum`, `hyper`), and nothing takes `toolgate-test-support` but
//! as a dev-dependency. Dev-dependencies are free: a crate's tests may use any crate.
#![allow(clippy::too_many_lines, reason = "scenario tests read best whole")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Each workspace crate: its layer, and the workspace crates it may take as a normal
/// or build dependency (each from a lower layer).
const LAYERS: &[(&str, u8, &[&str])] = &[
    ("toolgate-parse", 0, &[]),
    // The parser for Python: the parser alone.
    ("toolgate-parse-py", 1, &["toolgate-parse"]),
    ("toolgate-protocol", 0, &[]),
    ("toolgate-sandbox", 0, &[]),
    ("toolgate-telemetry", 1, &["toolgate-protocol"]),
    (
        "toolgate-model",
        1,
        &["toolgate-parse", "toolgate-protocol"],
    ),
    (
        "toolgate-store",
        2,
        &[
            "toolgate-protocol",
            "toolgate-telemetry",
            "toolgate-sandbox",
        ],
    ),
    (
        "toolgate-tool",
        2,
        &[
            "toolgate-parse",
            "toolgate-protocol",
            "toolgate-sandbox",
            "toolgate-telemetry",
        ],
    ),
    ("toolgate-sources", 3, BELOW_SOURCES),
    // Knowledge bases: their store and their tool, beside the tool sources.
    ("toolgate-knowledge", 3, BELOW_SOURCES),
    // The program hands the runtime its tool sources: toolgate-sources is no normal
    // dependency of the runtime or the server (a dev-dependency for their tests is).
    ("toolgate-runtime", 4, BELOW_RUNTIME),
    ("toolgate-server", 5, BELOW_SERVER),
    ("toolgate", 6, ALL_LIBRARIES),
    // A program embedding the crates is a composition root like the binary.
    ("toolgate-embed-example", 6, ALL_LIBRARIES),
    // Dev-only, above everything: it may use any library crate, none may use it.
    ("toolgate-test-support", 7, ALL_LIBRARIES),
];

/// Layers 0 to 2.
const BELOW_SOURCES: &[&str] = &[
    "toolgate-parse",
    "toolgate-protocol",
    "toolgate-sandbox",
    "toolgate-telemetry",
    "toolgate-model",
    "toolgate-store",
    "toolgate-tool",
];

/// Layers 0 to 2 and the runtime (not the sources).
const BELOW_RUNTIME: &[&str] = &[
    "toolgate-parse",
    "toolgate-protocol",
    "toolgate-sandbox",
    "toolgate-telemetry",
    "toolgate-model",
    "toolgate-store",
    "toolgate-tool",
    "toolgate-knowledge",
];

const BELOW_SERVER: &[&str] = &[
    "toolgate-parse",
    "toolgate-protocol",
    "toolgate-sandbox",
    "toolgate-telemetry",
    "toolgate-model",
    "toolgate-store",
    "toolgate-tool",
    "toolgate-knowledge",
    "toolgate-runtime",
];

const ALL_LIBRARIES: &[&str] = &[
    "toolgate-parse",
    "toolgate-protocol",
    "toolgate-sandbox",
    "toolgate-telemetry",
    "toolgate-model",
    "toolgate-store",
    "toolgate-tool",
    "toolgate-sources",
    "toolgate-knowledge",
    "toolgate-runtime",
    "toolgate-server",
];

/// The crates that may take the HTTP server stack as a normal dependency.
const HTTP_SERVER_CRATES: &[&str] = &["toolgate-server", "toolgate"];
const HTTP_SERVER_STACK: &[&str] = &["axum", "hyper"];

/// Each workspace package's name and its dependencies: (name, kind), kind `normal`,
/// `build` or `dev`.
fn workspace() -> BTreeMap<String, Vec<(String, String)>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(toolgate_test_support::workspace_root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    let kind = d["kind"].as_str().unwrap_or("normal").to_string();
                    (d["name"].as_str().unwrap().to_string(), kind)
                })
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

fn layer(name: &str) -> Option<(u8, &'static [&'static str])> {
    LAYERS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, layer, allowed)| (*layer, *allowed))
}

#[test]
fn the_table_only_allows_lower_layers() {
    for (name, level, allowed) in LAYERS {
        for dep in *allowed {
            let (below, _) = layer(dep).unwrap_or_else(|| panic!("{dep} is not in the table"));
            assert!(
                below < *level,
                "the table lets {name} (layer {level}) take {dep} (layer {below})"
            );
        }
    }
}

#[test]
fn no_crate_depends_on_one_above_it() {
    let packages = workspace();
    let mut problems = Vec::new();
    for (name, deps) in &packages {
        let Some((level, allowed)) = layer(name) else {
            problems.push(format!(
                "{name} is a workspace crate missing from the layer table in {}",
                file!()
            ));
            continue;
        };
        for (dep, kind) in deps {
            if kind == "dev" || !packages.contains_key(dep) {
                continue;
            }
            if !allowed.contains(&dep.as_str()) {
                let above = layer(dep).map_or("?".to_string(), |(l, _)| l.to_string());
                problems.push(format!(
                    "{name} (layer {level}) -> {dep} (layer {above}) as a {kind} dependency; {name} may take only {allowed:?}"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "upward or forbidden edges in the crate graph:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_test_support_crate_is_a_dev_dependency_only() {
    let edges: BTreeSet<String> = workspace()
        .into_iter()
        .flat_map(|(name, deps)| {
            deps.into_iter()
                .filter(|(dep, kind)| dep == "toolgate-test-support" && kind != "dev")
                .map(move |(_, kind)| {
                    format!("{name} takes toolgate-test-support as a {kind} dependency")
                })
        })
        .collect();
    assert!(edges.is_empty(), "{edges:#?}");
}

#[test]
fn only_the_server_takes_the_http_server_stack() {
    let edges: BTreeSet<String> = workspace()
        .into_iter()
        .filter(|(name, _)| !HTTP_SERVER_CRATES.contains(&name.as_str()))
        .flat_map(|(name, deps)| {
            deps.into_iter()
                .filter(|(dep, kind)| HTTP_SERVER_STACK.contains(&dep.as_str()) && kind != "dev")
                .map(move |(dep, kind)| {
                    format!("{name} takes {dep} as a {kind} dependency (only {HTTP_SERVER_CRATES:?} may)")
                })
        })
        .collect();
    assert!(edges.is_empty(), "{edges:#?}");
}
