//! Who decides and for whom tools run, against a real `toolgate serve`: approvers
//! groups and four eyes (agent and tool files), `decided_by` as the identity (API and
//! `show`), the tools' run context, per-tenant secrets, and rate limits (requests per
//! second, runs at once) answered 429 with `Retry-After`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::process::Command;

use serde_json::{Value, json};
use serving::identity::{SECRET, jwt, keys_create, now};
use serving::{Server, Site, bin, serve_command};

#[tokio::test(flavor = "multi_thread")]
async fn approvers_groups_and_four_eyes_decide_who_decides_and_decided_by_is_the_identity() {
    let site = Site::new();
    std::fs::write(
        site.path().join("agents/ledger.yaml"),
        "name: ledger\nmodel: scripted:assistant.replies.yaml\ninstructions: Help.\ntools: [calculator, write_file, ask_user]\nmax_iterations: 6\napprovers: [finance]\nfour_eyes: true\n",
    )
    .unwrap();
    let secret = site.path().join("jwt.secret");
    std::fs::write(&secret, SECRET).unwrap();
    let finance = keys_create(&site, "a", "fin-1", "approver", "finance");
    let sales = keys_create(&site, "a", "sales-1", "approver", "sales");
    let mut cmd = serve_command(
        &site,
        Command::new(bin()),
        &[
            "--jwt-secret-file",
            secret.to_str().unwrap(),
            "--jwt-claims",
            "tenant=org_id",
        ],
    );
    let mut server = Server::started(&mut cmd, None);
    let exp = now() + 3600;
    // Ann starts the run with her app's token (client), then tries to approve with
    // her approver token: four eyes refuses.
    let ann_client = jwt(
        SECRET,
        json!({"sub": "ann", "org_id": "a", "roles": ["client"], "exp": exp}),
    );
    let ann_approver = jwt(
        SECRET,
        json!({"sub": "ann", "org_id": "a", "roles": ["approver"], "groups": ["finance"], "exp": exp}),
    );
    server.key = Some(ann_client);
    let (s, run) = server
        .post(
            "/v1/runs",
            json!({"agent": "ledger", "input": "Work out 2+3*4"}),
        )
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["started_by"], "ann");
    let id = run["id"].as_str().unwrap().to_string();
    let approve = json!({"call_id": "call_write", "resume": false, "by": "Ann Example"});
    server.key = Some(ann_approver);
    let (s, e) = server
        .post(&format!("/v1/runs/{id}/approve"), approve.clone())
        .await;
    assert_eq!(s, 403, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("four eyes"),
        "{e}"
    );
    server.key = Some(sales);
    let (s, e) = server
        .post(&format!("/v1/runs/{id}/approve"), approve.clone())
        .await;
    assert_eq!(s, 403, "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("finance"),
        "{e}"
    );
    // Nothing was recorded by the refusals.
    server.key = Some(finance.clone());
    let (_, t) = server.get(&format!("/v1/runs/{id}/timeline")).await;
    assert!(t.to_string().contains("\"decided_by\":null"), "{t}");
    let (s, r) = server
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "call_write", "resume": false, "by": "Fiona"}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let (_, t) = server.get(&format!("/v1/runs/{id}/timeline")).await;
    assert!(
        t.to_string().contains("\"decided_by\":\"fin-1\""),
        "decided_by is the key's name, not the typed one: {t}"
    );
    assert!(t.to_string().contains("\"decided_as\":\"Fiona\""), "{t}");
    // The command line: `show` names the identity; another tenant sees no such run.
    let cli = |args: &[&str]| {
        Command::new(bin())
            .arg("--db")
            .arg(site.db())
            .args(args)
            .output()
            .unwrap()
    };
    let shown = cli(&["--tenant", "a", "show", &id]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("tenant        a (started by ann)"), "{text}");
    assert!(
        text.contains("decided       call_write  approve  by fin-1 [key_"),
        "{text}"
    );
    assert!(text.contains("(as Fiona)"), "{text}");
    let hidden = cli(&["--tenant", "b", "show", &id]);
    assert_eq!(hidden.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&hidden.stderr).contains("there is no run"));
    let listed = cli(&["--tenant", "b", "runs", "--json"]);
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "[]");
}

