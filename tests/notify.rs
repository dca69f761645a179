//! Notifications (`serve --notify-url`) against a small local receiver: the body, the
//! HMAC-SHA256 signature checked as a receiver would, retries with backoff (a
//! receiver that fails twice gets a third attempt), a failed run's notification, and
//! the key they need.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use serving::{Server, Site};
use sha2::Sha256;

const SECRET: &str = "notify-test-secret";

#[derive(Clone, Default)]
struct Received {
    /// Every attempt: its headers and body.
    attempts: Arc<Mutex<Vec<(HeaderMap, Bytes)>>>,
}

/// A receiver on a free port that answers 500 to the first `failures` attempts, then
/// 200; returns its URL.
async fn receiver(failures: usize) -> (String, Received) {
    let got = Received::default();
    let seen = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let seen = seen.clone();
            async move {
                let mut a = seen.attempts.lock().unwrap();
                a.push((headers, body));
                if a.len() <= failures {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::OK
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

/// Waits until the receiver has `n` attempts (or gives up after a generous deadline).
async fn attempts(got: &Received, n: usize) -> Vec<(HeaderMap, Bytes)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let a = got.attempts.lock().unwrap().clone();
        if a.len() >= n || Instant::now() > deadline {
            return a;
        }
        drop(a);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What a receiver does: the timestamp within five minutes of its clock, then the
/// HMAC-SHA256 of `TIMESTAMP.DELIVERY.BODY` under the shared secret, compared in
/// constant time with the header's hex.
fn verified(headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(timestamp), Some(delivery)) = (
        header("x-toolgate-timestamp"),
        header("x-toolgate-delivery"),
    ) else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    match timestamp.parse::<u64>() {
        Ok(t) if t.abs_diff(now) <= 300 => {}
        _ => return false,
    }
    let mut signed = format!("{timestamp}.{delivery}.").into_bytes();
    signed.extend_from_slice(body);
    signed_by_secret(headers, &signed)
}

fn signed_by_secret(headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(given) = headers
        .get("x-toolgate-signature")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("sha256="))
    else {
        return false;
    };
    let Ok(given) = (0..given.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(given.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<Vec<u8>, _>>()
    else {
        return false;
    };
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

fn serve(site: &Site, url: &str) -> Server {
    Server::start_env(
        site,
        None,
        &[
            "--notify-url",
            url,
            "--public-url",
            "https://inbox.example.test/tg/",
        ],
        &[("TOOLGATE_NOTIFY_SECRET", SECRET)],
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_run_is_posted_signed_and_retried_until_taken() {
    let (url, got) = receiver(2).await;
    let site = Site::new();
    let server = serve(&site, &url);
    let (status, run) = server
        .post(
            "/v1/runs",
            serde_json::json!({"agent": "assistant", "input": "Work it out."}),
        )
        .await;
    // The run answered while the receiver was still failing: it was not held up.
    assert_eq!(status, 200);
    assert_eq!(run["status"], "requires_action");
    let id = run["id"].as_str().unwrap();

    let a = attempts(&got, 3).await;
    assert_eq!(a.len(), 3, "two failures, then the third attempt is taken");
    let (headers, body) = &a[2];
    for (h, b) in &a {
        assert_eq!(b, body, "every attempt carries the same body");
        assert_eq!(h["x-toolgate-delivery"], headers["x-toolgate-delivery"]);
        assert!(verified(h, b), "the signature checks out");
    }
    assert!(
        !verified(headers, b"{}"),
        "a signature of another body does not"
    );
    assert!(
        !signed_by_secret(headers, body),
        "the body alone is not what is signed: a replay with another delivery id fails"
    );
    let mut replayed = headers.clone();
    replayed.insert("x-toolgate-delivery", "another-id".parse().unwrap());
    assert!(!verified(&replayed, body), "the delivery id is signed");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["x-toolgate-event"], "run.requires_action");
    let n: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(n["event"], "run.requires_action");
    assert_eq!(n["run_id"], id);
    assert_eq!(n["agent"], "assistant");
    assert_eq!(n["conversation_id"], run["conversation_id"]);
    assert_eq!(n["status"], "requires_action");
    assert_eq!(
        n["link"],
        format!("https://inbox.example.test/tg/runs/{id}")
    );
    let waiting: Vec<&str> = n["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(waiting, ["call_write", "call_ask"]);
    assert_eq!(n["waiting"][0]["kind"], "approval");
    assert_eq!(n["waiting"][0]["tool"], "write_file");
    assert_eq!(n["waiting"][0]["arguments"]["path"], "result.txt");
}

/// A receiver that redirects (307 keeps the method and body, 302 turns it into a GET)
/// to an internal address: the notifier follows neither; the internal address never
/// sees a request, signed or not, and the attempts go on against the URL given.
#[tokio::test(flavor = "multi_thread")]
async fn redirects_are_never_followed() {
    for status in [307u16, 302] {
        let (internal, reached) = receiver(0).await;
        let got = Received::default();
        let seen = got.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let (seen, internal) = (seen.clone(), internal.clone());
                async move {
                    seen.attempts.lock().unwrap().push((headers, body));
                    (
                        StatusCode::from_u16(status).unwrap(),
                        [(axum::http::header::LOCATION, internal)],
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let site = Site::new();
        let server = serve(&site, &url);
        let (_, run) = server
            .post(
                "/v1/runs",
                serde_json::json!({"agent": "assistant", "input": "Work it out."}),
            )
            .await;
        assert_eq!(run["status"], "requires_action");
        let a = attempts(&got, 2).await;
        assert!(a.len() >= 2, "a redirect is a failed attempt, tried again");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            reached.attempts.lock().unwrap().is_empty(),
            "{status}: the notifier followed the redirect to the internal address"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_run_is_posted() {
    let (url, got) = receiver(0).await;
    let site = Site::new();
    // One reply, then nothing: the second model call fails the run.
    site.agent(
        "short",
        "[calculator]",
        "  - content: Adding.\n    tool_calls: [{id: call_add, name: calculator, arguments: {expression: \"1+1\"}}]\n",
    );
    let server = serve(&site, &url);
    let (_, run) = server
        .post(
            "/v1/runs",
            serde_json::json!({"agent": "short", "input": "Add."}),
        )
        .await;
    assert_eq!(run["status"], "failed", "{run}");
    let a = attempts(&got, 1).await;
    assert_eq!(a.len(), 1);
    let (headers, body) = &a[0];
    assert!(verified(headers, body));
    let n: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(n["event"], "run.failed");
    assert_eq!(n["run_id"], run["id"]);
    assert_eq!(n["waiting"], serde_json::json!([]));
    assert!(
        n["error"].as_str().unwrap().contains("scripted model"),
        "{n}"
    );
}

#[test]
fn notify_urls_need_the_signing_key() {
    let site = Site::new();
    let out = std::process::Command::new(serving::bin())
        .current_dir(site.path())
        .arg("--db")
        .arg(site.db())
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--notify-url",
            "http://127.0.0.1:9/hook",
        ])
        .env_remove("TOOLGATE_NOTIFY_SECRET")
        .env_remove("TOOLGATE_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TOOLGATE_NOTIFY_SECRET"), "{err}");
}
