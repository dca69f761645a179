//! The management API's secrets on a real `toolgate serve`: an admin stores a tenant's
//! secret over `POST /v1/secrets` (sealed: the database never holds the value), lists
//! names only (API and `toolgate secrets list`, one store and one keyring), is refused
//! bad names with the command line's own words, and removes it; other roles are not let
//! in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use serde_json::json;
use serving::identity::keys_create;
use serving::{Server, Site, cli};

const ADMIN: &str = "the-admin-key-of-this-test";
const VALUE: &str = "ghp-a-value-nobody-may-read-back";

#[tokio::test(flavor = "multi_thread")]
async fn an_admin_stores_lists_and_removes_secrets_over_http() {
    let site = Site::new();
    let client = keys_create(&site, "a", "a-app", "client", "");
    let server = Server::start(&site, Some(ADMIN), &[]);

    let body = json!({"name": "github_token", "value": VALUE, "tenant": "a"});
    let (s, _) = server
        .send_as(&client, "POST", "/v1/secrets", Some(body.clone()))
        .await;
    assert_eq!(s, 403, "a client may not store secrets");
    let (s, made) = server
        .send_as(ADMIN, "POST", "/v1/secrets", Some(body))
        .await;
    assert_eq!(s, 204, "{made}");

    // Names only, in the tenant's scope; the shared scope has none.
    let (s, listed) = server
        .send_as(ADMIN, "GET", "/v1/secrets?tenant=a", None)
        .await;
    assert_eq!(s, 200, "{listed}");
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["name"], "github_token");
    assert!(!listed.to_string().contains(VALUE));
    let (_, shared) = server.send_as(ADMIN, "GET", "/v1/secrets", None).await;
    assert_eq!(shared, json!([]));
    let (s, _) = server
        .send_as(&client, "GET", "/v1/secrets?tenant=a", None)
        .await;
    assert_eq!(s, 403);
    // The command line sees the same store.
    let out = cli(&site, &["--tenant", "a", "secrets", "list", "--json"]);
    let by_cmd = String::from_utf8(out.stdout).unwrap();
    assert!(by_cmd.contains("github_token"), "{by_cmd}");
    // Sealed: the value is nowhere in the database's files.
    for entry in std::fs::read_dir(site.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(VALUE.len()).any(|w| w == VALUE.as_bytes()),
                "{} holds the value in clear",
                path.display()
            );
        }
    }

    // Bad input: the API's 400 says what the command line says.
    let (s, bad) = server
        .send_as(
            ADMIN,
            "POST",
            "/v1/secrets",
            Some(json!({"name": "a b", "value": "v"})),
        )
        .await;
    assert_eq!(s, 400, "{bad}");
    let out = cli(&site, &["secrets", "set", "a b", "--from-env", "HOME"]);
    assert!(!out.status.success());
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(message),
        "{message}"
    );
    let (s, _) = server
        .send_as(
            ADMIN,
            "POST",
            "/v1/secrets",
            Some(json!({"name": "x", "value": ""})),
        )
        .await;
    assert_eq!(s, 400);

    // Removed in its scope only: the shared scope has no such secret.
    let (s, _) = server
        .send_as(ADMIN, "DELETE", "/v1/secrets/github_token", None)
        .await;
    assert_eq!(s, 404);
    let (s, _) = server
        .send_as(&client, "DELETE", "/v1/secrets/github_token?tenant=a", None)
        .await;
    assert_eq!(s, 403);
    let (s, _) = server
        .send_as(ADMIN, "DELETE", "/v1/secrets/github_token?tenant=a", None)
        .await;
    assert_eq!(s, 204);
    let (_, listed) = server
        .send_as(ADMIN, "GET", "/v1/secrets?tenant=a", None)
        .await;
    assert_eq!(listed, json!([]));
}
