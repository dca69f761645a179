//! The webhook signature scheme, shared by notifications and HTTP hooks: HMAC-SHA256 of
//! `TIMESTAMP.DELIVERY.BODY` under `TOOLGATE_NOTIFY_SECRET`, and the headers that carry
//! it, so that a receiver can check who sent a body and refuse a replay.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The environment variable holding the signing key.
pub const SECRET_ENV: &str = "TOOLGATE_NOTIFY_SECRET";
/// The header carrying `sha256=` and the hex HMAC-SHA256 of `TIMESTAMP.DELIVERY.BODY`.
pub const SIGNATURE_HEADER: &str = "X-Toolgate-Signature";
/// The header with the attempt's time, in Unix seconds (signed).
pub const TIMESTAMP_HEADER: &str = "X-Toolgate-Timestamp";
/// How far a receiver should let a timestamp be from its own clock (documented; the
/// receiver applies it).
pub const TOLERANCE_SECS: u64 = 300;
/// The header naming the notification (`run.requires_action`, `run.failed`).
pub const EVENT_HEADER: &str = "X-Toolgate-Event";
/// The header with one id per notification, the same on every attempt and from every
/// worker that sends it (signed; receivers drop repeats by it).
pub const DELIVERY_HEADER: &str = "X-Toolgate-Delivery";

/// `sha256=` and the hex HMAC-SHA256 of `TIMESTAMP.DELIVERY.BODY` under `secret`
/// (`None` only if the HMAC refused the key, which it does for no length).
pub fn signature(secret: &str, timestamp: u64, delivery: &str, body: &[u8]) -> Option<String> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(delivery.as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in digest.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    Some(out)
}
