//! Notifications (`serve --notify-url URL`): when a run pauses for a person or fails,
//! a JSON POST to each URL, signed with HMAC-SHA256 of the body under
//! `TOOLGATE_NOTIFY_SECRET` (`X-Toolgate-Signature: sha256=HEX`), retried with
//! exponential backoff on its own task, so that a slow or failing receiver never holds
//! a run up. Each attempt is logged.

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use sha2::Sha256;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::Hub;
use crate::protocol::{RequiredItem, RunObject, RunStatus};

/// The environment variable holding the signing key.
pub const SECRET_ENV: &str = "TOOLGATE_NOTIFY_SECRET";
/// The header carrying `sha256=` and the hex HMAC-SHA256 of the body.
pub const SIGNATURE_HEADER: &str = "X-Toolgate-Signature";
/// The header naming the notification (`run.requires_action`, `run.failed`).
pub const EVENT_HEADER: &str = "X-Toolgate-Event";
/// The header with one id per notification, the same on every attempt (receivers
/// drop repeats by it).
pub const DELIVERY_HEADER: &str = "X-Toolgate-Delivery";

/// Attempts per URL before giving up.
const ATTEMPTS: u32 = 6;
/// The wait after the first failed attempt; doubled after each further one.
const FIRST_WAIT: Duration = Duration::from_millis(500);
/// How long one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how notifications go.
#[derive(Debug, Clone)]
pub struct NotifyConfig {
    pub urls: Vec<Url>,
    /// The HMAC key.
    pub secret: String,
    /// The server's address as people reach it; the run's link is under it.
    pub public_url: Url,
}

/// What a receiver gets.
#[derive(Debug, Clone, Serialize)]
pub struct Notification {
    /// `run.requires_action` or `run.failed`.
    pub event: &'static str,
    pub run_id: String,
    pub agent: String,
    pub conversation_id: String,
    pub status: RunStatus,
    /// What the run waits for (empty when it failed).
    pub waiting: Vec<RequiredItem>,
    /// Why it failed.
    pub error: Option<String>,
    /// The run's page in the approval inbox.
    pub link: String,
    /// Unix milliseconds of the run's last change.
    pub updated_at: i64,
}

impl Notification {
    /// The notification a settled run calls for, if any.
    pub fn of(run: &RunObject, public_url: &Url) -> Option<Notification> {
        let event = match run.status {
            RunStatus::RequiresAction => "run.requires_action",
            RunStatus::Failed => "run.failed",
            _ => return None,
        };
        Some(Notification {
            event,
            run_id: run.id.clone(),
            agent: run.agent.clone(),
            conversation_id: run.conversation_id.clone(),
            status: run.status,
            waiting: run
                .required_action
                .as_ref()
                .map(|a| a.items.clone())
                .unwrap_or_default(),
            error: run.last_error.clone(),
            link: link(public_url, &run.id),
            updated_at: run.updated_at,
        })
    }
}

/// The run's page under the public address.
fn link(public_url: &Url, run_id: &str) -> String {
    let mut url = public_url.clone();
    let base = url.path().trim_end_matches('/').to_string();
    url.set_path(&format!("{base}/runs/{run_id}"));
    url.to_string()
}

/// `sha256=` and the hex HMAC-SHA256 of `body` under `secret` (`None` only if the
/// HMAC refused the key, which it does for no length).
pub fn signature(secret: &str, body: &[u8]) -> Option<String> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in digest.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    Some(out)
}

/// Follows the hub's settled runs until shutdown, sending a notification for each run
/// that paused or failed.
pub fn spawn(hub: &Hub, config: NotifyConfig, shutdown: CancellationToken) {
    let mut settled = hub.subscribe_settled();
    let config = Arc::new(config);
    let client = match reqwest::Client::builder()
        .timeout(ATTEMPT_TIMEOUT)
        .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "notifications are off: the HTTP client cannot start");
            return;
        }
    };
    tokio::spawn(async move {
        loop {
            let run = tokio::select! {
                r = settled.recv() => r,
                _ = shutdown.cancelled() => return,
            };
            match run {
                Ok(run) => {
                    if let Some(n) = Notification::of(&run, &config.public_url) {
                        send_all(&client, &config, n);
                    }
                }
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(
                        missed = n,
                        "notifications fell behind; {n} run changes were not notified"
                    );
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
}

/// One task per URL, each retrying on its own.
fn send_all(client: &reqwest::Client, config: &Arc<NotifyConfig>, n: Notification) {
    let body = match serde_json::to_vec(&n) {
        Ok(b) => bytes_of(b),
        Err(e) => {
            tracing::error!(run_id = %n.run_id, error = %e, "a notification could not be written");
            return;
        }
    };
    let Some(signature) = signature(&config.secret, &body) else {
        tracing::error!(run_id = %n.run_id, "a notification could not be signed");
        return;
    };
    let delivery = uuid::Uuid::new_v4().to_string();
    for url in &config.urls {
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        let (signature, delivery, run_id) = (signature.clone(), delivery.clone(), n.run_id.clone());
        let event = n.event;
        tokio::spawn(async move {
            deliver(&client, &url, body, &signature, &delivery, event, &run_id).await;
        });
    }
}

fn bytes_of(v: Vec<u8>) -> Arc<[u8]> {
    Arc::from(v.into_boxed_slice())
}

/// Posts one notification to one URL until it is taken (2xx) or the attempts run out.
async fn deliver(
    client: &reqwest::Client,
    url: &Url,
    body: Arc<[u8]>,
    signature: &str,
    delivery: &str,
    event: &'static str,
    run_id: &str,
) {
    // The origin only: a webhook's path or query may be its secret.
    let to = url.origin().ascii_serialization();
    let mut wait = FIRST_WAIT;
    for attempt in 1..=ATTEMPTS {
        let sent = client
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, signature)
            .header(EVENT_HEADER, event)
            .header(DELIVERY_HEADER, delivery)
            .body(body.to_vec())
            .send()
            .await;
        let failure = match sent {
            Ok(r) if r.status().is_success() => {
                crate::telemetry::metrics::webhook_attempt(true, true);
                tracing::info!(%to, run_id, event, attempt, status = r.status().as_u16(), "notification delivered");
                return;
            }
            Ok(r) => format!("the receiver answered {}", r.status()),
            Err(e) => format!("the request failed: {e}"),
        };
        crate::telemetry::metrics::webhook_attempt(false, attempt == ATTEMPTS);
        if attempt == ATTEMPTS {
            tracing::error!(%to, run_id, event, attempt, error = %failure, "notification given up after {ATTEMPTS} attempts");
            return;
        }
        tracing::warn!(%to, run_id, event, attempt, error = %failure, retry_in_ms = wait.as_millis() as u64, "notification attempt failed");
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_hex() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?").as_deref(),
            Some("sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        );
    }

    #[test]
    fn links_sit_under_the_public_url() {
        let u = Url::parse("https://example.org/toolgate/").unwrap();
        assert_eq!(link(&u, "run_1"), "https://example.org/toolgate/runs/run_1");
        let u = Url::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(link(&u, "run_1"), "http://127.0.0.1:8080/runs/run_1");
    }
}
