//! Identities a server accepts: keys toolgate issues (found by their hash, expired,
//! revoked) and an app's JWTs checked with the keys of a JWKS (ES256 from a URL,
//! RS256 from a file).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::process::Command;

use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::{Value, json};
use serving::{Server, Site};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Issued keys are found by their hash: a revoked or expired one is refused by name,
/// an unknown one is unknown.
#[tokio::test(flavor = "multi_thread")]
async fn issued_keys_expire_and_are_revoked() {
    use toolgate::identity::Role;
    use toolgate::store::{KeyLookup, NewKey, Store};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("k.db")).unwrap();
    let new = |name: &str, hash: &str, expires_at: Option<i64>| NewKey {
        id: format!("key_{name}"),
        name: name.into(),
        hash: hash.into(),
        role: Role::Approver,
        tenant: "a".into(),
        groups: vec!["finance".into()],
        expires_at,
    };
    store.create_key(new("old", "h1", Some(1))).await.unwrap();
    store.create_key(new("live", "h2", None)).await.unwrap();
    assert!(store.create_key(new("live", "h3", None)).await.is_err());
    assert_eq!(
        store.key_by_hash("h1").await.unwrap(),
        KeyLookup::Expired("old".into())
    );
    match store.key_by_hash("h2").await.unwrap() {
        KeyLookup::Valid(who) => {
            assert_eq!(
                (who.name.as_str(), who.role, who.tenant.as_str()),
                ("live", Role::Approver, "a")
            );
            assert_eq!(who.groups, ["finance"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(store.any_live_key().await.unwrap());
    assert!(store.revoke_key("live").await.unwrap());
    assert!(!store.revoke_key("live").await.unwrap());
    assert_eq!(
        store.key_by_hash("h2").await.unwrap(),
        KeyLookup::Revoked("live".into())
    );
    assert_eq!(store.key_by_hash("nope").await.unwrap(), KeyLookup::Unknown);
    assert!(!store.any_live_key().await.unwrap());
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
        json!({"name": "app-user", "key_id": null, "role": "client", "tenant": "a", "groups": []})
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
