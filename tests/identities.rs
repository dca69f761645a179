//! Tenants and roles on every door of a real `toolgate serve`: the table of every
//! route of `/openapi.json` plus the pages, `/mcp/{agent}` and the SSE streams × who
//! calls (no key, a revoked key, bad JWTs, each tenant's client and approver, admin)
//! against runs of tenant A; lists, calls and stats filtered to the caller's tenant;
//! `GET /v1/events` per tenant; the stdio gateway with `--tenant`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::process::Command;

use serde_json::{Value, json};
use serving::identity::{SECRET, jwt, keys_create, now};
use serving::{Server, Site, bin, serve_command};

fn claims(sub: &str, org: &str, roles: &[&str], groups: &[&str], aud: &str, exp: i64) -> Value {
    json!({"sub": sub, "org_id": org, "roles": roles, "groups": groups, "aud": aud, "iss": "https://login.example", "exp": exp, "nbf": now() - 10})
}

/// A site with the JWT signing key in a file: the site and that file's path.
fn jwt_site() -> (Site, std::path::PathBuf) {
    let site = Site::new();
    let secret = site.path().join("jwt.secret");
    std::fs::write(&secret, SECRET).unwrap();
    (site, secret)
}

/// A keyless server on `site` that takes the app's JWTs signed with the key in `secret`.
fn jwt_server(site: &Site, secret: &std::path::Path) -> Server {
    let mut cmd = serve_command(
        site,
        Command::new(bin()),
        &[
            "--jwt-secret-file",
            secret.to_str().unwrap(),
            "--jwt-claims",
            "sub=sub,tenant=org_id,roles=roles,groups=groups",
            "--jwt-audience",
            "toolgate",
            "--jwt-issuer",
            "https://login.example",
        ],
    );
    Server::started(&mut cmd, None)
}

/// Who calls, in the table's order.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    NoKey,
    Revoked,
    ExpiredJwt,
    BadSignature,
    WrongAudience,
    OtherClient,
    OtherApprover,
    OwnClient,
    OwnApprover,
    Admin,
}
use Who::*;

const EVERYONE: [Who; 10] = [
    NoKey,
    Revoked,
    ExpiredJwt,
    BadSignature,
    WrongAudience,
    OtherClient,
    OtherApprover,
    OwnClient,
    OwnApprover,
    Admin,
];

struct Fixture {
    server: Server,
    creds: Vec<(Who, Option<String>)>,
    paused: String,
    done: String,
    conversation: String,
    response: String,
}

impl Fixture {
    fn cred(&self, who: Who) -> Option<&str> {
        self.creds
            .iter()
            .find(|(w, _)| *w == who)
            .and_then(|(_, c)| c.as_deref())
    }

