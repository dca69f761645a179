//! The management API's keys on a real `toolgate serve`: an admin issues a key with
//! groups, allow-lists, an expiry and a budget over `POST /v1/keys`, the key works at
//! once, lists (API and `toolgate keys list`, one store) show it without the key, bad
//! input is refused with the command line's own words, a taken name is a 409, and
//! `DELETE /v1/keys/{name}` revokes it for good.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use serde_json::json;
use serving::identity::keys_create;
use serving::{Server, Site, cli};

const ADMIN: &str = "the-admin-key-of-this-test";

#[tokio::test(flavor = "multi_thread")]
async fn an_admin_issues_lists_and_revokes_keys_over_http() {
    let site = Site::new();
    let by_cli = keys_create(&site, "b", "b-app", "client", "");
    let server = Server::start(&site, Some(ADMIN), &[]);

    let (s, made) = server
        .send_as(
            ADMIN,
            "POST",
            "/v1/keys",
            Some(json!({
                "name": "ci-bot", "role": "client,approver", "tenant": "a", "groups": ["ops"],
                "agents": ["plain"], "tools": ["calc*"], "expires": "30d",
                "budgets": ["5usd/month:fail"]
            })),
        )
        .await;
    assert_eq!(s, 201, "{made}");
    let key = made["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("tg_") && key.len() > 40, "{made}");
    assert_eq!(made["state"], "active");
    assert_eq!(made["roles"], json!(["client", "approver"]));
    assert_eq!(made["budgets"], json!(["5usd/month:fail"]));
    let day = 86_400_000_i64;
    let lasts = made["expires_at"].as_i64().unwrap() - made["created_at"].as_i64().unwrap();
    assert!((lasts - 30 * day).abs() < 60_000, "{made}");

    // The key works at once, as what it was issued as.
    let (s, me) = server.send_as(&key, "GET", "/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(
        (
            &me["name"],
            &me["tenant"],
            &me["groups"],
            &me["agents"],
            &me["tools"]
        ),
        (
            &json!("ci-bot"),
            &json!("a"),
            &json!(["ops"]),
            &json!(["plain"]),
            &json!(["calc*"])
        )
    );
    // ...but it is no admin: the management routes are closed to it.
    let (s, _) = server.send_as(&key, "GET", "/v1/keys", None).await;
    assert_eq!(s, 403);

    // Listed by the API (with the CLI's key) and by the CLI (with the API's): one store.
    let (s, listed) = server.send_as(ADMIN, "GET", "/v1/keys", None).await;
    assert_eq!(s, 200, "{listed}");
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b-app", "ci-bot"]);
    let text = listed.to_string();
    assert!(
        !text.contains(&key) && !text.contains(&by_cli) && !text.contains("hash"),
        "{text}"
    );
    let out = cli(&site, &["keys", "list", "--json"]);
    let by_cmd = String::from_utf8(out.stdout).unwrap();
    assert!(
        by_cmd.contains("ci-bot") && by_cmd.contains("\"ops\""),
        "{by_cmd}"
    );

    // Bad input: the API's 400 says what the command line says.
    let (s, bad) = server
        .send_as(
            ADMIN,
            "POST",
            "/v1/keys",
            Some(json!({"name": "x", "role": "owner"})),
        )
        .await;
    assert_eq!(s, 400, "{bad}");
    assert_eq!(bad["error"]["type"], "bad_request", "{bad}");
    let out = cli(&site, &["keys", "create", "--name", "x", "--role", "owner"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(said.contains(message), "{said} / {message}");
    for body in [
        json!({"name": "a b", "role": "client"}),
        json!({"name": "y", "role": "client", "tools": ["x/y"]}),
        json!({"name": "y", "role": "client", "expires": "soon"}),
        json!({"name": "y", "role": "client", "budgets": ["lots"]}),
        json!({"name": "y", "role": "client", "colour": "red"}),
    ] {
        let (s, bad) = server
            .send_as(ADMIN, "POST", "/v1/keys", Some(body.clone()))
            .await;
        assert_eq!(s, 400, "{body}: {bad}");
    }
    let (s, _) = server.send_as(ADMIN, "GET", "/v1/keys", None).await;
    assert_eq!(s, 200);
    // Nothing was stored by the refusals: still two keys.
    let (_, listed) = server.send_as(ADMIN, "GET", "/v1/keys", None).await;
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    let (s, taken) = server
        .send_as(
            ADMIN,
            "POST",
            "/v1/keys",
            Some(json!({"name": "b-app", "role": "client"})),
        )
        .await;
    assert_eq!(s, 409, "{taken}");

    // Revoked over HTTP: refused from now on, and a second revoke finds nothing.
    let (s, _) = server
        .send_as(ADMIN, "DELETE", "/v1/keys/ci-bot", None)
        .await;
    assert_eq!(s, 204);
    let (s, _) = server.send_as(&key, "GET", "/v1/whoami", None).await;
    assert_eq!(s, 401);
    let (s, gone) = server
        .send_as(ADMIN, "DELETE", "/v1/keys/ci-bot", None)
        .await;
    assert_eq!(s, 404, "{gone}");
    let (_, listed) = server.send_as(ADMIN, "GET", "/v1/keys", None).await;
    assert_eq!(listed[1]["state"], "revoked", "{listed}");
    // The CLI's key, revoked by the API, and the API's name, refused by the CLI.
    let (s, _) = server
        .send_as(ADMIN, "DELETE", "/v1/keys/b-app", None)
        .await;
    assert_eq!(s, 204);
    let (s, _) = server.send_as(&by_cli, "GET", "/v1/whoami", None).await;
    assert_eq!(s, 401);
    let out = cli(&site, &["keys", "revoke", "ci-bot"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no active key named 'ci-bot'"));
}

/// `PATCH /v1/keys/{name}` changes a key in place (roles, groups, allow-lists, expiry,
/// budgets) and the key's next request sees it; `null` lifts a limit; `toolgate keys
/// update` is the same implementation on the same store; bad input is a 400 with the
/// command line's words, an unknown or revoked key a 404.
#[tokio::test(flavor = "multi_thread")]
async fn an_admin_changes_a_key_in_place() {
    let site = Site::new();
    let key = keys_create(&site, "a", "helper", "client", "ops");
    let server = Server::start(&site, Some(ADMIN), &[]);
    let (s, row) = server
        .send_as(
            ADMIN,
            "PATCH",
            "/v1/keys/helper",
            Some(
                json!({"role": "client,approver", "groups": ["ops", "audit"],
                "agents": ["plain"], "tools": ["calc*"], "expires": "12h",
                "budgets": ["1usd/day:pause"]}),
            ),
        )
        .await;
    assert_eq!(s, 200, "{row}");
    assert_eq!(row["roles"], json!(["client", "approver"]));
    assert_eq!(row["budgets"], json!(["1usd/day:pause"]));
    assert_eq!(row["tenant"], "a", "the tenant never changes");
    let (s, me) = server.send_as(&key, "GET", "/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(
        (&me["groups"], &me["agents"], &me["tools"]),
        (
            &json!(["ops", "audit"]),
            &json!(["plain"]),
            &json!(["calc*"])
        )
    );
    // An approver now: the approver's routes are open to it.
    let (s, _) = server
        .send_as(&key, "GET", "/v1/runs?status=requires_action", None)
        .await;
    assert_eq!(s, 200);

    // `null` lifts the limits; absent fields stay.
    let (s, row) = server
        .send_as(
            ADMIN,
            "PATCH",
            "/v1/keys/helper",
            Some(json!({"agents": null, "expires": null})),
        )
        .await;
    assert_eq!(s, 200, "{row}");
    assert!(
        row.get("agents").is_none() && row["expires_at"].is_null(),
        "{row}"
    );
    assert_eq!(row["tools"], json!(["calc*"]), "{row}");

    // The command line: the same change, the same store, the same words.
    let out = cli(
        &site,
        &[
            "keys",
            "update",
            "helper",
            "--tools",
            "*",
            "--no-budgets",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let by_cmd: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        by_cmd.get("tools").is_none() && by_cmd["budgets"] == json!([]),
        "{by_cmd}"
    );
    let (_, listed) = server.send_as(ADMIN, "GET", "/v1/keys", None).await;
    assert!(listed[0].get("tools").is_none(), "{listed}");

    for (body, status) in [
        (json!({"role": "owner"}), 400),
        (json!({"tools": ["x/y"]}), 400),
        (json!({"expires": "soon"}), 400),
        (json!({}), 400),
        (json!({"tenant": "b"}), 400),
    ] {
        let (s, bad) = server
            .send_as(ADMIN, "PATCH", "/v1/keys/helper", Some(body.clone()))
            .await;
        assert_eq!(s, status, "{body}: {bad}");
    }
    let out = cli(&site, &["keys", "update", "helper", "--role", "owner"]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        said.contains("role 'owner' is not client, approver, admin"),
        "{said}"
    );
    let (s, _) = server
        .send_as(
            ADMIN,
            "PATCH",
            "/v1/keys/nobody",
            Some(json!({"role": "client"})),
        )
        .await;
    assert_eq!(s, 404);
    let (s, _) = server
        .send_as(ADMIN, "DELETE", "/v1/keys/helper", None)
        .await;
    assert_eq!(s, 204);
    let (s, _) = server
        .send_as(
            ADMIN,
            "PATCH",
            "/v1/keys/helper",
            Some(json!({"role": "admin"})),
        )
        .await;
    assert_eq!(s, 404, "a revoked key stays revoked");
    let (s, _) = server.send_as(&key, "GET", "/v1/whoami", None).await;
    assert_eq!(s, 401);
}

/// The same update on PostgreSQL, through the command line.
#[test]
fn keys_update_on_postgres() {
    let db = crate::databases::TestDb::postgres();
    let run = |args: &[&str]| {
        toolgate_test_support::toolgate(std::path::Path::new("."))
            .arg("--db")
            .arg(db.arg())
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[
        "--tenant",
        "a",
        "keys",
        "create",
        "--name",
        "pg-helper",
        "--role",
        "client",
        "--agents",
        "x",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&[
        "keys",
        "update",
        "pg-helper",
        "--role",
        "approver",
        "--agents",
        "*",
        "--expires",
        "2h",
        "--budget",
        "100tokens/run",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["roles"], json!(["approver"]), "{row}");
    assert!(
        row.get("agents").is_none() && row["expires_at"].is_i64(),
        "{row}"
    );
    assert_eq!(row["budgets"], json!(["100tokens/run:pause"]), "{row}");
    let out = run(&["keys", "update", "nobody", "--role", "client"]);
    assert_eq!(out.status.code(), Some(2));
}
