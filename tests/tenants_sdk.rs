//! Tenant isolation through the official SDKs (tests/py/test_tenants.py in the venv of
//! tests/py/setup.sh, which fails, never skips, when it cannot be made): the `openai`
//! package with tenant A's client key cannot retrieve or continue tenant B's response,
//! and the `mcp` package with A's key lists and calls A's tools, its calls recorded in
//! A's tenant only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use serving::{Server, Site, bin};

fn key(site: &Site, tenant: &str, name: &str, role: &str) -> String {
    let out = Command::new(bin())
        .arg("--db")
        .arg(site.db())
        .args([
            "--tenant", tenant, "keys", "create", "--name", name, "--role", role, "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["key"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_sdks_see_only_their_tenant() {
    let python = serving::python("the tenant SDK test");
    let site = Site::new();
    let a = key(&site, "a", "a-app", "client");
    let b = key(&site, "b", "b-app", "client");
    let approver = key(&site, "a", "a-boss", "approver");
    let mut server = Server::start(&site, None, &[]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/test_tenants.py");
    let out = Command::new(&python)
        .arg(script)
        .args([&server.base, &a, &b, &approver])
        .output()
        .expect("the venv's python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "test_tenants.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    // Each tenant's MCP call is recorded in its tenant: A's key sees its own call and
    // not B's.
    server.key = Some(a.clone());
    let (_, calls) = server.get("/v1/calls?tool=calculator").await;
    assert_eq!(calls["total"], 1, "{calls}");
    let (_, runs) = server.get("/v1/runs?limit=100").await;
    let runs = runs.as_array().unwrap().clone();
    assert!(runs.iter().all(|r| r["tenant"] == "a"), "{runs:?}");
    assert!(
        runs.iter()
            .any(|r| r["agent"] == "assistant" && r["started_by"] == "a-app")
    );
    let (status, _) = server
        .get(&format!(
            "/v1/responses/{}",
            seen["b_response"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, 404);
    server.key = Some(b);
    let (_, calls) = server.get("/v1/calls?tool=calculator").await;
    assert_eq!(calls["total"], 1, "{calls}");
}
