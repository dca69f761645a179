//! Per-user OAuth against a real authorization server (authlib, tests/py/oauth_server.py:
//! authorization code with PKCE required, rotated refresh tokens) and the protected
//! resource it guards, on both store backends: a consent begun for a paused call and
//! completed from the callback (its state works once), the tokens kept sealed and found
//! again after a restart (a new store and broker on the same database and key), a token
//! the resource refuses refreshed once, a token about to expire refreshed before use, a
//! refused consent told in words, and a revoked grant gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use toolgate::oauth::{BrokerError, Callback, OAuthBroker, OAuthOwner, OAuthProvider};
use toolgate::secrets::Keyring;
use toolgate::tool::{Credential, Resolver};

use crate::databases::TestDb;
use crate::serving;

const REDIRECT: &str = "http://127.0.0.1:9/v1/oauth/callback";

/// The authorization server, stopped when dropped.
struct AuthServer {
    child: Child,
    base: String,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_auth_server() -> AuthServer {
    let python = serving::python("tests/oauth.rs");
    let mut child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/oauth_server.py"))
        .arg(REDIRECT)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .strip_prefix("PORT ")
        .unwrap_or_else(|| panic!("the authorization server did not start: {line:?}"))
        .trim()
        .to_string();
    AuthServer {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

/// The provider as a tool file would declare it: endpoints discovered from the issuer,
/// the client secret a stored secret.
fn provider(server: &AuthServer) -> OAuthProvider {
    serde_json::from_value(serde_json::json!({
        "name": "calendar",
        "issuer": server.base,
        "client_id": "toolgate-test",
        "client_secret": "${secret:CALENDAR_CLIENT_SECRET}",
        "scopes": ["calendar.read"],
    }))
    .unwrap()
}

/// The secrets the broker may read: the client secret only.
fn secrets() -> Resolver {
    Resolver(Arc::new(|c: &Credential| match c {
        Credential::Secret(n) if n == "CALENDAR_CLIENT_SECRET" => Ok(Some("client-s3cret".into())),
        _ => Ok(None),
    }))
}

fn broker(db: &TestDb, key: &Path) -> OAuthBroker {
    OAuthBroker::new(
        db.open(),
        Arc::new(Keyring::from_file(key.to_path_buf())),
        secrets(),
        REDIRECT.into(),
    )
}

fn alice() -> OAuthOwner {
    OAuthOwner {
        tenant: "acme".into(),
        user: "alice".into(),
        provider: "calendar".into(),
    }
}

/// The person at the consent page: the callback's query as the server redirected it.
async fn consent(url: &str, decision: &str) -> Callback {
    let location = consent_location(url, decision).await;
    assert!(location.starts_with(REDIRECT), "{location}");
    let query: std::collections::HashMap<String, String> = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    Callback {
        state: query["state"].clone(),
        code: query.get("code").cloned(),
        error: query.get("error").cloned(),
        error_description: query.get("error_description").cloned(),
    }
}

/// Where the authorization server sends alice's browser after she decides.
async fn consent_location(url: &str, decision: &str) -> String {
    let answer = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(url)
        .header("X-Test-User", "alice")
        .header("X-Test-Decision", decision)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 302, "{:?}", answer.text().await);
    answer.headers()["location"].to_str().unwrap().to_string()
}

/// `GET /me` with `token`: the user it names, or the status.
async fn me(server: &AuthServer, token: &str) -> Result<String, u16> {
    let answer = reqwest::Client::new()
        .get(format!("{}/me", server.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    if answer.status() != 200 {
        return Err(answer.status().as_u16());
    }
    let body: serde_json::Value = answer.json().await.unwrap();
    Ok(body["user"].as_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consent_survives_a_restart_and_refreshes_on_both_backends() {
    let server = start_auth_server();
    for db in TestDb::both() {
        let dir = tempfile::tempdir().unwrap();
        let key: PathBuf = dir.path().join("oauth.key");
        connect_restart_refresh(&server, &db, &key).await;
    }
}

async fn connect_restart_refresh(server: &AuthServer, db: &TestDb, key: &Path) {
    let name = db.name();
    let provider = provider(server);
    let broker = broker(db, key);
    let owner = alice();
    assert_eq!(
        broker.access_token(&provider, &owner).await.unwrap(),
        None,
        "{name}"
    );

    // The consent for a paused call; the URL carries PKCE S256 and an unguessable state.
    let url = broker
        .begin(
            &provider,
            owner.clone(),
            Some("run_1".into()),
            Some("call_1".into()),
        )
        .await
        .unwrap();
    assert!(
        url.starts_with(&format!("{}/authorize?", server.base)),
        "{url}"
    );
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let callback = consent(&url, "allow").await;
    assert_eq!(callback.state.len(), 43);
    let done = broker
        .complete(&callback, |_| Some(provider.clone()))
        .await
        .unwrap();
    assert_eq!(done.outcome, Ok(()), "{name}");
    assert_eq!(
        (done.run_id.as_deref(), done.call_id.as_deref()),
        (Some("run_1"), Some("call_1"))
    );
    assert_eq!(done.owner, owner);
    // A state works once.
    let again = broker.complete(&callback, |_| Some(provider.clone())).await;
    assert!(
        matches!(again, Err(BrokerError::UnknownState)),
        "{name}: {again:?}"
    );

    let first = broker
        .access_token(&provider, &owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(me(server, &first).await, Ok("alice".into()), "{name}");
    // Sealed in the store: the token is not in the grant list nor the stored row.
    let stored = db.open().oauth_tokens(&owner).await.unwrap().unwrap();
    assert!(
        !stored.sealed.contains(&first),
        "{name}: the token is stored in clear"
    );
    assert_eq!(stored.scope.as_deref(), Some("calendar.read"));

    // A restart: a new store and broker on the same database and key.
    drop(broker);
    let broker = self::broker(db, key);
    let after = broker
        .access_token(&provider, &owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        after, first,
        "{name}: the tokens did not survive the restart"
    );

    // The resource refuses the token: refreshed once, and the new one works.
    reqwest::Client::new()
        .post(format!("{}/admin/revoke", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(me(server, &first).await, Err(401));
    let second = broker
        .after_unauthorized(&provider, &owner)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(second, first);
    assert_eq!(me(server, &second).await, Ok("alice".into()), "{name}");
    // A refreshed token lives 30 s, within the minute's margin: refreshed before use.
    let third = broker
        .access_token(&provider, &owner)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        third, second,
        "{name}: a token about to expire was not refreshed"
    );
    assert_eq!(me(server, &third).await, Ok("alice".into()), "{name}");

    // A refused consent is a sentence, and no tokens change.
    let url = broker
        .begin(&provider, owner.clone(), None, None)
        .await
        .unwrap();
    let refused = broker
        .complete(&consent(&url, "deny").await, |_| Some(provider.clone()))
        .await
        .unwrap();
    let why = refused.outcome.unwrap_err();
    assert!(why.contains("the user refused to connect"), "{why}");
    assert!(!why.contains(&third));

    // Listed without tokens; revoked, the user must connect again.
    let store = db.open();
    let grants = store.oauth_grants("acme", None).await.unwrap();
    assert_eq!(grants.len(), 1, "{name}");
    assert_eq!(
        (grants[0].user.as_str(), grants[0].provider.as_str()),
        ("alice", "calendar")
    );
    assert!(!serde_json::to_string(&grants).unwrap().contains(&third));
    assert!(store.remove_oauth_tokens(owner.clone()).await.unwrap());
    assert_eq!(
        broker.access_token(&provider, &owner).await.unwrap(),
        None,
        "{name}"
    );
}

/// The tool file of `calendar_me`: `GET /me` of the resource with the user's token.
fn calendar_tool(server: &AuthServer) -> String {
    format!(
        "name: calendar_me\ndescription: Who the user is in their calendar.\npermission: auto\nentry:\n  type: http\n  url: \"{base}/me\"\n  allow_hosts: [\"127.0.0.1\"]\n  oauth:\n    name: calendar\n    issuer: \"{base}\"\n    client_id: toolgate-test\n    client_secret: \"${{secret:CALENDAR_CLIENT_SECRET}}\"\n    scopes: [calendar.read]\n",
        base = server.base
    )
}

/// `toolgate ARGS` on `site`'s database with the key folder of the test.
fn site_cli(site: &serving::Site, keys: &Path, args: &[&str]) {
    let out = Command::new(serving::bin())
        .arg("--db")
        .arg(site.db())
        .args(args)
        .current_dir(site.path())
        .env("TOOLGATE_KEY_DIR", keys)
        .env("CLIENT_SECRET_VALUE", "client-s3cret")
        .env_remove("TOOLGATE_SECRET_KEY")
        .env_remove("TOOLGATE_SECRET_KEY_FILE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A run of `agent` by alice's key, as the server answers it.
async fn start_run(server: &serving::Server, agent: &str) -> serde_json::Value {
    let (status, run) = server
        .post(
            "/v1/runs",
            serde_json::json!({"agent": agent, "input": "Who am I?"}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    run
}

/// Waits until run `id` leaves `requires_action`/`in_progress`.
async fn settled(server: &serving::Server, id: &str) -> serde_json::Value {
    for _ in 0..200 {
        let (_, run) = server.get(&format!("/v1/runs/{id}")).await;
        if run["status"] == "completed" || run["status"] == "failed" {
            return run;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("run {id} did not finish");
}

/// The result of the one `calendar_me` call of run `id`.
async fn me_result(server: &serving::Server, id: &str) -> serde_json::Value {
    let (_, calls) = server.get(&format!("/v1/calls?run_id={id}")).await;
    calls["calls"][0].clone()
}

/// Agents of `site`, each calling `tool` once and then answering.
fn calling_agents(site: &serving::Site, tool: &str, agents: &[&str]) {
    for agent in agents {
        site.agent(
            agent,
            &format!("[{tool}]"),
            &format!("  - content: Looking.\n    tool_calls: [{{id: call_me, name: {tool}, arguments: {{}}}}]\n  - content: Done.\n"),
        );
    }
}

/// `site`'s server with the key folder `keys`, its requests made with `key`.
fn start_with(site: &serving::Site, keys: &str, key: &str) -> serving::Server {
    let mut server = serving::Server::start_env(site, None, &[], &[("TOOLGATE_KEY_DIR", keys)]);
    server.key = Some(key.to_string());
    server
}

/// A site on `db` (a PostgreSQL database made first).
fn site_on(db: &TestDb) -> serving::Site {
    match db {
        TestDb::Sqlite { .. } => serving::Site::new(),
        TestDb::Postgres { .. } => {
            drop(db.open());
            serving::Site::on_database(db.arg())
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_pauses_for_consent_continues_after_the_callback_and_a_restart_on_both_backends() {
    let auth = start_auth_server();
    for db in TestDb::both() {
        let site = site_on(&db);
        run_through_the_server(&auth, &site, db.name()).await;
    }
}

async fn run_through_the_server(auth: &AuthServer, site: &serving::Site, name: &str) {
    let keys = site.path().join("keys");
    std::fs::write(
        site.path().join("tools/calendar_me.yaml"),
        calendar_tool(auth),
    )
    .unwrap();
    calling_agents(site, "calendar_me", &["first", "again", "refused"]);
    site_cli(
        site,
        &keys,
        &[
            "secrets",
            "set",
            "CALENDAR_CLIENT_SECRET",
            "--from-env",
            "CLIENT_SECRET_VALUE",
        ],
    );
    let key = serving::identity::keys_create(site, "acme", "alice", "client", "");
    let bob = serving::identity::keys_create(site, "acme", "bob", "client", "");
    let keys_env = keys.to_str().unwrap();
    let server = start_with(site, keys_env, &key);
    let callback = register_callback(auth, &server).await;

    // Not connected: the run pauses on an authorization item with the consent URL.
    let run = start_run(&server, "first").await;
    assert_eq!(run["status"], "requires_action", "{name}: {run}");
    let item = &run["required_action"]["items"][0];
    assert_eq!(item["kind"], "authorization", "{name}: {run}");
    assert_eq!(item["arguments"]["provider"], "calendar");
    let url = item["arguments"]["consent_url"].as_str().unwrap();
    // Alice consents; her browser comes back to the callback, with no key.
    let location = consent_location(url, "allow").await;
    assert!(location.starts_with(&callback), "{location}");
    let page = reqwest::get(&location).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("Connected calendar for alice")
    );
    // The same link again: refused, nothing changes.
    assert_eq!(reqwest::get(&location).await.unwrap().status(), 400);
    let id = run["id"].as_str().unwrap();
    let done = settled(&server, id).await;
    assert_eq!(done["status"], "completed", "{name}: {done}");
    let call = me_result(&server, id).await;
    assert!(
        call["result"]
            .as_str()
            .unwrap()
            .contains("\"user\":\"alice\""),
        "{name}: {call}"
    );

    // A restart: the tokens are in the store; the resource then refuses the access
    // token, and the call refreshes it once and goes through.
    drop(server);
    let server = start_with(site, keys_env, &key);
    // The client's callback moved with the server's new port.
    register_callback(auth, &server).await;
    reqwest::Client::new()
        .post(format!("{}/admin/revoke", auth.base))
        .send()
        .await
        .unwrap();
    let run = start_run(&server, "again").await;
    assert_eq!(run["status"], "completed", "{name}: {run}");
    let call = me_result(&server, run["id"].as_str().unwrap()).await;
    assert!(
        call["result"]
            .as_str()
            .unwrap()
            .contains("\"user\":\"alice\""),
        "{name}: {call}"
    );
    let (_, listed) = server
        .get(&format!("/v1/calls?run_id={}", run["id"].as_str().unwrap()))
        .await;
    let (_, events) = server
        .get(&format!(
            "/v1/runs/{}/timeline",
            run["id"].as_str().unwrap()
        ))
        .await;
    let issued = issued_tokens(auth).await;
    assert!(issued.len() >= 3, "{issued:?}");
    for text in [listed.to_string(), events.to_string()] {
        assert!(
            !issued.iter().any(|t| text.contains(t.as_str())),
            "{name}: a token in a record"
        );
    }

    connections_listed_and_revoked(auth, site, &server, &bob, &issued, name).await;

    // Revoked: the next run asks again; alice refuses, and the model is told so.
    let run = start_run(&server, "refused").await;
    let url = run["required_action"]["items"][0]["arguments"]["consent_url"]
        .as_str()
        .unwrap()
        .to_string();
    let location = consent_location(&url, "deny").await;
    let page = reqwest::get(&location).await.unwrap();
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("the user refused to connect")
    );
    let id = run["id"].as_str().unwrap();
    let done = settled(&server, id).await;
    assert_eq!(done["status"], "completed", "{name}: {done}");
    let call = me_result(&server, id).await;
    assert_eq!(call["status"], "denied", "{name}: {call}");
    assert!(
        call["error_message"]
            .as_str()
            .unwrap()
            .contains("the user refused to connect"),
        "{call}"
    );
}

/// Alice's connection as she, bob (her tenant) and the CLI see it; then she revokes it
/// over HTTP, and it is gone for the API and the CLI. No token shows anywhere.
async fn connections_listed_and_revoked(
    auth: &AuthServer,
    site: &serving::Site,
    server: &serving::Server,
    bob: &str,
    issued: &[String],
    name: &str,
) {
    let (status, mine) = server.get("/v1/oauth/connections").await;
    assert_eq!(status, 200, "{name}: {mine}");
    let mine = mine.as_array().unwrap().clone();
    assert_eq!(mine.len(), 1, "{name}: {mine:?}");
    assert_eq!(mine[0]["user"], "alice");
    assert_eq!(mine[0]["provider"], "calendar");
    assert_eq!(mine[0]["scope"], "calendar.read", "{name}: {mine:?}");
    let (_, theirs) = server
        .send_as(bob, "GET", "/v1/oauth/connections", None)
        .await;
    assert_eq!(theirs, serde_json::json!([]), "{name}");
    let (status, _) = server
        .send_as(bob, "GET", "/v1/oauth/connections?user=alice", None)
        .await;
    assert_eq!(status, 403, "{name}: bob may not list alice's");
    let (status, _) = server
        .send_as(bob, "DELETE", "/v1/oauth/connections/calendar", None)
        .await;
    assert_eq!(status, 404, "{name}: bob has none to revoke");
    let listed = serving::cli(site, &["--tenant", "acme", "oauth", "list", "--json"]);
    assert!(listed.status.success(), "{name}: {listed:?}");
    let text = String::from_utf8_lossy(&listed.stdout).to_string();
    let cli: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(cli.as_array().unwrap().len(), 1, "{name}: {text}");
    assert_eq!(cli[0]["user"], "alice");
    for text in [text, serde_json::Value::Array(mine).to_string()] {
        assert!(
            !issued.iter().any(|t| text.contains(t.as_str())),
            "{name}: a token in a listing"
        );
    }

    assert_eq!(live_tokens(&auth.base).await, (1, 1), "{name}: before");
    let (status, _) = server
        .send_as(
            server.key.as_deref().unwrap(),
            "DELETE",
            "/v1/oauth/connections/calendar",
            None,
        )
        .await;
    assert_eq!(status, 204, "{name}");
    // Revoked at the provider too (RFC 7009): no token of alice's works any more.
    assert_eq!(live_tokens(&auth.base).await, (0, 0), "{name}: after");
    let (_, mine) = server.get("/v1/oauth/connections").await;
    assert_eq!(mine, serde_json::json!([]), "{name}");
    let again = serving::cli(
        site,
        &[
            "--tenant", "acme", "oauth", "revoke", "calendar", "--user", "alice",
        ],
    );
    assert!(!again.status.success(), "{name}: revoked twice");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("alice has no connection to calendar"),
        "{name}: {again:?}"
    );
}

/// Registers `server`'s callback as the client's redirect URI; returns it.
async fn register_callback(auth: &AuthServer, server: &serving::Server) -> String {
    let callback = format!("{}/v1/oauth/callback", server.base);
    reqwest::Client::new()
        .post(format!("{}/admin/redirect_uri", auth.base))
        .body(callback.clone())
        .send()
        .await
        .unwrap();
    callback
}

/// Every token the authorization server issued (its own list): none may show in a record.
async fn issued_tokens(auth: &AuthServer) -> Vec<String> {
    let all: serde_json::Value = reqwest::get(format!("{}/admin/tokens", auth.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

/// An `openapi:` file of the resource whose document declares an `oauth2` scheme
/// (authorization code): `auth: {type: oauth2, ...}` takes its endpoints and scopes.
fn calendar_api(server: &AuthServer) -> String {
    format!(
        r#"openapi:
  openapi: 3.0.3
  info: {{title: Calendar, version: "1"}}
  servers: [{{url: "{base}"}}]
  components:
    securitySchemes:
      calendar_oauth:
        type: oauth2
        flows:
          authorizationCode:
            authorizationUrl: "{base}/authorize"
            tokenUrl: "{base}/token"
            scopes: {{calendar.read: Read the calendar}}
  security: [{{calendar_oauth: [calendar.read]}}]
  paths:
    /me:
      get:
        operationId: getMe
        summary: Who the user is in their calendar.
        responses: {{"200": {{description: The user}}}}
name: cal
allow_hosts: ["127.0.0.1"]
auth:
  type: oauth2
  provider: calendar
  client_id: toolgate-test
  client_secret: "${{secret:CALENDAR_CLIENT_SECRET}}"
"#,
        base = server.base
    )
}

/// A site whose agent `viewer` calls `tool` (written to `tools/FILE` as `text`) once,
/// with the calendar client's secret set; returns it and its key folder.
fn viewer_site(file: &str, text: &str, tool: &str) -> (serving::Site, PathBuf) {
    let site = serving::Site::new();
    let keys = site.path().join("keys");
    std::fs::write(site.path().join("tools").join(file), text).unwrap();
    calling_agents(&site, tool, &["viewer"]);
    site_cli(
        &site,
        &keys,
        &[
            "secrets",
            "set",
            "CALENDAR_CLIENT_SECRET",
            "--from-env",
            "CLIENT_SECRET_VALUE",
        ],
    );
    (site, keys)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openapi_oauth2_scheme_pauses_for_consent_and_calls_as_the_user() {
    let auth = start_auth_server();
    let (site, keys) = viewer_site("cal.yaml", &calendar_api(&auth), "cal__getMe");
    let key = serving::identity::keys_create(&site, "acme", "alice", "client", "");
    let keys_env = keys.to_str().unwrap();
    let server = start_with(&site, keys_env, &key);
    let callback = register_callback(&auth, &server).await;
    let (_, tools) = server.get("/v1/tools").await;
    let listed = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "cal__getMe")
        .cloned();
    assert!(listed.is_some(), "{tools}");

    let run = start_run(&server, "viewer").await;
    assert_eq!(run["status"], "requires_action", "{run}");
    let item = &run["required_action"]["items"][0];
    assert_eq!(item["kind"], "authorization", "{run}");
    assert_eq!(item["arguments"]["provider"], "calendar");
    let url = item["arguments"]["consent_url"].as_str().unwrap();
    assert!(
        url.contains("scope=calendar.read"),
        "the document's scopes: {url}"
    );
    let location = consent_location(url, "allow").await;
    assert!(location.starts_with(&callback), "{location}");
    assert_eq!(reqwest::get(&location).await.unwrap().status(), 200);
    let id = run["id"].as_str().unwrap();
    let done = settled(&server, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let call = me_result(&server, id).await;
    assert!(
        call["result"]
            .as_str()
            .unwrap()
            .contains("\"user\":\"alice\""),
        "{call}"
    );
    let issued = issued_tokens(&auth).await;
    assert!(!issued.iter().any(|t| call.to_string().contains(t.as_str())));
}

/// `toolgate ARGS` on `site`'s database and keys, consents returning to `callback`.
fn cli_at(site: &serving::Site, keys: &Path, callback: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(serving::bin());
    // A run of the command line acts for `cli:$USER` of its `--tenant`.
    cmd.arg("--db")
        .arg(site.db())
        .args(["--tenant", "acme"])
        .args(args)
        .current_dir(site.path())
        .env("USER", "alice")
        .env("TOOLGATE_KEY_DIR", keys)
        .env("TOOLGATE_OAUTH_CALLBACK", callback)
        .env_remove("TOOLGATE_SECRET_KEY")
        .env_remove("TOOLGATE_SECRET_KEY_FILE")
        .env_remove("OPENAI_API_KEY");
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_takes_the_consent_on_its_loopback_and_continues_the_run() {
    let auth = start_auth_server();
    let (site, keys) = viewer_site("calendar_me.yaml", &calendar_tool(&auth), "calendar_me");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let callback = format!("http://127.0.0.1:{port}/v1/oauth/callback");
    reqwest::Client::new()
        .post(format!("{}/admin/redirect_uri", auth.base))
        .body(callback.clone())
        .send()
        .await
        .unwrap();
    let agent = site.path().join("agents/viewer.yaml");
    let out = cli_at(
        &site,
        &keys,
        &callback,
        &[
            "run",
            "--agent",
            agent.to_str().unwrap(),
            "--tools",
            "tools",
            "--json",
            "Who am I?",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let run: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        run["required_action"]["items"][0]["kind"], "authorization",
        "{run}"
    );
    let id = run["id"].as_str().unwrap().to_string();

    let mut connect = cli_at(
        &site,
        &keys,
        &callback,
        &["oauth", "connect", &id, "--json", "--timeout", "60"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(connect.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("connect printed the consent URL")
            .unwrap();
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    // The person's browser: consents, and is sent back to the CLI's loopback.
    let location = consent_location(&url, "allow").await;
    assert!(location.starts_with(&callback), "{location}");
    let page = reqwest::get(&location).await.unwrap();
    assert_eq!(page.status(), 200);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = connect.wait().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut connect.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(status.success(), "{rest:?}\n{stdout}");
    let done: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    let calls = cli_at(&site, &keys, &callback, &["calls", "--json", "--run", &id])
        .output()
        .unwrap();
    let calls = String::from_utf8_lossy(&calls.stdout);
    assert!(
        calls.contains("\\\"user\\\":\\\"alice\\\"") || calls.contains("alice"),
        "{calls}"
    );
    for token in issued_tokens(&auth).await {
        assert!(!calls.contains(&token) && !stdout.contains(&token));
    }
}

/// The remote MCP server that requires OAuth and its authorization server
/// (tests/py/oauth_mcp_server.py), stopped when dropped.
struct NotesServer {
    child: Child,
    auth: String,
    mcp: String,
}

impl Drop for NotesServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_notes_server() -> NotesServer {
    let python = serving::python("tests/oauth.rs");
    let mut child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/oauth_mcp_server.py"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut port = |what: &str| {
        let line = lines.next().unwrap().unwrap();
        let port = line
            .strip_prefix(what)
            .unwrap_or_else(|| panic!("the MCP server did not start: {line:?}"));
        format!("http://127.0.0.1:{}", port.trim())
    };
    let (auth, mcp) = (port("AUTH "), port("MCP "));
    NotesServer { child, auth, mcp }
}

/// The server's declaration: `oauth: true` (everything discovered, toolgate registers
/// itself), its tools named only.
fn notes_declaration(notes: &NotesServer) -> String {
    format!(
        "mcp_server: notes\nurl: \"{}/mcp\"\noauth: true\npermission: auto\ntools:\n  - name: whoami\n  - name: notes\n",
        notes.mcp
    )
}

/// The one call of run `id`, once the run has finished.
async fn finished_call(server: &serving::Server, id: &str) -> serde_json::Value {
    let done = settled(server, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    me_result(server, id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_mcp_server_that_requires_oauth_is_called_as_the_user_on_both_backends() {
    let notes = start_notes_server();
    for db in TestDb::both() {
        let site = site_on(&db);
        notes_as_alice(&notes, &site, db.name()).await;
    }
}

async fn notes_as_alice(notes: &NotesServer, site: &serving::Site, name: &str) {
    let keys = site.path().join("keys");
    std::fs::write(
        site.path().join("tools/notes.yaml"),
        notes_declaration(notes),
    )
    .unwrap();
    calling_agents(site, "notes__whoami", &["first", "again"]);
    let key = serving::identity::keys_create(site, "acme", "alice", "client", "");
    let bob = serving::identity::keys_create(site, "acme", "bob", "client", "");
    let keys_env = keys.to_str().unwrap();
    let server = start_with(site, keys_env, &key);
    let callback = format!("{}/v1/oauth/callback", server.base);

    // Not connected: the run pauses; the consent URL is the discovered authorization
    // server's, for the client toolgate registered, naming the resource and its scope.
    let run = start_run(&server, "first").await;
    assert_eq!(run["status"], "requires_action", "{name}: {run}");
    let item = &run["required_action"]["items"][0];
    assert_eq!(item["kind"], "authorization", "{name}: {run}");
    assert_eq!(item["arguments"]["provider"], "notes");
    let url = url::Url::parse(item["arguments"]["consent_url"].as_str().unwrap()).unwrap();
    assert!(url.as_str().starts_with(&notes.auth), "{url}");
    let query: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(query["resource"], format!("{}/mcp", notes.mcp), "{url}");
    assert_eq!(query["scope"], "notes.read", "{url}");
    let clients: Vec<String> = reqwest::get(format!("{}/admin/clients", notes.auth))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(clients.contains(&query["client_id"]), "{name}: {clients:?}");

    let location = consent_location(url.as_str(), "allow").await;
    assert!(location.starts_with(&callback), "{location}");
    let page = reqwest::get(&location).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("Connected notes for alice")
    );
    let call = finished_call(&server, run["id"].as_str().unwrap()).await;
    assert_eq!(call["status"], "succeeded", "{name}: {call}");
    assert!(
        call["result"].as_str().unwrap().contains("you are alice"),
        "{name}: {call}"
    );
    // Bob, of the same tenant, is asked for his own consent: alice's connection is hers.
    let (status, theirs) = server
        .send_as(
            &bob,
            "POST",
            "/v1/runs",
            Some(serde_json::json!({"agent": "first", "input": "Who am I?"})),
        )
        .await;
    assert_eq!(status, 200, "{name}: {theirs}");
    assert_eq!(theirs["status"], "requires_action", "{name}: {theirs}");
    assert_eq!(
        theirs["required_action"]["items"][0]["arguments"]["user"],
        "bob"
    );

    // A restart (another callback URL), every access token revoked: the server refuses
    // the kept one (401), it is refreshed once as the client it was issued to, and the
    // call goes through.
    drop(server);
    let server = start_with(site, keys_env, &key);
    // The list alice's connection got replaced the declared names.
    let (_, tools) = server.get("/v1/tools").await;
    let whoami = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "notes__whoami")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        whoami["description"], "Says whom the token is for.",
        "{name}: {tools}"
    );
    reqwest::Client::new()
        .post(format!("{}/admin/revoke", notes.auth))
        .send()
        .await
        .unwrap();
    let run = start_run(&server, "again").await;
    let call = finished_call(&server, run["id"].as_str().unwrap()).await;
    assert!(
        call["result"].as_str().unwrap().contains("you are alice"),
        "{name}: {call}"
    );
    let (_, listed) = server.get("/v1/calls").await;
    let issued = issued_tokens_at(&notes.auth).await;
    assert!(issued.len() >= 3, "{issued:?}");
    assert!(
        !issued
            .iter()
            .any(|t| listed.to_string().contains(t.as_str())),
        "{name}: a token in a record"
    );

    // Revoked from the command line, told to the provider (its declaration found in
    // the tools folder): no token of alice's works any more.
    drop(server);
    let out = Command::new(serving::bin())
        .arg("--db")
        .arg(site.db())
        .args([
            "--tenant", "acme", "oauth", "revoke", "notes", "--user", "alice",
        ])
        .args(["--tools", "tools"])
        .current_dir(site.path())
        .env("TOOLGATE_KEY_DIR", &keys)
        .env_remove("TOOLGATE_SECRET_KEY")
        .env_remove("TOOLGATE_SECRET_KEY_FILE")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name}: {said}");
    assert!(
        said.contains("notes revoked the tokens too"),
        "{name}: {said}"
    );
    assert_eq!(live_tokens(&notes.auth).await, (0, 0), "{name}");
}

/// The access and refresh tokens the authorization server at `base` would still honour.
async fn live_tokens(base: &str) -> (u64, u64) {
    let live: serde_json::Value = reqwest::get(format!("{base}/admin/live"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (
        live["access"].as_u64().unwrap(),
        live["refresh"].as_u64().unwrap(),
    )
}

/// Every token the authorization server at `base` issued.
async fn issued_tokens_at(base: &str) -> Vec<String> {
    let all: Vec<String> = reqwest::get(format!("{base}/admin/tokens"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    all
}

#[test]
fn an_oauth_mcp_server_without_declared_tools_is_a_load_error_that_says_what_to_do() {
    let site = serving::Site::new();
    // Nothing listens there: an `oauth` server is never listed at load.
    std::fs::write(
        site.path().join("tools/mcp.json"),
        r#"{"mcpServers": {"notes": {"type": "http", "url": "http://127.0.0.1:9/mcp", "oauth": true}}}"#,
    )
    .unwrap();
    let out = serving::cli(&site, &["tools", "check", "tools"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(
            "requires a user's OAuth token to list its tools: declare them under `tools:`"
        ),
        "{text}"
    );
}
