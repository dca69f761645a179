//! Notifications (`serve --notify-url URL`): when a run pauses for a person or fails,
//! and when an approval is about to expire or has expired, a JSON POST to each URL, signed with HMAC-SHA256 of `TIMESTAMP.DELIVERY.BODY` under
//! `TOOLGATE_NOTIFY_SECRET` (`X-Toolgate-Signature: sha256=HEX`, with the timestamp and
//! the delivery id in their own headers, so a receiver can refuse a replay), retried
//! with exponential backoff on its own task, so that a slow or failing receiver never
//! holds a run up. A redirect is never followed: the signed body goes to the URL given
//! and nowhere else. Each attempt is logged.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use sha2::Sha256;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::Hub;
pub use toolgate_protocol::webhook::{
    DELIVERY_HEADER, EVENT_HEADER, SECRET_ENV, SIGNATURE_HEADER, TIMESTAMP_HEADER, TOLERANCE_SECS,
    signature,
};
use toolgate_protocol::{RequiredItem, RunObject, RunStatus};

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
    /// `run.requires_action`, `budget.reached` (paused on a spend limit), `run.failed`,
    /// `approval.expiring` or `approval.expired`.
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
    /// The item an `approval.expiring` or `approval.expired` is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<RequiredItem>,
    /// The run's tenant, and who started it (a key's name, a JWT's subject).
    pub tenant: String,
    pub started_by: Option<String>,
}

impl Notification {
    /// The notification a settled run calls for, if any.
    pub fn of(run: &RunObject, public_url: &Url) -> Option<Notification> {
        let on_budget = run
            .required_action
            .iter()
            .flat_map(|a| &a.items)
            .any(|i| i.kind == toolgate_protocol::ItemKind::Budget);
        let event = match run.status {
            // A spend limit paused it: an approver may raise it.
            RunStatus::RequiresAction if on_budget => "budget.reached",
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
            item: None,
            tenant: run.tenant.clone(),
            started_by: run.started_by.clone(),
        })
    }

    /// An `approval.expiring` or `approval.expired` notification about `item` of
    /// `run` (the top run of its tree: its link is the page a person opens).
    pub fn about_item(
        event: &'static str,
        run: &RunObject,
        item: RequiredItem,
        public_url: &Url,
    ) -> Notification {
        Notification {
            event,
            run_id: run.id.clone(),
            agent: run.agent.clone(),
            conversation_id: run.conversation_id.clone(),
            status: run.status,
            waiting: Vec::new(),
            error: None,
            link: link(public_url, &run.id),
            updated_at: run.updated_at,
            item: Some(item),
            tenant: run.tenant.clone(),
            started_by: run.started_by.clone(),
        }
    }
}

/// The run's page under the public address.
fn link(public_url: &Url, run_id: &str) -> String {
    let mut url = public_url.clone();
    let base = url.path().trim_end_matches('/').to_string();
    url.set_path(&format!("{base}/runs/{run_id}"));
    url.to_string()
}

/// Sends notifications: the HTTP client and where to.
#[derive(Clone)]
pub struct Notifier {
    client: reqwest::Client,
    pub config: Arc<NotifyConfig>,
}

impl Notifier {
    /// `None` (logged) when the HTTP client cannot start.
    pub fn new(config: NotifyConfig) -> Option<Notifier> {
        match reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            // The signed body goes where it was configured to, never where a receiver
            // (or whoever took its address over) redirects it: an internal address, say.
            .redirect(reqwest::redirect::Policy::none())
            .build()
        {
            Ok(client) => Some(Notifier {
                client,
                config: Arc::new(config),
            }),
            Err(e) => {
                tracing::error!(error = %e, "notifications are off: the HTTP client cannot start");
                None
            }
        }
    }

    /// Sends `n` to every URL, each on its own task.
    pub fn send(&self, n: Notification) {
        send_all(&self.client, &self.config, n);
    }
}

