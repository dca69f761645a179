//! Rate limits per key and per tenant, from one file (`serve --rate-limits FILE`):
//! requests per second (GCRA, the `governor` crate) and runs in progress at once.
//! Over a limit, a request is answered 429 with `Retry-After`.
//!
//! ```yaml
//! per_key:    {requests_per_second: 5, burst: 10, runs_at_once: 2}
//! per_tenant: {requests_per_second: 20, runs_at_once: 5}
//! ```

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::Deserialize;

/// One scope's limits.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    /// Requests a second, sustained.
    #[serde(default)]
    pub requests_per_second: Option<u32>,
    /// Requests allowed at once above the rate (default: the rate).
    #[serde(default)]
    pub burst: Option<u32>,
    /// Runs in progress at once.
    #[serde(default)]
    pub runs_at_once: Option<u32>,
}

/// The file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateConfig {
    #[serde(default)]
    pub per_key: Limit,
    #[serde(default)]
    pub per_tenant: Limit,
}

/// A `--rate-limits` file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateConfigError {
    #[error("cannot read --rate-limits {}: {error}", path.display())]
    Read { path: PathBuf, error: String },
    #[error("--rate-limits {}: {error}", path.display())]
    Parse { path: PathBuf, error: String },
    /// `scope`: `per_key` or `per_tenant`.
    #[error("--rate-limits {}: {scope}: a rate or burst of 0 would refuse everything", path.display())]
    Zero { path: PathBuf, scope: &'static str },
}

impl RateConfig {
    /// Reads `--rate-limits FILE`; a rate or burst of 0 is refused.
    pub fn load(path: &Path) -> Result<RateConfig, RateConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| RateConfigError::Read {
            path: path.to_path_buf(),
            error: e.to_string(),
        })?;
        let config: RateConfig =
            serde_saphyr::from_str(&text).map_err(|e| RateConfigError::Parse {
                path: path.to_path_buf(),
                error: e.to_string(),
            })?;
        for (scope, l) in [
            ("per_key", config.per_key),
            ("per_tenant", config.per_tenant),
        ] {
            if l.requests_per_second == Some(0) || l.burst == Some(0) {
                return Err(RateConfigError::Zero {
                    path: path.to_path_buf(),
                    scope,
                });
            }
        }
        Ok(config)
    }
}

/// The limiters, keyed by key name and by tenant.
pub struct RateLimits {
    pub config: RateConfig,
    per_key: Option<DefaultKeyedRateLimiter<String>>,
    per_tenant: Option<DefaultKeyedRateLimiter<String>>,
}

fn limiter(l: &Limit) -> Option<DefaultKeyedRateLimiter<String>> {
    let rate = NonZeroU32::new(l.requests_per_second?)?;
    let burst = l.burst.and_then(NonZeroU32::new).unwrap_or(rate);
    Some(RateLimiter::keyed(
        Quota::per_second(rate).allow_burst(burst),
    ))
}

impl RateLimits {
    pub fn new(config: RateConfig) -> RateLimits {
        RateLimits {
            per_key: limiter(&config.per_key),
            per_tenant: limiter(&config.per_tenant),
            config,
        }
    }

    /// `Err(wait)` when the key or the tenant is over its rate.
    pub fn check(&self, key: &str, tenant: &str) -> Result<(), Duration> {
        let clock = DefaultClock::default();
        for (limiter, id) in [(&self.per_key, key), (&self.per_tenant, tenant)] {
            if let Some(l) = limiter
                && let Err(not_until) = l.check_key(&id.to_string())
            {
                return Err(not_until.wait_time_from(clock.now()));
            }
        }
        Ok(())
    }
}

/// The `Retry-After` seconds for a wait: whole seconds, at least 1.
pub fn retry_after(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0).max(u64::from(wait.as_secs() == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_refusal_with_a_wait() {
        let limits = RateLimits::new(RateConfig {
            per_key: Limit {
                requests_per_second: Some(1),
                burst: Some(2),
                runs_at_once: None,
            },
            per_tenant: Limit::default(),
        });
        assert!(limits.check("a", "t").is_ok());
        assert!(limits.check("a", "t").is_ok());
        let refused = limits.check("a", "t");
        assert!(refused.is_err());
        // Another key has its own budget.
        assert!(limits.check("b", "t").is_ok());
        assert_eq!(retry_after(Duration::from_millis(1)), 1);
        assert_eq!(retry_after(Duration::from_secs(2)), 2);
    }
}
