//! Allow-lists, tried as an attacker would (issue 42, item 8): a key limited to agent
//! `alpha` cannot start `beta` through any door (runs, responses, `/mcp/{agent}`: 403,
//! nothing recorded); a key limited to tool `x` cannot get `y` run (the model asks for
//! both; `x` writes its mark, `y`'s mark never appears, and `y`'s call is recorded as
//! refused by the allow-list); a tenant's list (`serve --tenants`) meets a key's; a JWT's
//! `agents`/`tools` claims limit it the same way. `whoami` shows what is left.
//!
//! On the binary before allow-lists every test here fails: `keys create` has no
//! `--agents`/`--tools`, `serve` no `--tenants`, and a JWT's claims were ignored (agent
//! `alpha` started, `y` ran).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use serving::identity::{SECRET, jwt, now};
use serving::{Server, Site, bin, serve_command, toolgate_in};

/// A site with agents `alpha`, `beta` and `gamma`, each calling tools `x` and `y` in
/// one turn and then answering; `x` and `y` write `marks/x` and `marks/y` (outside any
/// sandbox, so that only the gate stands between a call and its mark).
fn site() -> (Site, PathBuf) {
    let site = Site::new();
    let marks = site.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    for t in ["x", "y"] {
        std::fs::write(
            site.path().join(format!("tools/{t}.yaml")),
            format!(
                "name: {t}\ndescription: Leaves a mark.\npermission: auto\nsandbox: off\nentry:\n  type: command\n  command: sh\n  args: [-c, \"echo ran > {}\"]\n",
                marks.join(t).display()
            ),
        )
        .unwrap();
    }
    let both = "  - content: Working.\n    tool_calls:\n      - {id: call_x, name: x, arguments: {}}\n      - {id: call_y, name: y, arguments: {}}\n  - content: Done.\n";
    for agent in ["alpha", "beta", "gamma"] {
        site.agent(agent, "[x, y]", both);
    }
    (site, marks)
}

/// `keys create --json` in `tenant` with `flags` (`--agents`, `--tools`): the key.
fn key(site: &Site, tenant: &str, name: &str, flags: &[&str]) -> String {
    let mut args = vec![
        "--tenant", tenant, "keys", "create", "--name", name, "--role", "client", "--json",
    ];
    args.extend_from_slice(flags);
    let out = toolgate_in(site.path(), &site.db(), &args);
    assert!(
        out.status.success(),
        "keys create {flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["key"].as_str().unwrap().to_string()
}

/// The server with `key` as the credential its helpers send.
fn with_key(mut server: Server, key: &str) -> Server {
    server.key = Some(key.to_string());
    server
}

/// Every run in the database, as `toolgate runs --json` (the admin's view) lists them.
fn runs(site: &Site) -> Vec<Value> {
    let out = toolgate_in(site.path(), &site.db(), &["runs", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().cloned().unwrap_or_default()
}

/// The error object of a 403: one `error` with a kind and a message.
fn forbidden(status: u16, body: &Value, what: &str) {
    assert_eq!(status, 403, "{what}: {body}");
    assert_eq!(body["error"]["type"], "forbidden", "{what}: {body}");
    assert!(body["error"]["message"].is_string(), "{what}: {body}");
}

/// Starts `agent` through every door: `/v1/runs`, `/v1/responses`, `/mcp/{agent}`;
/// each answer's status and body.
async fn every_door(server: &Server, agent: &str) -> Vec<(&'static str, u16, Value)> {
    let (s1, b1) = server
        .post("/v1/runs", json!({"agent": agent, "input": "Go."}))
        .await;
    let (s2, b2) = server
        .post(
            "/v1/responses",
            json!({"model": format!("agent:{agent}"), "input": "Go."}),
        )
        .await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "attacker", "version": "1"}}});
    let r = server
        .client
        .post(server.url(&format!("/mcp/{agent}")))
        .bearer_auth(server.key.as_deref().unwrap_or_default())
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .unwrap();
    let s3 = r.status().as_u16();
    let b3 = r.json().await.unwrap_or(Value::Null);
    vec![
        ("/v1/runs", s1, b1),
        ("/v1/responses", s2, b2),
        ("/mcp", s3, b3),
    ]
}

/// The call records of run `id`, by tool.
async fn calls(server: &Server, id: &str) -> Vec<Value> {
    let (s, page) = server.get(&format!("/v1/calls?run_id={id}")).await;
    assert_eq!(s, 200, "{page}");
    page["calls"].as_array().cloned().unwrap_or_default()
}