/// Follows the hub's settled runs until shutdown, sending a notification for each run
/// that paused or failed.
pub fn spawn(hub: &Hub, notifier: Notifier, shutdown: CancellationToken) {
    let mut settled = hub.subscribe_settled();
    tokio::spawn(async move {
        loop {
            let run = tokio::select! {
                r = settled.recv() => r,
                _ = shutdown.cancelled() => return,
            };
            match run {
                Ok(run) => {
                    if let Some(n) = Notification::of(&run, &notifier.config.public_url) {
                        notifier.send(n);
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
    let delivery = delivery_id(&n);
    for url in &config.urls {
        let (client, url, body, config) = (
            client.clone(),
            url.clone(),
            body.clone(),
            Arc::clone(config),
        );
        let (delivery, run_id) = (delivery.clone(), n.run_id.clone());
        let event = n.event;
        tokio::spawn(async move {
            let to = Delivery {
                url: &url,
                secret: &config.secret,
                id: &delivery,
                event,
                run_id: &run_id,
            };
            deliver(&client, &to, body).await;
        });
    }
}

/// The id of notification `n`: made from what it tells (its event, run, the run's last
/// change and the item), so that every worker on a shared database that sends it (each
/// sees every run's changes) sends it under the same id, and a receiver keeps one.
/// Shaped like a UUID.
fn delivery_id(n: &Notification) -> String {
    use sha2::Digest;
    let item = n.item.as_ref().map_or("", |i| i.call_id.as_str());
    let digest =
        Sha256::digest(format!("{}\n{}\n{}\n{item}", n.event, n.run_id, n.updated_at).as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// One notification's way to one URL.
struct Delivery<'a> {
    url: &'a Url,
    secret: &'a str,
    id: &'a str,
    event: &'static str,
    run_id: &'a str,
}

/// Now, in Unix seconds.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn bytes_of(v: Vec<u8>) -> Arc<[u8]> {
    Arc::from(v.into_boxed_slice())
}

/// Posts one notification to one URL until it is taken (2xx) or the attempts run out.
/// Each attempt is signed with its own timestamp.
async fn deliver(client: &reqwest::Client, d: &Delivery<'_>, body: Arc<[u8]>) {
    let Delivery {
        url,
        id: delivery,
        event,
        run_id,
        ..
    } = *d;
    // The origin only: a webhook's path or query may be its secret.
    let to = url.origin().ascii_serialization();
    let mut wait = FIRST_WAIT;
    for attempt in 1..=ATTEMPTS {
        let timestamp = unix_now();
        let Some(signature) = signature(d.secret, timestamp, delivery, &body) else {
            tracing::error!(run_id, "a notification could not be signed");
            return;
        };
        let sent = client
            .post((*url).clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, signature)
            .header(TIMESTAMP_HEADER, timestamp.to_string())
            .header(EVENT_HEADER, event)
            .header(DELIVERY_HEADER, delivery)
            .body(body.to_vec())
            .send()
            .await;
        let failure = match sent {
            Ok(r) if r.status().is_success() => {
                toolgate_telemetry::metrics::webhook_attempt(true, true);
                tracing::info!(%to, run_id, event, attempt, status = r.status().as_u16(), "notification delivered");
                return;
            }
            Ok(r) if r.status().is_redirection() => format!(
                "the receiver answered {} (to {}); notifications do not follow redirects: give the final URL",
                r.status(),
                r.headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| url.join(l).ok())
                    .map_or_else(
                        || "nowhere".to_string(),
                        |l| l.origin().ascii_serialization()
                    )
            ),
            Ok(r) => format!("the receiver answered {}", r.status()),
            Err(e) => format!("the request failed: {e}"),
        };
        toolgate_telemetry::metrics::webhook_attempt(false, attempt == ATTEMPTS);
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
    fn signature_is_hmac_sha256_hex_of_timestamp_delivery_and_body() {
        // HMAC-SHA256("Jefe", "1.what do ya want.for nothing?"), from Python's hmac.
        assert_eq!(
            signature("Jefe", 1, "what do ya want", b"for nothing?").as_deref(),
            Some("sha256=345bd9a974ffaef0a875912cef29c3a0e24d569181ee62108f0ea2f66eb1a9f6")
        );
        assert_ne!(
            signature("Jefe", 2, "what do ya want", b"for nothing?"),
            signature("Jefe", 1, "what do ya want", b"for nothing?"),
            "the timestamp is signed"
        );
        assert_ne!(
            signature("Jefe", 1, "another delivery", b"for nothing?"),
            signature("Jefe", 1, "what do ya want", b"for nothing?"),
            "the delivery id is signed"
        );
    }

    #[test]
    fn a_notification_has_one_delivery_id_whoever_sends_it() {
        let run = |updated_at: i64| {
            RunObject {
            updated_at,
            ..serde_json::from_value(serde_json::json!({
                "id": "run_1", "object": "run", "conversation_id": "conv_1", "agent": "a",
                "model": "scripted", "status": "requires_action", "iteration": 1,
                "max_iterations": 8, "required_action": null, "last_error": null,
                "output": null, "usage": serde_json::to_value(toolgate_protocol::Usage::default()).unwrap(), "created_at": 1, "updated_at": 1
            }))
            .unwrap()
        }
        };
        let a: Url = "http://worker-a:8080/".parse().unwrap();
        let b: Url = "http://worker-b:8080/".parse().unwrap();
        let of = |updated_at, url: &Url| Notification::of(&run(updated_at), url).unwrap();
        assert_eq!(delivery_id(&of(5, &a)), delivery_id(&of(5, &b)));
        assert_ne!(delivery_id(&of(5, &a)), delivery_id(&of(6, &a)));
        let id = delivery_id(&of(5, &a));
        assert_eq!(id.len(), 36);
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    }

    #[test]
    fn links_sit_under_the_public_url() {
        let u = Url::parse("https://example.org/toolgate/").unwrap();
        assert_eq!(link(&u, "run_1"), "https://example.org/toolgate/runs/run_1");
        let u = Url::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(link(&u, "run_1"), "http://127.0.0.1:8080/runs/run_1");
    }
}
