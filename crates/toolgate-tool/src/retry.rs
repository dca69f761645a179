//! One retry policy for every transport: `retry: {attempts, backoff, on: [timeout,
//! connect, 429, 5xx], idempotent}` in a tool file or a source file, what a failed try
//! was ([`Failure`]), and how long to wait before the next one (`Retry-After` wins).
//! The engine applies it, only to calls that are safe to repeat.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::{ToolError, ToolOutput};

/// The most attempts a file may ask for.
pub const MAX_ATTEMPTS: u32 = 10;
/// The longest wait between two tries (a larger `Retry-After` is cut to this).
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// The wait before the second try when `backoff` is not written.
pub const DEFAULT_BACKOFF: Duration = Duration::from_millis(500);

/// A failure a policy may retry, as written in its `on:` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetryOn {
    /// The call ran past its timeout.
    #[serde(rename = "timeout")]
    Timeout,
    /// The peer could not be reached, or dropped the connection (an MCP server that
    /// stopped: it is started again before the next try).
    #[serde(rename = "connect")]
    Connect,
    /// HTTP 429 Too Many Requests.
    #[serde(rename = "429")]
    TooManyRequests,
    /// HTTP 500 to 599.
    #[serde(rename = "5xx")]
    ServerError,
}

impl RetryOn {
    /// Every failure a policy can name, in the order `on:` defaults to.
    pub const ALL: [RetryOn; 4] = [
        RetryOn::Timeout,
        RetryOn::Connect,
        RetryOn::TooManyRequests,
        RetryOn::ServerError,
    ];

    /// Its name in a file: `timeout`, `connect`, `429`, `5xx`.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryOn::Timeout => "timeout",
            RetryOn::Connect => "connect",
            RetryOn::TooManyRequests => "429",
            RetryOn::ServerError => "5xx",
        }
    }

    fn read(v: &Value) -> Result<RetryOn, String> {
        let word = match v {
            Value::String(s) => s.trim().to_ascii_lowercase(),
            Value::Number(n) => n.to_string(),
            other => other.to_string(),
        };
        RetryOn::ALL
            .into_iter()
            .find(|o| o.as_str() == word)
            .ok_or_else(|| format!("on: {v} is not one of timeout, connect, 429, 5xx"))
    }
}

/// `retry:` as a file writes it (every key optional, none unknown).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Retry")]
pub struct RawRetry {
    /// Tries in all, the first one included (default 3, at most 10).
    #[serde(default)]
    pub attempts: Option<u32>,
    /// The wait before the second try, doubled for each next one (default 0.5 s); a
    /// `Retry-After` from the server wins.
    #[serde(default)]
    #[schemars(schema_with = "crate::file_schema::duration")]
    pub backoff: Option<Value>,
    /// The failures tried again: `timeout`, `connect`, `429`, `5xx` (default: all four).
    #[serde(default)]
    #[schemars(schema_with = "on_schema")]
    pub on: Option<Vec<Value>>,
    /// The tool's calls may be repeated although it is not read-only (a PUT, a lookup
    /// that only looks like a write). Without it only read-only tools are retried.
    #[serde(default)]
    pub idempotent: bool,
}

fn on_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {"anyOf": [
            {"enum": ["timeout", "connect", "429", "5xx"]},
            {"const": 429}
        ]}
    })
}

/// How a tool's calls are tried again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetryPolicy {
    /// Tries in all, the first one included.
    pub attempts: u32,
    /// The wait before the second try; doubled for each next one.
    #[serde(serialize_with = "seconds")]
    pub backoff: Duration,
    /// The failures tried again.
    pub on: Vec<RetryOn>,
    /// Repeat the calls of a tool that is not read-only.
    pub idempotent: bool,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl RetryPolicy {
    /// The policy `raw` writes, or what is wrong with it (the key named).
    pub fn from_raw(raw: &RawRetry) -> Result<RetryPolicy, String> {
        let attempts = raw.attempts.unwrap_or(3);
        if !(1..=MAX_ATTEMPTS).contains(&attempts) {
            return Err(format!("attempts must be 1 to {MAX_ATTEMPTS}"));
        }
        let backoff = match &raw.backoff {
            None => DEFAULT_BACKOFF,
            Some(Value::Number(n)) => n
                .as_f64()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64)
                .ok_or("backoff must be 0 or more seconds")?,
            Some(Value::String(s)) => {
                crate::policy::parse_duration(s).map_err(|e| format!("backoff: {e}"))?
            }
            Some(other) => return Err(format!("backoff: {other} is not a duration")),
        };
        let on = match &raw.on {
            None => RetryOn::ALL.to_vec(),
            Some(list) => list.iter().map(RetryOn::read).collect::<Result<_, _>>()?,
        };
        Ok(RetryPolicy {
            attempts,
            backoff: backoff.min(MAX_WAIT),
            on,
            idempotent: raw.idempotent,
        })
    }

    /// Reads `retry:` from a file's value (a map of the keys above).
    pub fn read(v: &Value) -> Result<RetryPolicy, String> {
        let raw: RawRetry = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
        Self::from_raw(&raw)
    }

    /// Whether a call of a tool (`read_only` or not) may be tried again at all.
    pub fn applies(&self, read_only: bool) -> bool {
        self.attempts > 1 && (read_only || self.idempotent)
    }

    /// The wait before try `next` (2 for the second), or `None` when `failure` is not
    /// one to retry or no try is left.
    pub fn wait_before(&self, next: u32, failure: &Failure) -> Option<Duration> {
        if next > self.attempts || !self.on.contains(&failure.on) {
            return None;
        }
        let doubled = self
            .backoff
            .saturating_mul(1u32 << next.saturating_sub(2).min(16));
        Some(failure.retry_after.unwrap_or(doubled).min(MAX_WAIT))
    }
}