/// Runs `agent` as `server`'s caller and checks that `x` ran and `y` did not: its mark
/// is absent, its call is recorded as denied by the policy (the allow-list), and the
/// model was told so.
async fn x_runs_y_is_refused(server: &Server, agent: &str, marks: &Path) {
    let (s, run) = server
        .post("/v1/runs", json!({"agent": agent, "input": "Go."}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    assert!(marks.join("x").exists(), "the allowed tool x did not run");
    assert!(
        !marks.join("y").exists(),
        "tool y ran although the allow-list leaves it out"
    );
    let records = calls(server, run["id"].as_str().unwrap()).await;
    let y = records
        .iter()
        .find(|c| c["tool"] == "y")
        .unwrap_or_else(|| panic!("y's call is not recorded: {records:?}"));
    assert_eq!(y["status"], "denied", "{y}");
    assert_eq!(y["error_kind"], "policy", "{y}");
    let said = y.to_string();
    assert!(
        said.contains("allow-list"),
        "the record does not say why: {y}"
    );
    let x = records.iter().find(|c| c["tool"] == "x").unwrap();
    assert_eq!(x["status"], "succeeded", "{x}");
}

/// A key limited to agent `alpha` cannot start `beta` through any door: 403 with one
/// error object each, and no run of `beta` is recorded; `alpha` starts, `whoami` and
/// `/v1/agents` show only `alpha`.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_limited_to_one_agent_cannot_start_another() {
    let (site, _marks) = site();
    let limited = key(&site, "a", "only-alpha", &["--agents", "alpha"]);
    let server = with_key(site.serve(None), &limited);
    for (door, status, body) in every_door(&server, "beta").await {
        forbidden(status, &body, door);
    }
    assert!(
        runs(&site).is_empty(),
        "a refused start left a run: {:?}",
        runs(&site)
    );
    let (s, run) = server
        .post("/v1/runs", json!({"agent": "alpha", "input": "Go."}))
        .await;
    assert_eq!(s, 200, "{run}");
    let agents: Vec<Value> = runs(&site).iter().map(|r| r["agent"].clone()).collect();
    assert_eq!(agents, [json!("alpha")]);
    let (_, me) = server.get("/v1/whoami").await;
    assert_eq!(me["agents"], json!(["alpha"]), "{me}");
    assert_eq!(me["tools"], Value::Null, "{me}");
    let (_, listed) = server.get("/v1/agents").await;
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, ["alpha"], "{listed}");
}

/// A key limited to tool `x`: the model asks for `x` and `y`; `x` runs, `y` never does
/// and is recorded as refused; `/v1/tools` shows only `x`.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_limited_to_one_tool_cannot_get_another_run() {
    let (site, marks) = site();
    let limited = key(&site, "a", "only-x", &["--tools", "x"]);
    let server = with_key(site.serve(None), &limited);
    x_runs_y_is_refused(&server, "alpha", &marks).await;
    let (_, me) = server.get("/v1/whoami").await;
    assert_eq!(me["tools"], json!(["x"]), "{me}");
    let (_, tools) = server.get("/v1/tools").await;
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["x"], "{tools}");
}

/// A tenant's allow-list (`serve --tenants`) meets its key's: tenant `a` allows agents
/// alpha and beta and tool x; the key allows beta and gamma, x and y. Only beta starts
/// (alpha: the key says no; gamma: the tenant says no), and only x runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_allow_list_meets_its_keys() {
    let (site, marks) = site();
    let tenants = site.path().join("tenants.yaml");
    std::fs::write(
        &tenants,
        "a:\n  agents: [alpha, beta]\n  tools: [x]\nb:\n  tools: []\n",
    )
    .unwrap();
    let wide = key(
        &site,
        "a",
        "wide",
        &["--agents", "beta,gamma", "--tools", "x,y"],
    );
    let server = with_key(
        Server::start(&site, None, &["--tenants", tenants.to_str().unwrap()]),
        &wide,
    );
    let (_, me) = server.get("/v1/whoami").await;
    assert_eq!(
        (&me["agents"], &me["tools"]),
        (&json!(["beta"]), &json!(["x"])),
        "{me}"
    );
    for agent in ["alpha", "gamma"] {
        for (door, status, body) in every_door(&server, agent).await {
            forbidden(status, &body, &format!("{agent} at {door}"));
        }
    }
    assert!(runs(&site).is_empty(), "{:?}", runs(&site));
    x_runs_y_is_refused(&server, "beta", &marks).await;
}

