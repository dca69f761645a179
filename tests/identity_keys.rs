//! Identities a server accepts: keys toolgate issues (found by their hash, expired,
//! revoked) and an app's JWTs checked with the keys of a JWKS (ES256 from a URL,
//! RS256 from a file).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::process::Command;

use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::{Value, json};
use serving::{Server, Site};

use crate::databases::TestDb;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Issued keys are found by their hash, on both backends: a revoked or expired one is
/// refused by name, an unknown one is unknown, a taken name is refused.
#[test]
fn issued_keys_expire_and_are_revoked() {
    // The databases first: making one blocks, which no runtime's thread may do.
    let dbs = TestDb::both();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(issued_keys_on(dbs));
}

async fn issued_keys_on(dbs: [TestDb; 2]) {
    use toolgate::identity::{Role, Roles};
    use toolgate::store::{KeyLookup, NewKey, Refusal, StoreError};
    for db in dbs {
        let name = db.name();
        let store = db.open();
        let new = |name: &str, hash: &str, expires_at: Option<i64>| NewKey {
            id: format!("key_{name}"),
            name: name.into(),
            hash: hash.into(),
            roles: Roles::of(&[Role::Approver]),
            tenant: "a".into(),
            groups: vec!["finance".into()],
            // Its allow-lists: agents limited (one name), tools empty (nothing).
            allow: toolgate::identity::Allow {
                agents: Some(vec!["payments".into()]),
                tools: Some(vec![]),
            },
            expires_at,
        };
        let old = store.create_key(new("old", "h1", Some(1))).await.unwrap();
        assert_eq!(
            (old.id.as_str(), old.expires_at, old.revoked_at),
            ("key_old", Some(1), None),
            "{name}"
        );
        assert!((old.created_at - now() * 1000).abs() < 60_000, "{name}");
        // Listed by creation time (then by name): one later.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        store.create_key(new("live", "h2", None)).await.unwrap();
        let taken = store.create_key(new("live", "h3", None)).await.unwrap_err();
        assert_eq!(
            taken,
            StoreError::Refused(
                Refusal::NameTaken,
                "a key named 'live' exists already (names are never reused)".into()
            ),
            "{name}"
        );
        assert_eq!(
            store.key_by_hash("h1").await.unwrap(),
            KeyLookup::Expired("old".into()),
            "{name}"
        );
        match store.key_by_hash("h2").await.unwrap() {
            KeyLookup::Valid(who) => {
                assert_eq!(
                    (who.name.as_str(), who.roles, who.tenant.as_str()),
                    ("live", Roles::of(&[Role::Approver]), "a"),
                    "{name}"
                );
                assert_eq!(who.key_id.as_deref(), Some("key_live"), "{name}");
                assert_eq!(who.groups, ["finance"], "{name}");
                assert_eq!(
                    (who.allow.agents.as_deref(), who.allow.tools.as_deref()),
                    (Some(&["payments".to_string()][..]), Some(&[][..])),
                    "{name}: the allow-lists come back as issued"
                );
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(store.any_live_key().await.unwrap(), "{name}");
        assert!(store.revoke_key("live").await.unwrap(), "{name}");
        assert!(!store.revoke_key("live").await.unwrap(), "{name}");
        assert!(!store.revoke_key("nobody").await.unwrap(), "{name}");
        assert_eq!(
            store.key_by_hash("h2").await.unwrap(),
            KeyLookup::Revoked("live".into()),
            "{name}"
        );
        assert_eq!(
            store.key_by_hash("nope").await.unwrap(),
            KeyLookup::Unknown,
            "{name}"
        );
        assert!(!store.any_live_key().await.unwrap(), "{name}");
        // Listed oldest first, revoked ones too, never with the hash.
        let keys = store.keys().await.unwrap();
        let listed: Vec<(&str, bool)> = keys
            .iter()
            .map(|k| (k.name.as_str(), k.revoked_at.is_some()))
            .collect();
        assert_eq!(listed, [("old", false), ("live", true)], "{name}");
        assert_eq!(keys[1].groups, ["finance"], "{name}");
        assert!(
            !serde_json::to_string(&keys).unwrap().contains("h2"),
            "{name}"
        );
        // A key issued without an end is live again.
        store.create_key(new("again", "h4", None)).await.unwrap();
        assert!(store.any_live_key().await.unwrap(), "{name}");
    }
}

/// Workers issuing keys of one name at once: one gets it, the others are refused.
#[test]
fn one_name_issued_by_workers_at_once_is_taken_once_on_postgres() {
    use toolgate::identity::{Role, Roles};
    use toolgate::store::{NewKey, Refusal, Store, StoreError};
    let db = TestDb::postgres();
    drop(db.open());
    let workers = 4;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(workers));
    let results: Vec<_> = (0..workers)
        .map(|w| {
            let (url, barrier) = (db.arg().to_string(), barrier.clone());
            std::thread::spawn(move || {
                let store = Store::open(std::path::Path::new(&url)).unwrap();
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                barrier.wait();
                rt.block_on(store.create_key(NewKey {
                    id: format!("key_{w}"),
                    name: "shared".into(),
                    hash: format!("hash_{w}"),
                    roles: Roles::of(&[Role::Client]),
                    tenant: "a".into(),
                    groups: vec![],
                    allow: Default::default(),
                    expires_at: None,
                }))
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let made = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(made, 1, "{results:?}");
    for r in results.iter().filter(|r| r.is_err()) {
        assert!(
            matches!(r, Err(StoreError::Refused(Refusal::NameTaken, _))),
            "{r:?}"
        );
    }
}

/// `toolgate --db DB keys create/list/revoke`, on both backends.
#[test]
fn keys_are_issued_listed_and_revoked_from_the_command_line() {
    for db in TestDb::both() {
        let name = db.name();
        drop(db.open());
        let dir = tempfile::tempdir().unwrap();
        let toolgate = |args: &[&str]| {
            let out = Command::new(toolgate_test_support::bin())
                .arg("--db")
                .arg(db.arg())
                .args(args)
                .current_dir(dir.path())
                .env_remove("TOOLGATE_DB")
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                text,
            )
        };
        let (code, stdout, text) = toolgate(&[
            "--tenant",
            "a",
            "keys",
            "create",
            "--name",
            "ops",
            "--role",
            "approver",
            "--groups",
            "finance,hr",
            "--json",
        ]);
        assert_eq!(code, Some(0), "{name}: {text}");
        let made: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(
            (&made["name"], &made["role"], &made["tenant"]),
            (&json!("ops"), &json!("approver"), &json!("a")),
            "{name}"
        );
        let key = made["key"].as_str().unwrap().to_string();
        assert!(key.starts_with("tg_"), "{name}");
        let (code, _, text) = toolgate(&["keys", "create", "--name", "ops", "--role", "client"]);
        assert_eq!(code, Some(2), "{name}: {text}");
        assert!(text.contains("exists already"), "{name}: {text}");
        let (code, stdout, text) = toolgate(&["keys", "list", "--json"]);
        assert_eq!(code, Some(0), "{name}: {text}");
        let listed: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 1, "{name}: {listed}");
        assert_eq!(listed[0]["groups"], json!(["finance", "hr"]), "{name}");
        assert_eq!(listed[0]["revoked_at"], Value::Null, "{name}");
        assert!(!stdout.contains(&key), "{name}: the key is listed");
        let (code, _, text) = toolgate(&["keys", "revoke", "ops"]);
        assert_eq!(code, Some(0), "{name}: {text}");
        let (code, _, text) = toolgate(&["keys", "revoke", "ops"]);
        assert_ne!(code, Some(0), "{name}: {text}");
        assert!(text.contains("no active key named 'ops'"), "{name}: {text}");
        let (_, stdout, _) = toolgate(&["keys", "list"]);
        assert!(stdout.contains("revoked"), "{name}: {stdout}");
    }
}

/// `--jwks URL` (fetched at start): an ES256 token signed with the JWKS's key is
/// accepted; one signed with another key, or naming another kid, is 401.
#[tokio::test(flavor = "multi_thread")]
async fn jwks_keys_check_es256_tokens() {
    use base64::Engine as _;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let point = pair.public_key_raw();
    assert_eq!(point.len(), 65);
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
        "x": b64.encode(&point[1..33]), "y": b64.encode(&point[33..65])}]});
    let idp = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/jwks.json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(&jwks))
        .mount(&idp)
        .await;
    let site = Site::new();
    let url = format!("{}/jwks.json", idp.uri());
    let server = Server::start(
        &site,
        None,
        &["--jwks", &url, "--jwt-claims", "tenant=org_id"],
    );
    let sign = |pem: &str, kid: &str| {
        let mut header = Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.into());
        encode(
            &header,
            &json!({"sub": "app-user", "org_id": "a", "roles": "client", "exp": now() + 600}),
            &EncodingKey::from_ec_pem(pem.as_bytes()).unwrap(),
        )
        .unwrap()
    };
    let other = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let get = |token: String| {
        let (client, url) = (server.client.clone(), server.url("/v1/whoami"));
        async move {
            let r = client.get(url).bearer_auth(token).send().await.unwrap();
            (
                r.status().as_u16(),
                r.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (s, me) = get(sign(&pair.serialize_pem(), "k1")).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(
        me,
        json!({"name": "app-user", "key_id": null, "role": "client", "roles": ["client"], "tenant": "a", "groups": [], "agents": null, "tools": null})
    );
    let (s, e) = get(sign(&other.serialize_pem(), "k1")).await;
    assert_eq!(s, 401, "{e}");
    let (s, e) = get(sign(&pair.serialize_pem(), "k2")).await;
    assert_eq!(s, 401, "{e}");
}

/// `--jwks FILE` with an RSA key (made by the `openssl` command): RS256 tokens signed
/// with it are accepted, an expired one is not.
#[tokio::test(flavor = "multi_thread")]
async fn a_jwks_file_checks_rs256_tokens() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let site = Site::new();
    let pem_path = site.path().join("rsa.pem");
    let made = Command::new("openssl")
        .args(["genrsa", "-out"])
        .arg(&pem_path)
        .arg("2048")
        .output()
        .expect("openssl must be on PATH for the RS256 test");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let modulus = Command::new("openssl")
        .args(["rsa", "-noout", "-modulus", "-in"])
        .arg(&pem_path)
        .output()
        .unwrap();
    let hex = String::from_utf8(modulus.stdout).unwrap();
    let hex = hex.trim().trim_start_matches("Modulus=");
    let n: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let jwks = json!({"keys": [{"kty": "RSA", "kid": "r1", "alg": "RS256", "use": "sig",
        "n": b64.encode(&n), "e": "AQAB"}]});
    let jwks_path = site.path().join("jwks.json");
    std::fs::write(&jwks_path, jwks.to_string()).unwrap();
    let server = Server::start(&site, None, &["--jwks", jwks_path.to_str().unwrap()]);
    let pem = std::fs::read(&pem_path).unwrap();
    let sign = |exp: i64| {
        let mut header = Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some("r1".into());
        encode(
            &header,
            &json!({"sub": "svc", "tenant": "b", "roles": ["admin"], "exp": exp}),
            &EncodingKey::from_rsa_pem(&pem).unwrap(),
        )
        .unwrap()
    };
    let who = |token: String| {
        let (client, url) = (server.client.clone(), server.url("/v1/whoami"));
        async move {
            let r = client.get(url).bearer_auth(token).send().await.unwrap();
            (
                r.status().as_u16(),
                r.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (s, me) = who(sign(now() + 600)).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["role"], "admin");
    assert_eq!(me["tenant"], "b");
    let (s, e) = who(sign(now() - 600)).await;
    assert_eq!(s, 401, "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("expired"),
        "{e}"
    );
}
