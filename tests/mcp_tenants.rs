//! A stdio MCP server is one process per tenant (issue 42, item 2), and none outlives
//! a killed toolgate (item 4): the official Python SDK's server answers `where` with
//! its pid and folder, called by runs of tenants acme and globex and of the default
//! tenant on one `serve`. Before, every tenant's call reached the same process in the
//! same folder. Then `serve` is killed with `kill -9` in the middle of a `nap` call of
//! each tenant's process, and `/proc` must show none of them alive.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolgate_test_support::alive_with;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_test_support::serving::identity::keys_create;
use toolgate_test_support::serving::{self, Server, Site};

fn server_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/tenant_server.py")
}

fn site(python: &Path) -> Site {
    let site = Site::new();
    let root = site.path();
    let write = |p: &str, text: &str| std::fs::write(root.join(p), text).unwrap();
    write(
        "tools/tenant.yaml",
        &format!(
            "mcp_server: tenant\ncommand: {}\nargs: [{}]\npermission: auto\ncredentials: {{TENANT_TOKEN: \"${{secret:tenant_token}}\"}}\n",
            python.display(),
            server_script().display()
        ),
    );
    for (agent, tool) in [("probe", "where"), ("napper", "nap")] {
        write(
            &format!("agents/{agent}.yaml"),
            &format!(
                "name: {agent}\nmodel: scripted:{agent}.replies.yaml\ninstructions: Go.\ntools: [tenant__{tool}]\n"
            ),
        );
        write(
            &format!("agents/{agent}.replies.yaml"),
            &format!(
                "replies:\n  - content: Asking.\n    tool_calls: [{{id: call_1, name: tenant__{tool}, arguments: {{}}}}]\n  - content: Done.\n"
            ),
        );
    }
    site
}

/// Stores `value` as the secret `tenant_token` of `tenant` (`None`: the shared one).
fn secret(site: &Site, tenant: Option<&str>, value: &str) {
    let mut cmd = std::process::Command::new(serving::bin());
    cmd.arg("--db").arg(site.db());
    if let Some(t) = tenant {
        cmd.args(["--tenant", t]);
    }
    let out = cmd
        .args([
            "secrets",
            "set",
            "tenant_token",
            "--from-env",
            "TOKEN_VALUE",
        ])
        .env("TOKEN_VALUE", value)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The digest `tenant_server.py` answers for a token.
fn digest(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()[..16]
        .to_string()
}

/// What `where` said to a run of `cred`'s tenant.
async fn where_for(server: &Server, cred: &str) -> Value {
    let calls = server.completed_calls(cred, "probe", "Where?").await;
    let call = &calls[0];
    assert_eq!(call["status"], "succeeded", "{call}");
    found(&call["result"]).unwrap_or_else(|| panic!("no answer of `where` in {call}"))
}

/// The object `where` answered, wherever the result holds it (a text part, a string
/// of structured content).
fn found(v: &Value) -> Option<Value> {
    match v {
        // The text parts, one per line, after the structured content.
        Value::String(s) => s.lines().find_map(|line| {
            let parsed = serde_json::from_str::<Value>(line).ok()?;
            if parsed.get("pid").is_some() {
                Some(parsed)
            } else {
                found(&parsed)
            }
        }),
        Value::Array(items) => items.iter().find_map(found),
        Value::Object(o) if o.contains_key("pid") => Some(v.clone()),
        Value::Object(o) => o.values().find_map(found),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_tenant_has_its_own_mcp_process_and_folder_and_none_outlives_kill_9() {
    let python = serving::python("mcp_tenants");
    let site = site(&python);
    let state = tempfile::tempdir().unwrap();
    let acme = keys_create(&site, "acme", "acme-client", "client", "");
    let globex = keys_create(&site, "globex", "globex-client", "client", "");
    let admin = "admin-key-4e1d0b";
    secret(&site, None, "shared-token-1");
    secret(&site, Some("acme"), "acme-token-2");
    secret(&site, Some("globex"), "globex-token-3");
    let state_dir = state.path().display().to_string();
    let mut server = Server::start_env(
        &site,
        Some(admin),
        &[],
        &[("XDG_STATE_HOME", state_dir.as_str())],
    );
    let a = where_for(&server, &acme).await;
    let g = where_for(&server, &globex).await;
    let d = where_for(&server, admin).await;
    let a2 = where_for(&server, &acme).await;
    assert_eq!(
        a["pid"], a2["pid"],
        "one process per tenant, kept between calls"
    );
    assert_ne!(a["pid"], g["pid"], "acme and globex share a process");
    assert_ne!(a["pid"], d["pid"]);
    assert_ne!(g["pid"], d["pid"]);
    // Each process has its own tenant's secret in its environment.
    assert_eq!(a["token"], digest("acme-token-2"), "{a}");
    assert_eq!(g["token"], digest("globex-token-3"), "{g}");
    assert_eq!(d["token"], digest("shared-token-1"), "{d}");
    let folder = |v: &Value| PathBuf::from(v["cwd"].as_str().unwrap());
    assert!(
        folder(&a).ends_with("toolgate/mcp/tenant/tenants/acme"),
        "{a}"
    );
    assert!(
        folder(&g).ends_with("toolgate/mcp/tenant/tenants/globex"),
        "{g}"
    );
    assert!(
        folder(&a).starts_with(state.path().canonicalize().unwrap()),
        "{a}"
    );
    assert_ne!(folder(&a), folder(&d));
    // Each wrote `mine.txt` in its own folder only.
    assert_eq!(
        std::fs::read_to_string(folder(&a).join("mine.txt")).unwrap(),
        "here\nhere\n"
    );
    assert_eq!(
        std::fs::read_to_string(folder(&g).join("mine.txt")).unwrap(),
        "here\n"
    );

    // Each tenant's process naps; toolgate is killed mid-call.
    let script = server_script().display().to_string();
    for cred in [acme.as_str(), globex.as_str()] {
        let (client, url, cred) = (
            server.client.clone(),
            server.url("/v1/runs"),
            cred.to_string(),
        );
        tokio::spawn(async move {
            let _ = client
                .post(url)
                .bearer_auth(cred)
                .json(&json!({"agent": "napper", "input": "Nap."}))
                .send()
                .await;
        });
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(folder(&a).join("napping.txt").exists() && folder(&g).join("napping.txt").exists()) {
        assert!(Instant::now() < deadline, "the naps never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(alive_with(&script).len() >= 3, "{:?}", alive_with(&script));
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !alive_with(&script).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        alive_with(&script),
        Vec::<String>::new(),
        "MCP server processes outlived toolgate's kill -9"
    );
}