/// A JWT's `agents` and `tools` claims limit it like a key's flags.
#[tokio::test(flavor = "multi_thread")]
async fn a_jwts_allow_list_claims_limit_it() {
    let (site, marks) = site();
    let secret = site.path().join("jwt.secret");
    std::fs::write(&secret, SECRET).unwrap();
    let mut cmd = serve_command(
        &site,
        Command::new(bin()),
        &["--jwt-secret-file", secret.to_str().unwrap()],
    );
    let token = jwt(
        SECRET,
        json!({"sub": "app-user", "tenant": "a", "roles": ["client"],
               "agents": ["beta"], "tools": "x", "exp": now() + 600}),
    );
    let server = with_key(Server::started(&mut cmd, None), &token);
    for (door, status, body) in every_door(&server, "alpha").await {
        forbidden(status, &body, door);
    }
    assert!(runs(&site).is_empty(), "{:?}", runs(&site));
    x_runs_y_is_refused(&server, "beta", &marks).await;
    let (_, me) = server.get("/v1/whoami").await;
    assert_eq!(
        (&me["agents"], &me["tools"]),
        (&json!(["beta"]), &json!(["x"])),
        "{me}"
    );
}

/// One JSON-RPC message to `/mcp/{agent}` in `session` (if any): the session id the
/// server gives and the answer (read from JSON or from the SSE stream's data).
async fn mcp(
    server: &Server,
    agent: &str,
    session: Option<&str>,
    message: Value,
) -> (Option<String>, Value) {
    let mut r = server
        .client
        .post(server.url(&format!("/mcp/{agent}")))
        .bearer_auth(server.key.as_deref().unwrap_or_default())
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&message);
    if let Some(id) = session {
        r = r.header("mcp-session-id", id);
    }
    let r = r.send().await.unwrap();
    assert!(r.status().is_success(), "{message}: {}", r.status());
    let id = r
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = r.text().await.unwrap();
    let answer = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    (id, answer)
}

/// Over the MCP gateway, a key limited to tool `x` is listed `x` alone, and a
/// `tools/call` of `y` is refused (an error result), recorded, and never runs.
#[tokio::test(flavor = "multi_thread")]
async fn over_mcp_a_key_limited_to_one_tool_is_offered_it_alone_and_refused_the_other() {
    let (site, marks) = site();
    let limited = key(&site, "a", "only-x-mcp", &["--tools", "x"]);
    let server = with_key(site.serve(None), &limited);
    let (session, _) = mcp(
        &server,
        "alpha",
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "attacker", "version": "1"}}}),
    )
    .await;
    let session = session.expect("a session id");
    mcp(
        &server,
        "alpha",
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let (_, listed) = mcp(
        &server,
        "alpha",
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["x"], "{listed}");
    let (_, called) = mcp(
        &server,
        "alpha",
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "y", "arguments": {}}}),
    )
    .await;
    assert_eq!(called["result"]["isError"], true, "{called}");
    assert!(!marks.join("y").exists(), "y ran over MCP");
    let (_, page) = server.get("/v1/calls?tool=y").await;
    let y = &page["calls"][0];
    assert_eq!(
        (&y["status"], &y["error_kind"]),
        (&json!("denied"), &json!("policy")),
        "{page}"
    );
}

/// A key limited to agent `lead` cannot reach agent `beta` through `lead`'s sub-agent:
/// the call is refused (`policy`) and no run of `beta` is recorded. Before, the agent
/// list was checked only where a run starts from outside.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_limited_to_one_agent_does_not_reach_another_as_its_sub_agent() {
    let (site, marks) = site();
    std::fs::write(
        site.path().join("agents/lead.yaml"),
        "name: lead\nmodel: scripted:lead.replies.yaml\ninstructions: Delegate.\ntools: []\nsubagents:\n  helper: beta.yaml\n",
    )
    .unwrap();
    std::fs::write(
        site.path().join("agents/lead.replies.yaml"),
        "replies:\n  - content: Delegating.\n    tool_calls: [{id: call_h, name: helper, arguments: {task: Go.}}]\n  - content: Done.\n",
    )
    .unwrap();
    let limited = key(&site, "a", "only-lead", &["--agents", "lead"]);
    let server = with_key(site.serve(None), &limited);
    let (s, run) = server
        .post("/v1/runs", json!({"agent": "lead", "input": "Go."}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    let (_, calls) = server
        .get(&format!("/v1/calls?run_id={}", run["id"].as_str().unwrap()))
        .await;
    let call = &calls["calls"][0];
    assert_eq!(call["tool"], "helper", "{calls}");
    assert_eq!(call["status"], "failed", "{call}");
    assert_eq!(call["error_kind"], "policy", "{call}");
    let agents: Vec<Value> = runs(&site).iter().map(|r| r["agent"].clone()).collect();
    assert_eq!(agents, [json!("lead")], "beta ran as a sub-agent");
    assert!(!marks.join("x").exists(), "beta's tool ran");
}