/// A tool file may name its own approvers: they decide its calls whatever the agent.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_file_names_who_decides_its_calls() {
    let site = Site::new();
    std::fs::write(
        site.path().join("tools/pay.yaml"),
        "name: pay\ndescription: Pays an invoice.\npermission: confirm\napprovers: [treasury]\nparameters:\n  type: object\n  properties:\n    invoice: {type: string}\nentry:\n  type: command\n  command: echo\n  args: [paid]\n",
    )
    .unwrap();
    site.agent(
        "payer",
        "[pay]",
        "  - content: Paying.\n    tool_calls:\n      - {id: call_pay, name: pay, arguments: {invoice: \"7\"}}\n  - content: Paid.\n",
    );
    let client = keys_create(&site, "a", "a-app", "client", "");
    let finance = keys_create(&site, "a", "fin-1", "approver", "finance");
    let treasury = keys_create(&site, "a", "tre-1", "approver", "treasury");
    let mut server = Server::start(&site, None, &[]);
    server.key = Some(client);
    let (_, run) = server
        .post(
            "/v1/runs",
            json!({"agent": "payer", "input": "Pay invoice 7"}),
        )
        .await;
    assert_eq!(run["status"], "requires_action", "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    server.key = Some(finance);
    let (s, e) = server
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "call_pay"}),
        )
        .await;
    assert_eq!(s, 403, "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("treasury"),
        "{e}"
    );
    let (_, tools) = server.get("/v1/tools").await;
    let pay = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "pay")
        .unwrap();
    assert_eq!(pay["approvers"], json!(["treasury"]));
    server.key = Some(treasury);
    let (s, r) = server
        .post(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "call_pay"}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["status"], "completed", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limits_answer_429_with_retry_after() {
    let site = Site::new();
    let limits = site.path().join("limits.yaml");
    std::fs::write(&limits, "per_key: {requests_per_second: 1, burst: 2}\n").unwrap();
    let key = keys_create(&site, "a", "busy", "client", "");
    let mut server = Server::start(&site, None, &["--rate-limits", limits.to_str().unwrap()]);
    server.key = Some(key);
    let mut statuses = Vec::new();
    let mut retry = None;
    for _ in 0..4 {
        let r = server
            .client
            .get(server.url("/v1/runs"))
            .bearer_auth(server.key.as_ref().unwrap())
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
        if r.status().as_u16() == 429 {
            retry = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_string());
        }
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(retry.is_some_and(|s| s.parse::<u64>().unwrap() >= 1));
}

