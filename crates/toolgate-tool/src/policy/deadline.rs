//! Approval deadlines: how long a call may wait for a person (`approval_timeout`) and
//! what happens when nobody decided in time (`on_timeout: deny | cancel_run`), and the
//! duration syntax files and flags use (`300`, `2s`, `5m`, `1h`, `1500ms`).

use std::time::Duration;

pub use toolgate_protocol::OnTimeout;

/// A duration: a number of seconds, or a number with `ms`, `s`, `m` or `h`.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| DurationError::NotADuration(text.to_string()))?;
    let seconds = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        other => {
            return Err(DurationError::UnknownUnit {
                unit: other.to_string(),
                text: text.to_string(),
            });
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|error| DurationError::OutOfRange {
        text: text.to_string(),
        error,
    })
}

/// A duration as written in a file: a string with a unit, or a number of seconds.
pub fn duration_of(value: &serde_json::Value) -> Result<Duration, DurationError> {
    match value {
        serde_json::Value::String(s) => parse_duration(s),
        serde_json::Value::Number(n) => n
            .as_f64()
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| DurationError::NotSeconds(n.to_string())),
        other => Err(DurationError::NotAValue(other.to_string())),
    }
}

/// Why a duration cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Text that does not start with a number.
    #[error("'{0}' is not a duration (e.g. 300s, 5m, 1500ms)")]
    NotADuration(String),
    /// A unit other than `ms`, `s`, `m` or `h`.
    #[error("unknown unit '{unit}' in '{text}' (use ms, s, m or h)")]
    UnknownUnit { unit: String, text: String },
    /// A number no duration can hold.
    #[error("'{text}': {error}")]
    OutOfRange {
        text: String,
        error: std::time::TryFromFloatSecsError,
    },
    /// A number that is not a number of seconds (negative, too large).
    #[error("{0} is not a number of seconds")]
    NotSeconds(String),
    /// A value that is neither a string nor a number.
    #[error("{0} is not a duration (e.g. 30m, 5s, 90)")]
    NotAValue(String),
}

impl From<DurationError> for String {
    fn from(e: DurationError) -> String {
        e.to_string()
    }
}

/// How long an approval may wait, and what then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    pub timeout: Duration,
    pub on_timeout: OnTimeout,
}

impl Deadline {
    /// Reads `approval_timeout` and `on_timeout` as written (either may be absent; an
    /// `on_timeout` without a timeout is refused: it would never apply).
    pub fn read(
        timeout: Option<&serde_json::Value>,
        on_timeout: Option<&serde_json::Value>,
    ) -> Result<Option<Deadline>, (&'static str, String)> {
        let on_timeout = match on_timeout {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(|t| t.parse::<OnTimeout>().ok())
                    .ok_or_else(|| {
                        (
                            "on_timeout",
                            format!("on_timeout: {v} is not deny or cancel_run"),
                        )
                    })?,
            ),
        };
        let timeout = match timeout {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => {
                let d = duration_of(v)
                    .map_err(|m| ("approval_timeout", format!("approval_timeout: {m}")))?;
                if d.is_zero() {
                    return Err((
                        "approval_timeout",
                        "approval_timeout must be more than 0".into(),
                    ));
                }
                Some(d)
            }
        };
        match (timeout, on_timeout) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err((
                "on_timeout",
                "on_timeout needs an approval_timeout to apply to".into(),
            )),
            (Some(timeout), on) => Ok(Some(Deadline {
                timeout,
                on_timeout: on.unwrap_or_default(),
            })),
        }
    }

    /// The deadline that applies when both an agent and a tool set one: the shorter.
    pub fn stricter(a: Option<Deadline>, b: Option<Deadline>) -> Option<Deadline> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.timeout < a.timeout { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

/// A duration for people: `90s`, `30m`, `2h`, `1500ms`.
pub fn shown(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(3_600_000) && ms > 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_read_with_units_or_as_seconds() {
        assert_eq!(parse_duration("300"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("3d").is_err());
        assert_eq!(duration_of(&json!(90)), Ok(Duration::from_secs(90)));
        assert_eq!(shown(Duration::from_secs(1800)), "30m");
        assert_eq!(shown(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn deadlines_read_and_the_shorter_wins() {
        let d = Deadline::read(Some(&json!("30m")), None).unwrap().unwrap();
        assert_eq!(d.on_timeout, OnTimeout::Deny);
        let c = Deadline::read(Some(&json!("5m")), Some(&json!("cancel_run")))
            .unwrap()
            .unwrap();
        assert_eq!(Deadline::stricter(Some(d), Some(c)), Some(c));
        assert!(Deadline::read(None, Some(&json!("deny"))).is_err());
        assert!(Deadline::read(Some(&json!("5m")), Some(&json!("later"))).is_err());
        assert!(Deadline::read(Some(&json!("0s")), None).is_err());
    }
}
