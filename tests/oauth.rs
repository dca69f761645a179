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
    let location = answer.headers()["location"].to_str().unwrap().to_string();
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
    assert_eq!(broker.access_token(&provider, &owner).await.unwrap(), None, "{name}");

    // The consent for a paused call; the URL carries PKCE S256 and an unguessable state.
    let url = broker
        .begin(&provider, owner.clone(), Some("run_1".into()), Some("call_1".into()))
        .await
        .unwrap();
    assert!(url.starts_with(&format!("{}/authorize?", server.base)), "{url}");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let callback = consent(&url, "allow").await;
    assert_eq!(callback.state.len(), 43);
    let done = broker.complete(&callback, |_| Some(provider.clone())).await.unwrap();
    assert_eq!(done.outcome, Ok(()), "{name}");
    assert_eq!((done.run_id.as_deref(), done.call_id.as_deref()), (Some("run_1"), Some("call_1")));
    assert_eq!(done.owner, owner);
    // A state works once.
    let again = broker.complete(&callback, |_| Some(provider.clone())).await;
    assert!(matches!(again, Err(BrokerError::UnknownState)), "{name}: {again:?}");

    let first = broker.access_token(&provider, &owner).await.unwrap().unwrap();
    assert_eq!(me(server, &first).await, Ok("alice".into()), "{name}");
    // Sealed in the store: the token is not in the grant list nor the stored row.
    let stored = db.open().oauth_tokens(&owner).await.unwrap().unwrap();
    assert!(!stored.sealed.contains(&first), "{name}: the token is stored in clear");
    assert_eq!(stored.scope.as_deref(), Some("calendar.read"));

    // A restart: a new store and broker on the same database and key.
    drop(broker);
    let broker = self::broker(db, key);
    let after = broker.access_token(&provider, &owner).await.unwrap().unwrap();
    assert_eq!(after, first, "{name}: the tokens did not survive the restart");

    // The resource refuses the token: refreshed once, and the new one works.
    reqwest::Client::new()
        .post(format!("{}/admin/revoke", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(me(server, &first).await, Err(401));
    let second = broker.after_unauthorized(&provider, &owner).await.unwrap().unwrap();
    assert_ne!(second, first);
    assert_eq!(me(server, &second).await, Ok("alice".into()), "{name}");
    // A refreshed token lives 30 s, within the minute's margin: refreshed before use.
    let third = broker.access_token(&provider, &owner).await.unwrap().unwrap();
    assert_ne!(third, second, "{name}: a token about to expire was not refreshed");
    assert_eq!(me(server, &third).await, Ok("alice".into()), "{name}");

    // A refused consent is a sentence, and no tokens change.
    let url = broker.begin(&provider, owner.clone(), None, None).await.unwrap();
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
    assert_eq!((grants[0].user.as_str(), grants[0].provider.as_str()), ("alice", "calendar"));
    assert!(!serde_json::to_string(&grants).unwrap().contains(&third));
    assert!(store.remove_oauth_tokens(owner.clone()).await.unwrap());
    assert_eq!(broker.access_token(&provider, &owner).await.unwrap(), None, "{name}");
}