/// `runs_at_once` per key: a second run while the first is in progress is 429 with
/// `Retry-After`.
#[tokio::test(flavor = "multi_thread")]
async fn runs_at_once_answers_429_while_a_run_is_in_progress() {
    let site = Site::new();
    let limits = site.path().join("limits.yaml");
    std::fs::write(&limits, "per_key: {runs_at_once: 1}\n").unwrap();
    let key = keys_create(&site, "a", "busy", "client", "");
    let server = Server::start_env(
        &site,
        None,
        &["--rate-limits", limits.to_str().unwrap()],
        &[("SLOW_SECONDS", "30")],
    );
    let mut first = server
        .client
        .post(server.url("/v1/runs"))
        .bearer_auth(&key)
        .json(&json!({"agent": "slow", "input": "Nap.", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    // The nap has started: the run is in progress until it ends.
    let mut seen = String::new();
    while !seen.contains("tool.started") {
        let chunk = first.chunk().await.unwrap().expect("the stream goes on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let second = server
        .client
        .post(server.url("/v1/runs"))
        .bearer_auth(&key)
        .json(&json!({"agent": "plain", "input": "Hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 429);
    assert!(second.headers().contains_key("retry-after"));
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limited");
}

/// Tools know for whom they run: a command tool's `TOOLGATE_*` variables and an HTTP
/// tool's `${context:...}` headers carry the run's tenant, user, run and conversation.
#[tokio::test(flavor = "multi_thread")]
async fn tools_get_the_runs_tenant_user_run_and_conversation() {
    use wiremock::matchers::{header, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let api = MockServer::start().await;
    Mock::given(method("GET"))
        .and(header("x-user", "a-app"))
        .and(header("x-tenant", "a"))
        .respond_with(ResponseTemplate::new(200).set_body_string("hello a-app"))
        .mount(&api)
        .await;
    let site = Site::new();
    std::fs::write(
        site.path().join("tools/whoami.yaml"),
        "name: whoami\ndescription: Says for whom it runs.\npermission: auto\nentry:\n  type: command\n  command: sh\n  args: [-c, \"echo $TOOLGATE_TENANT/$TOOLGATE_USER/$TOOLGATE_RUN_ID/$TOOLGATE_CONVERSATION_ID\"]\n",
    )
    .unwrap();
    std::fs::write(
        site.path().join("tools/greet.yaml"),
        format!(
            "name: greet\ndescription: Greets the user.\npermission: auto\nentry:\n  type: http\n  url: \"{}/hello\"\n  allow_hosts: [\"127.0.0.1\"]\n  headers: {{X-User: \"${{context:user}}\", X-Tenant: \"${{context:tenant}}\"}}\n",
            api.uri()
        ),
    )
    .unwrap();
    site.agent(
        "who",
        "[whoami, greet]",
        "  - content: Checking.\n    tool_calls:\n      - {id: call_who, name: whoami, arguments: {}}\n      - {id: call_greet, name: greet, arguments: {}}\n  - content: Done.\n",
    );
    let key = keys_create(&site, "a", "a-app", "client", "");
    let mut server = Server::start(&site, None, &[]);
    server.key = Some(key);
    let (s, run) = server
        .post("/v1/runs", json!({"agent": "who", "input": "Who am I?"}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    let id = run["id"].as_str().unwrap();
    let (_, calls) = server.get(&format!("/v1/calls?run_id={id}")).await;
    let result = |c: &str| {
        calls["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["call_id"] == c)
            .map(|r| r["result"].as_str().unwrap_or_default().to_string())
            .unwrap()
    };
    let conv = run["conversation_id"].as_str().unwrap();
    assert_eq!(result("call_who").trim(), format!("a/a-app/{id}/{conv}"));
    assert!(result("call_greet").contains("hello a-app"), "{calls}");
}

/// A run's secrets resolve in its tenant first, then in the shared scope.
#[tokio::test(flavor = "multi_thread")]
async fn secrets_resolve_in_the_tenant_then_the_shared_scope() {
    let dir = tempfile::tempdir().unwrap();
    let store = toolgate::store::Store::open(dir.path().join("s.db")).unwrap();
    store
        .set_secret(
            toolgate::store::SecretScope::Shared,
            "TOKEN",
            "shared".into(),
        )
        .await
        .unwrap();
    store
        .set_secret(
            toolgate::store::SecretScope::Tenant("a"),
            "TOKEN",
            "for-a".into(),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .secret(toolgate::store::SecretScope::Tenant("a"), "TOKEN")
            .await
            .unwrap()
            .as_deref(),
        Some("for-a")
    );
    assert_eq!(
        store
            .secret(toolgate::store::SecretScope::Tenant("b"), "TOKEN")
            .await
            .unwrap()
            .as_deref(),
        Some("shared")
    );
    assert_eq!(
        store
            .secret(toolgate::store::SecretScope::Shared, "TOKEN")
            .await
            .unwrap()
            .as_deref(),
        Some("shared")
    );
    assert_eq!(
        store
            .secrets(toolgate::store::SecretScope::Tenant("a"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        store
            .remove_secret(toolgate::store::SecretScope::Tenant("a"), "TOKEN")
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .secret(toolgate::store::SecretScope::Tenant("a"), "TOKEN")
            .await
            .unwrap()
            .as_deref(),
        Some("shared")
    );
}

/// Rules see for whom a run runs: `tenant` and `user` are the run's owner, so one
/// agent's rule can hold tenant a's calls by a-app and run tenant b's at once.
#[tokio::test(flavor = "multi_thread")]
async fn rules_see_the_runs_tenant_and_user() {
    let site = Site::new();
    site.agent(
        "gated",
        "[calculator]",
        "  - content: Working.\n    tool_calls: [{id: call_calc, name: calculator, arguments: {expression: \"2+3\"}}]\n  - content: Done.\n",
    );
    let file = site.path().join("agents/gated.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}permissions:\n  calculator:\n    confirm_if: \"tenant == 'a' && user == 'a-app'\"\n    otherwise: auto\n"),
    )
    .unwrap();
    let a = keys_create(&site, "a", "a-app", "client", "");
    let b = keys_create(&site, "b", "b-app", "client", "");
    let mut server = Server::start(&site, None, &[]);
    server.key = Some(a);
    let (s, run) = server
        .post("/v1/runs", json!({"agent": "gated", "input": "Add."}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "requires_action", "{run}");
    let item = &run["required_action"]["items"][0];
    assert_eq!(
        item["reason"], "confirm_if: tenant == 'a' && user == 'a-app'",
        "{run}"
    );
    server.key = Some(b);
    let (s, run) = server
        .post("/v1/runs", json!({"agent": "gated", "input": "Add."}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run}");
}