/// What a peer answered when a try failed in a way a policy may retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub on: RetryOn,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
}

/// What an HTTP-speaking tool notes about its last answer, for the engine to classify
/// the try: the status (and `Retry-After`), or a connection that could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noted {
    Status {
        status: u16,
        retry_after: Option<Duration>,
    },
    Connect,
}

/// The retryable failure a try's `result` is (with what its tool `noted`), if any.
pub fn failure_of(result: &Result<ToolOutput, ToolError>, noted: Option<Noted>) -> Option<Failure> {
    let plain = |on| {
        Some(Failure {
            on,
            retry_after: None,
        })
    };
    match (result, noted) {
        (Err(ToolError::Timeout(_)), _) => plain(RetryOn::Timeout),
        (Err(ToolError::ServerUnavailable(_)), _) => plain(RetryOn::Connect),
        (Err(_), Some(Noted::Connect)) => plain(RetryOn::Connect),
        (
            Ok(out),
            Some(Noted::Status {
                status,
                retry_after,
            }),
        ) if out.is_error => {
            let on = match status {
                429 => RetryOn::TooManyRequests,
                500..=599 => RetryOn::ServerError,
                _ => return None,
            };
            Some(Failure { on, retry_after })
        }
        _ => None,
    }
}

/// A `Retry-After` header's value in seconds (an HTTP date is not read).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_written_policy_reads_with_its_defaults() {
        let p =
            RetryPolicy::read(&json!({"attempts": 4, "backoff": "200ms", "on": ["timeout", 429]}))
                .unwrap();
        assert_eq!(p.attempts, 4);
        assert_eq!(p.backoff, Duration::from_millis(200));
        assert_eq!(p.on, [RetryOn::Timeout, RetryOn::TooManyRequests]);
        let d = RetryPolicy::read(&json!({})).unwrap();
        assert_eq!((d.attempts, d.backoff, d.on.len()), (3, DEFAULT_BACKOFF, 4));
        for bad in [
            json!({"attempts": 0}),
            json!({"on": ["404"]}),
            json!({"tries": 2}),
            json!({"backoff": -1}),
        ] {
            assert!(RetryPolicy::read(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn waits_double_and_retry_after_wins() {
        let p = RetryPolicy::read(&json!({"attempts": 3, "backoff": 1})).unwrap();
        let f = |on, retry_after| Failure { on, retry_after };
        assert_eq!(
            p.wait_before(2, &f(RetryOn::ServerError, None)),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            p.wait_before(3, &f(RetryOn::ServerError, None)),
            Some(Duration::from_secs(2))
        );
        assert_eq!(p.wait_before(4, &f(RetryOn::ServerError, None)), None);
        let later = Some(Duration::from_millis(300));
        assert_eq!(p.wait_before(2, &f(RetryOn::TooManyRequests, later)), later);
        let only = RetryPolicy::read(&json!({"on": ["connect"]})).unwrap();
        assert_eq!(only.wait_before(2, &f(RetryOn::Timeout, None)), None);
    }

    #[test]
    fn only_safe_calls_are_retried() {
        let p = RetryPolicy::read(&json!({})).unwrap();
        assert!(p.applies(true) && !p.applies(false));
        assert!(
            RetryPolicy::read(&json!({"idempotent": true}))
                .unwrap()
                .applies(false)
        );
        assert!(
            !RetryPolicy::read(&json!({"attempts": 1}))
                .unwrap()
                .applies(true)
        );
    }

    #[test]
    fn failures_are_classified_by_error_and_status() {
        let err = ToolOutput::error("HTTP 503");
        let status = |s| {
            Some(Noted::Status {
                status: s,
                retry_after: None,
            })
        };
        assert_eq!(
            failure_of(&Ok(err.clone()), status(503)).unwrap().on,
            RetryOn::ServerError
        );
        assert_eq!(
            failure_of(&Ok(err.clone()), status(429)).unwrap().on,
            RetryOn::TooManyRequests
        );
        assert_eq!(failure_of(&Ok(err), status(404)), None);
        assert_eq!(failure_of(&Ok(ToolOutput::text("ok")), status(200)), None);
        let t = Err(ToolError::Timeout(Duration::from_secs(1)));
        assert_eq!(failure_of(&t, None).unwrap().on, RetryOn::Timeout);
        let gone = Err(ToolError::ServerUnavailable("stopped".into()));
        assert_eq!(failure_of(&gone, None).unwrap().on, RetryOn::Connect);
        let refused = Err(ToolError::Execution("connection refused".into()));
        assert_eq!(
            failure_of(&refused, Some(Noted::Connect)).unwrap().on,
            RetryOn::Connect
        );
        assert_eq!(failure_of(&refused, None), None);
    }
}