    async fn call(
        &self,
        who: Who,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Option<String>) {
        let url = self.server.url(path);
        let c = &self.server.client;
        let mut r = match method {
            "GET" => c.get(url),
            "POST" => c.post(url),
            "DELETE" => c.delete(url),
            "PATCH" => c.patch(url),
            m => panic!("{m}"),
        };
        if let Some(k) = self.cred(who) {
            r = r.bearer_auth(k);
        }
        if path.starts_with("/mcp/") {
            r = r.header("accept", "application/json, text/event-stream");
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let ct = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        // Streams are not read to their end: the status is the cell.
        let text = if ct.starts_with("text/event-stream") {
            None
        } else {
            resp.text().await.ok()
        };
        (status, text)
    }
}

/// The statuses of one route for each caller: unauthenticated callers get 401 on the
/// API, everyone else what its role and tenant allow.
struct Row {
    method: &'static str,
    path: String,
    /// The documented path, to check that every route of the document has a row.
    doc: &'static str,
    body: Option<Value>,
    expect: fn(Who) -> u16,
}

fn unauth(w: Who) -> bool {
    matches!(
        w,
        NoKey | Revoked | ExpiredJwt | BadSignature | WrongAudience
    )
}

// Reads of tenant A's run: 404 for the other tenant, as for an unknown id.
fn read_a(w: Who) -> u16 {
    match w {
        _ if unauth(w) => 401,
        OtherClient | OtherApprover => 404,
        _ => 200,
    }
}
// Lists: everyone authenticated, filtered to its tenant.
fn list(w: Who) -> u16 {
    if unauth(w) { 401 } else { 200 }
}
fn open(_: Who) -> u16 {
    200
}
// An admin's check of a tool with none: 422.
fn admin_check(w: Who) -> u16 {
    match w {
        _ if unauth(w) => 401,
        Admin => 422,
        _ => 403,
    }
}
fn admin_only(w: Who) -> u16 {
    match w {
        _ if unauth(w) => 401,
        Admin => 200,
        _ => 403,
    }
}
// Decisions on A's run with a call id it does not wait for: 409 once allowed.
fn decide_a(w: Who) -> u16 {
    match w {
        _ if unauth(w) => 401,
        OtherClient | OwnClient => 403,
        OtherApprover => 404,
        _ => 409,
    }
}
// Client actions on A's run (submit to an unknown call, resume a waiting run, cancel
// an ended one): 409 once allowed.
fn client_act_a(w: Who) -> u16 {
    match w {
        _ if unauth(w) => 401,
        OtherApprover | OwnApprover => 403,
        OtherClient => 404,
        _ => 409,
    }
}
fn start(w: Who) -> u16 {
    match w {
        _ if unauth(w) => 401,
        OtherApprover | OwnApprover => 403,
        _ => 200,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_route_answers_each_caller_as_its_role_and_tenant_allow() {
    let (site, secret) = jwt_site();
    let admin = keys_create(&site, "default", "root", "admin", "");
    let a_client = keys_create(&site, "a", "a-app", "client", "");
    let b_client = keys_create(&site, "b", "b-app", "client", "");
    let b_approver = keys_create(&site, "b", "b-boss", "approver", "finance");
    let revoked = keys_create(&site, "a", "a-old", "client", "");
    let out = Command::new(bin())
        .arg("--db")
        .arg(site.db())
        .args(["keys", "revoke", "a-old"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // Keys are stored hashed: the database never holds one in clear.
    let db = std::fs::read(site.db()).unwrap();
    for k in [&admin, &a_client, &b_client] {
        assert!(
            !db.windows(k.len()).any(|w| w == k.as_bytes()),
            "a key is stored in clear"
        );
    }
    let listing = Command::new(bin())
        .arg("--db")
        .arg(site.db())
        .args(["keys", "list", "--json"])
        .output()
        .unwrap();
    let listed = String::from_utf8(listing.stdout).unwrap();
    assert!(
        listed.contains("a-old") && listed.contains("revoked_at") && !listed.contains(&a_client)
    );

    let exp = now() + 3600;
    let a_approver = jwt(
        SECRET,
        claims("ann@a", "a", &["approver"], &["finance"], "toolgate", exp),
    );
    let expired = jwt(
        SECRET,
        claims("ann@a", "a", &["approver"], &[], "toolgate", now() - 3600),
    );
    let bad_sig = jwt(
        "another-secret-of-at-least-32-bytes!!!!",
        claims("ann@a", "a", &["admin"], &[], "toolgate", exp),
    );
    let wrong_aud = jwt(
        SECRET,
        claims("ann@a", "a", &["admin"], &[], "someone-else", exp),
    );

    let server = jwt_server(&site, &secret);
    let creds = vec![
        (NoKey, None),
        (Revoked, Some(revoked)),
        (ExpiredJwt, Some(expired)),
        (BadSignature, Some(bad_sig)),
        (WrongAudience, Some(wrong_aud)),
        (OtherClient, Some(b_client)),
        (OtherApprover, Some(b_approver)),
        (OwnClient, Some(a_client.clone())),
        (OwnApprover, Some(a_approver)),
        (Admin, Some(admin)),
    ];
    let mut f = Fixture {
        server,
        creds,
        paused: String::new(),
        done: String::new(),
        conversation: String::new(),
        response: String::new(),
    };

    // Tenant A's runs, started by A's client: one paused, one ended, one response.
    let (s, paused) = f
        .call(
            OwnClient,
            "POST",
            "/v1/runs",
            Some(json!({"agent": "assistant", "input": "Work out 2+3*4"})),
        )
        .await;
    assert_eq!(s, 200);
    let paused: Value = serde_json::from_str(&paused.unwrap()).unwrap();
    assert_eq!(paused["status"], "requires_action");
    assert_eq!(paused["tenant"], "a");
    assert_eq!(paused["started_by"], "a-app");
    f.paused = paused["id"].as_str().unwrap().to_string();
    f.conversation = paused["conversation_id"].as_str().unwrap().to_string();
    let (_, done) = f
        .call(
            OwnClient,
            "POST",
            "/v1/runs",
            Some(json!({"agent": "plain", "input": "Hi"})),
        )
        .await;
    let done: Value = serde_json::from_str(&done.unwrap()).unwrap();
    assert_eq!(done["status"], "completed");
    f.done = done["id"].as_str().unwrap().to_string();
    let (s, resp) = f
        .call(
            OwnClient,
            "POST",
            "/v1/responses",
            Some(json!({"model": "agent:plain", "input": "Hi"})),
        )
        .await;
    assert_eq!(s, 200);
    let resp: Value = serde_json::from_str(&resp.unwrap()).unwrap();
    f.response = resp["id"].as_str().unwrap().to_string();

    let (p, d, c, r) = (
        f.paused.clone(),
        f.done.clone(),
        f.conversation.clone(),
        f.response.clone(),
    );
    let bogus = json!({"call_id": "call_nobody"});
    let rows = vec![
        Row {
            method: "GET",
            path: "/v1/events".into(),
            doc: "/v1/events",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: format!("/v1/runs/{p}/timeline"),
            doc: "/v1/runs/{id}/timeline",
            body: None,
            expect: read_a,
        },
        Row {
            method: "POST",
            path: "/v1/runs".into(),
            doc: "/v1/runs",
            body: Some(json!({"agent": "plain", "input": "Hi"})),
            expect: start,
        },
        Row {
            method: "GET",
            path: "/v1/runs".into(),
            doc: "/v1/runs",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: format!("/v1/runs/{p}"),
            doc: "/v1/runs/{id}",
            body: None,
            expect: read_a,
        },
        Row {
            method: "GET",
            path: format!("/v1/runs/{p}/tree"),
            doc: "/v1/runs/{id}/tree",
            body: None,
            expect: read_a,
        },
        Row {
            method: "GET",
            path: format!("/v1/runs/{p}/events"),
            doc: "/v1/runs/{id}/events",
            body: None,
            expect: read_a,
        },
        Row {
            method: "POST",
            path: format!("/v1/runs/{p}/approve"),
            doc: "/v1/runs/{id}/approve",
            body: Some(bogus.clone()),
            expect: decide_a,
        },
        Row {
            method: "POST",
            path: format!("/v1/runs/{p}/deny"),
            doc: "/v1/runs/{id}/deny",
            body: Some(bogus.clone()),
            expect: decide_a,
        },
        Row {
            method: "POST",
            path: format!("/v1/runs/{p}/submit"),
            doc: "/v1/runs/{id}/submit",
            body: Some(json!({"call_id": "call_nobody", "output": "x"})),
            expect: client_act_a,
        },
        Row {
            method: "POST",
            path: format!("/v1/runs/{p}/resume"),
            doc: "/v1/runs/{id}/resume",
            body: Some(json!({})),
            expect: client_act_a,
        },
        Row {
            method: "POST",
            path: format!("/v1/runs/{d}/cancel"),
            doc: "/v1/runs/{id}/cancel",
            body: Some(json!({})),
            expect: client_act_a,
        },
        Row {
            method: "GET",
            path: "/v1/calls".into(),
            doc: "/v1/calls",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: format!("/v1/conversations/{c}/stats"),
            doc: "/v1/conversations/{id}/stats",
            body: None,
            expect: read_a,
        },
        Row {
            method: "GET",
            path: "/v1/stats".into(),
            doc: "/v1/stats",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: "/v1/tools/calculator/stats".into(),
            doc: "/v1/tools/{name}/stats",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: "/v1/tools".into(),
            doc: "/v1/tools",
            body: None,
            expect: list,
        },
        Row {
            method: "POST",
            path: "/v1/tools/calculator/validate".into(),
            doc: "/v1/tools/{name}/validate",
            body: Some(json!({})),
            expect: admin_check,
        },
        Row {
            method: "GET",
            path: "/v1/agents".into(),
            doc: "/v1/agents",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: "/healthz".into(),
            doc: "/healthz",
            body: None,
            expect: open,
        },
        Row {
            method: "GET",
            path: "/v1/whoami".into(),
            doc: "/v1/whoami",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: "/v1/limits".into(),
            doc: "/v1/limits",
            body: None,
            expect: admin_only,
        },
        Row {
            method: "POST",
            path: "/v1/responses".into(),
            doc: "/v1/responses",
            body: Some(json!({"model": "agent:plain", "input": "Hi"})),
            expect: start,
        },
        Row {
            method: "GET",
            path: format!("/v1/responses/{r}"),
            doc: "/v1/responses/{id}",
            body: None,
            expect: read_a,
        },
        Row {
            method: "GET",
            path: format!("/v1/responses/{r}/input_items"),
            doc: "/v1/responses/{id}/input_items",
            body: None,
            expect: read_a,
        },
        // Its run has ended: 409 not_cancellable once allowed.
        Row {
            method: "POST",
            path: format!("/v1/responses/{r}/cancel"),
            doc: "/v1/responses/{id}/cancel",
            body: None,
            expect: client_act_a,
        },
        Row {
            method: "GET",
            path: "/metrics".into(),
            doc: "",
            body: None,
            expect: admin_only,
        },
        Row {
            method: "GET",
            path: "/".into(),
            doc: "",
            body: None,
            expect: open,
        },
        Row {
            method: "GET",
            path: format!("/runs/{p}"),
            doc: "",
            body: None,
            expect: open,
        },
        Row {
            method: "GET",
            path: format!("/conversations/{c}"),
            doc: "",
            body: None,
            expect: open,
        },
        Row {
            method: "POST",
            path: "/mcp/assistant".into(),
            doc: "",
            body: Some(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            ),
            expect: |w| match w {
                _ if unauth(w) => 401,
                OtherApprover | OwnApprover => 403,
                _ => 200,
            },
        },
        Row {
            method: "GET",
            path: "/v1/files/file-none-000000000000".into(),
            doc: "/v1/files/{id}",
            body: None,
            expect: |w| if unauth(w) { 401 } else { 404 },
        },
        Row {
            method: "GET",
            path: "/v1/files/file-none-000000000000/content".into(),
            doc: "/v1/files/{id}/content",
            body: None,
            expect: |w| if unauth(w) { 401 } else { 404 },
        },
        // The OAuth callback takes no key (the browser comes back with none): its
        // single-use state is its credential, and an unknown one is refused for all.
        Row {
            method: "GET",
            path: "/v1/oauth/callback?state=unknown-state".into(),
            doc: "/v1/oauth/callback",
            body: None,
            expect: |_| 400,
        },
        // Everyone's own OAuth connections; another user's only for an admin.
        Row {
            method: "GET",
            path: "/v1/oauth/connections".into(),
            doc: "/v1/oauth/connections",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: "/v1/oauth/connections?user=someone-else".into(),
            doc: "/v1/oauth/connections",
            body: None,
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 200,
                _ => 403,
            },
        },
        Row {
            method: "DELETE",
            path: "/v1/oauth/connections/provider-none".into(),
            doc: "/v1/oauth/connections/{provider}",
            body: None,
            expect: |w| if unauth(w) { 401 } else { 404 },
        },
        Row {
            method: "GET",
            path: "/v1/spend?by=agent".into(),
            doc: "/v1/spend",
            body: None,
            expect: list,
        },
        Row {
            method: "GET",
            path: "/v1/knowledge".into(),
            doc: "/v1/knowledge",
            body: None,
            expect: list,
        },
        Row {
            method: "POST",
            path: "/v1/knowledge".into(),
            doc: "/v1/knowledge",
            body: Some(json!({"name": "kb-made"})),
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 201,
                _ => 403,
            },
        },
        Row {
            method: "GET",
            path: "/v1/knowledge/kb-none".into(),
            doc: "/v1/knowledge/{name}",
            body: None,
            expect: |w| if unauth(w) { 401 } else { 404 },
        },
        Row {
            method: "POST",
            path: "/v1/knowledge/kb-none/documents".into(),
            doc: "/v1/knowledge/{name}/documents",
            body: Some(json!({"source": "a.md", "text": "Hello"})),
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 404,
                _ => 403,
            },
        },
        Row {
            method: "POST",
            path: "/v1/knowledge/kb-none/search".into(),
            doc: "/v1/knowledge/{name}/search",
            body: Some(json!({"query": "hello"})),
            expect: |w| match w {
                _ if unauth(w) => 401,
                OtherApprover | OwnApprover => 403,
                _ => 404,
            },
        },
        Row {
            method: "DELETE",
            path: "/v1/knowledge/kb-none/documents?source=a.md".into(),
            doc: "/v1/knowledge/{name}/documents",
            body: None,
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 404,
                _ => 403,
            },
        },
        Row {
            method: "DELETE",
            path: "/v1/knowledge/kb-none".into(),
            doc: "/v1/knowledge/{name}",
            body: None,
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 404,
                _ => 403,
            },
        },
        // Management: admins only, reads included.
        Row {
            method: "GET",
            path: "/v1/keys".into(),
            doc: "/v1/keys",
            body: None,
            expect: admin_only,
        },
        Row {
            method: "POST",
            path: "/v1/keys".into(),
            doc: "/v1/keys",
            body: Some(json!({"name": "made-by-api", "role": "client", "tenant": "a"})),
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 201,
                _ => 403,
            },
        },
        Row {
            method: "POST",
            path: "/v1/agents/nobody/validate".into(),
            doc: "/v1/agents/{name}/validate",
            body: None,
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 404,
                _ => 403,
            },
        },
        Row {
            method: "POST",
            path: "/v1/reload".into(),
            doc: "/v1/reload",
            body: None,
            expect: admin_only,
        },
        Row {
            method: "PATCH",
            path: "/v1/keys/key-none".into(),
            doc: "/v1/keys/{name}",
            body: Some(json!({"role": "client"})),
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 404,
                _ => 403,
            },
        },
        Row {
            method: "DELETE",
            path: "/v1/keys/key-none".into(),
            doc: "/v1/keys/{name}",
            body: None,
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 404,
                _ => 403,
            },
        },
        Row {
            method: "GET",
            path: "/v1/secrets?tenant=a".into(),
            doc: "/v1/secrets",
            body: None,
            expect: admin_only,
        },
        Row {
            method: "POST",
            path: "/v1/secrets".into(),
            doc: "/v1/secrets",
            body: Some(json!({"name": "made-by-api", "value": "v", "tenant": "a"})),
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 204,
                _ => 403,
            },
        },
        Row {
            method: "POST",
            path: "/v1/secrets/secret-none/validate".into(),
            doc: "/v1/secrets/{name}/validate",
            body: Some(json!({})),
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 404,
                _ => 403,
            },
        },
        Row {
            method: "DELETE",
            path: "/v1/secrets/secret-none".into(),
            doc: "/v1/secrets/{name}",
            body: None,
            expect: |w| match w {
                _ if unauth(w) => 401,
                Admin => 404,
                _ => 403,
            },
        },
        // Last, since it deletes: tenant A's own client deletes it, so the admin after
        // it finds nothing.
        Row {
            method: "DELETE",
            path: format!("/v1/responses/{r}"),
            doc: "/v1/responses/{id}",
            body: None,
            expect: |w| match w {
                _ if unauth(w) => 401,
                OtherApprover | OwnApprover => 403,
                OtherClient => 404,
                OwnClient => 200,
                _ => 404,
            },
        },
    ];

    // Every route of the document has its row.
    let (_, doc) = f.server.get("/openapi.json").await;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            let m = method.to_uppercase();
            assert!(
                rows.iter().any(|r| r.doc == path && r.method == m),
                "no row for {m} {path}"
            );
        }
    }

    let mut wrong = Vec::new();
    for row in &rows {
        for who in EVERYONE {
            let (got, text) = f.call(who, row.method, &row.path, row.body.clone()).await;
            let want = (row.expect)(who);
            if got != want {
                wrong.push(format!(
                    "{} {} as {who:?}: {got}, expected {want}: {}",
                    row.method,
                    row.path,
                    text.clone().unwrap_or_default()
                ));
            }
            if got == 404 && matches!(who, OtherClient | OtherApprover) {
                // Exactly as an unknown id: same kind, no hint of the tenant.
                let body: Value =
                    serde_json::from_str(text.as_deref().unwrap_or("{}")).unwrap_or(Value::Null);
                assert_eq!(
                    body["error"]["type"], "not_found",
                    "{} {}",
                    row.method, row.path
                );
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} cell(s) wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );

    // Lists show a caller only its tenant.
    let (_, runs) = f.call(OtherClient, "GET", "/v1/runs", None).await;
    let runs: Value = serde_json::from_str(&runs.unwrap()).unwrap();
    assert!(
        runs.as_array().unwrap().iter().all(|r| r["tenant"] == "b"),
        "{runs}"
    );
    let (_, calls) = f
        .call(OtherClient, "GET", &format!("/v1/calls?run_id={p}"), None)
        .await;
    let calls: Value = serde_json::from_str(&calls.unwrap()).unwrap();
    assert_eq!(calls["total"], 0, "{calls}");
    let (_, calls) = f
        .call(OwnApprover, "GET", &format!("/v1/calls?run_id={p}"), None)
        .await;
    let calls: Value = serde_json::from_str(&calls.unwrap()).unwrap();
    assert_eq!(calls["total"], 1, "{calls}");
    let (_, all) = f.call(Admin, "GET", "/v1/runs?limit=100", None).await;
    let all: Value = serde_json::from_str(&all.unwrap()).unwrap();
    assert!(all.as_array().unwrap().iter().any(|r| r["tenant"] == "a"));
    assert!(all.as_array().unwrap().iter().any(|r| r["tenant"] == "b"));
    // The console's filters: an admin picks a tenant and an agent; a caller bound to a
    // tenant may name only its own.
    let (_, only_b) = f
        .call(
            Admin,
            "GET",
            "/v1/runs?limit=100&tenant=b&agent=plain",
            None,
        )
        .await;
    let only_b: Value = serde_json::from_str(&only_b.unwrap()).unwrap();
    let only_b = only_b.as_array().unwrap();
    assert!(!only_b.is_empty());
    assert!(
        only_b
            .iter()
            .all(|r| r["tenant"] == "b" && r["agent"] == "plain"),
        "{only_b:?}"
    );
    let (_, none) = f.call(Admin, "GET", "/v1/runs?agent=nobody", None).await;
    assert_eq!(none.unwrap().trim(), "[]");
    let (status, refused) = f.call(OtherClient, "GET", "/v1/runs?tenant=a", None).await;
    assert_eq!(status, 403, "{refused:?}");
    // Stats are each tenant's own: B has no calls of calculator, A has A's.
    let (_, stats) = f
        .call(OtherClient, "GET", "/v1/tools/calculator/stats", None)
        .await;
    let stats: Value = serde_json::from_str(&stats.unwrap()).unwrap();
    assert_eq!(stats["total_calls"], 0, "{stats}");
    let (_, stats) = f
        .call(OwnClient, "GET", "/v1/tools/calculator/stats", None)
        .await;
    let stats: Value = serde_json::from_str(&stats.unwrap()).unwrap();
    assert_eq!(stats["total_calls"], 1, "{stats}");
    let (_, all) = f.call(OtherClient, "GET", "/v1/stats", None).await;
    let all: Value = serde_json::from_str(&all.unwrap()).unwrap();
    assert!(
        all["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["tool"] != "calculator"),
        "{all}"
    );
    // Another tenant's conversation cannot be continued.
    let (s, _) = f
        .call(
            OtherClient,
            "POST",
            "/v1/runs",
            Some(json!({"agent": "plain", "input": "Hi", "conversation_id": c})),
        )
        .await;
    assert_eq!(s, 404);
}

/// `GET /v1/events` carries a tenant's client only its own runs' events.
#[tokio::test(flavor = "multi_thread")]
async fn the_feed_carries_only_the_callers_tenant() {
    let site = Site::new();
    let a = keys_create(&site, "a", "a-app", "client", "");
    let b = keys_create(&site, "b", "b-app", "client", "");
    let server = Server::start(&site, None, &[]);
    let feed = server
        .client
        .get(server.url("/v1/events"))
        .bearer_auth(&a)
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status(), 200);
    let start = |key: String| {
        let (client, url) = (server.client.clone(), server.url("/v1/runs"));
        async move {
            let r: Value = client
                .post(url)
                .bearer_auth(key)
                .json(&json!({"agent": "assistant", "input": "Go."}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            r["id"].as_str().unwrap().to_string()
        }
    };
    let theirs = start(b).await;
    let ours = start(a).await;
    // Read until our run's pause event arrives: by then B's run (started and paused
    // first) went by too.
    let mut seen = String::new();
    let mut stream = feed;
    while !seen.contains("event: run.requires_action") {
        let chunk = stream.chunk().await.unwrap().expect("the feed stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains(&ours), "{seen}");
    assert!(seen.contains("run.started"), "{seen}");
    assert!(
        !seen.contains(&theirs),
        "another tenant's run on the feed: {seen}"
    );
}

/// `toolgate --tenant T mcp` over stdio: its calls' runs belong to T.
#[test]
fn the_stdio_gateway_runs_calls_in_its_tenant() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let site = Site::new();
    let mut child = Command::new(bin())
        .arg("--db")
        .arg(site.db())
        .args(["--tenant", "a", "mcp", "--agent"])
        .arg(site.path().join("agents/assistant.yaml"))
        .arg("--tools")
        .arg(site.path().join("tools"))
        .env_remove("TOOLGATE_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    // Sends a message; waits for the answer with `id` (none for a notification).
    let mut answer = |request: &str, id: u64| -> Value {
        writeln!(stdin, "{request}").unwrap();
        if id == 0 {
            return Value::Null;
        }
        loop {
            let mut line = String::new();
            assert!(
                reader.read_line(&mut line).unwrap() > 0,
                "toolgate mcp ended"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    answer(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        1,
    );
    answer(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        0,
    );
    let called = answer(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"6*7"}}}"#,
        2,
    );
    assert!(called.to_string().contains("42"), "{called}");
    drop(stdin);
    let _ = child.wait();
    let runs = |tenant: &str| -> Value {
        let out = Command::new(bin())
            .arg("--db")
            .arg(site.db())
            .args(["--tenant", tenant, "runs", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let a = runs("a");
    assert_eq!(a.as_array().unwrap().len(), 1, "{a}");
    assert_eq!(a[0]["tenant"], "a");
    assert_eq!(runs("default"), json!([]));
}

/// Roles are a set, not a ladder: a key made `--role client,approver` and a JWT whose
/// roles are `[client, approver]` both start runs (a client's door) and decide them (an
/// approver's), stay in their tenant, and `whoami` lists both roles. Before, the
/// highest role alone was taken: such a JWT was an approver that could not start a run.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_or_token_with_two_roles_opens_both_roles_doors() {
    let (site, secret) = jwt_site();
    let both_key = keys_create(&site, "a", "a-both", "client,approver", "");
    let both_jwt = jwt(
        SECRET,
        claims(
            "ann@a",
            "a",
            &["client", "approver"],
            &[],
            "toolgate",
            now() + 3600,
        ),
    );
    let server = jwt_server(&site, &secret);
    for cred in [&both_key, &both_jwt] {
        let who: Value = server
            .client
            .get(server.url("/v1/whoami"))
            .bearer_auth(cred)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(who["roles"], json!(["client", "approver"]), "{who}");
        assert_eq!(who["role"], "client,approver", "{who}");
        assert_eq!(who["tenant"], "a", "{who}");
        let started = server
            .client
            .post(server.url("/v1/runs"))
            .bearer_auth(cred)
            .json(&json!({"agent": "assistant", "input": "Work it out."}))
            .send()
            .await
            .unwrap();
        assert_eq!(started.status().as_u16(), 200, "a client's door");
        let run: Value = started.json().await.unwrap();
        assert_eq!(run["status"], "requires_action", "{run}");
        let id = run["id"].as_str().unwrap();
        let decided = server
            .client
            .post(server.url(&format!("/v1/runs/{id}/approve")))
            .bearer_auth(cred)
            .json(&json!({"call_id": "call_write"}))
            .send()
            .await
            .unwrap();
        assert_eq!(decided.status().as_u16(), 200, "an approver's door");
        let metrics = server
            .client
            .get(server.url("/metrics"))
            .bearer_auth(cred)
            .send()
            .await
            .unwrap();
        assert_eq!(metrics.status().as_u16(), 403, "not an admin's door");
    }
    let listing = Command::new(bin())
        .arg("--db")
        .arg(site.db())
        .args(["keys", "list", "--json"])
        .output()
        .unwrap();
    let keys: Value = serde_json::from_slice(&listing.stdout).unwrap();
    assert_eq!(keys[0]["role"], "client,approver", "{keys}");
}
