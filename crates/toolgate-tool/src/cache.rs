//! Result caching for read-only tools: `cache: {ttl: 10m}` in a tool file or a source
//! file, the key a call's result is kept under (tenant, tool and the arguments in
//! canonical JSON, hashed; the user too for a tool acting for its user through OAuth),
//! which results may be kept, and the [`ResultCache`] the engine asks (the store's, so
//! that every worker shares it).

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::output::ToolOutput;
use crate::schema::Schema;

/// The longest a result may be kept.
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// The largest result kept (bytes of its JSON); a larger one runs every time.
pub const MAX_RESULT_BYTES: usize = 256 * 1024;
/// The most entries the store keeps, every tenant together; past it the oldest go.
pub const MAX_ENTRIES: u64 = 10_000;

/// `cache:` as a file writes it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Cache")]
pub struct RawCache {
    /// How long a result is kept: seconds, or a number with a unit (`90s`, `10m`,
    /// `2h`); at most 7 days.
    #[schemars(schema_with = "crate::file_schema::duration")]
    pub ttl: Value,
    /// Keep results of calls with a secret argument too (by default such calls always
    /// run: a secret is never part of a kept key unless the tool says it is safe).
    #[serde(default)]
    pub secret_arguments: bool,
}

/// How a tool's results are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachePolicy {
    pub ttl: Duration,
    pub secret_arguments: bool,
}

impl CachePolicy {
    /// The policy `raw` writes, or what is wrong with it.
    pub fn from_raw(raw: &RawCache) -> Result<CachePolicy, String> {
        let ttl = match &raw.ttl {
            Value::Number(n) => n
                .as_f64()
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64)
                .ok_or("ttl must be more than 0 seconds")?,
            Value::String(s) => {
                crate::policy::parse_duration(s).map_err(|e| format!("ttl: {e}"))?
            }
            other => return Err(format!("ttl: {other} is not a duration")),
        };
        if ttl.is_zero() || ttl > MAX_TTL {
            return Err("ttl must be more than 0 and at most 7 days".into());
        }
        Ok(CachePolicy {
            ttl,
            secret_arguments: raw.secret_arguments,
        })
    }

    /// `cache:` as a source file writes it (`None` when absent), or what is wrong with
    /// it, the key named.
    pub fn read(raw: Option<&RawCache>) -> Result<Option<CachePolicy>, String> {
        raw.map(CachePolicy::from_raw)
            .transpose()
            .map_err(|m| format!("cache: {m}"))
    }

    /// Whether a call with `args` may use the cache: not when an argument is secret,
    /// unless the policy allows it.
    pub fn admits(&self, schema: &Schema, args: &Map<String, Value>) -> bool {
        if self.secret_arguments {
            return true;
        }
        let secret = schema.secret_params();
        !args.keys().any(|k| secret.contains(&k.as_str()))
    }
}

/// The key of a call's result: SHA-256 over the tenant, what else of the run the tool
/// can see (`seen`: its user, say), the tool and the arguments in canonical JSON (keys
/// sorted, no spaces), hex.
pub fn key(tenant: &str, seen: Option<&str>, tool: &str, args: &Map<String, Value>) -> String {
    let mut text = String::new();
    canonical(&Value::Object(args.clone()), &mut text);
    let mut hash = Sha256::new();
    for part in [tenant, seen.unwrap_or(""), tool, &text] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `v` as canonical JSON: object keys sorted at every depth.
pub fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The output as kept, when it may be: a success of text, JSON, links or inline images
/// (a file in one run's workspace is not another run's), at most
/// [`MAX_RESULT_BYTES`].
pub fn keepable(output: &ToolOutput) -> Option<String> {
    use crate::output::Part;
    if output.is_error || output.parts.iter().any(|p| matches!(p, Part::File { .. })) {
        return None;
    }
    let text = serde_json::to_string(output).ok()?;
    (text.len() <= MAX_RESULT_BYTES).then_some(text)
}

/// Where results are kept (the store, shared by every worker).
#[async_trait]
pub trait ResultCache: Send + Sync + std::fmt::Debug {
    /// The output kept under `key`, if it has not expired.
    async fn get(&self, key: &str) -> Option<ToolOutput>;
    /// Keeps `output` (as [`keepable`] wrote it) under `key` for `ttl`.
    async fn put(&self, key: &str, tenant: &str, tool: &str, output: String, ttl: Duration);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn keys_ignore_key_order_and_separate_tenants_users_and_tools() {
        let a = obj(json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": "s"}}));
        let b = obj(json!({"a": {"x": "s", "y": [1, {"c": 3, "d": 2}]}, "b": 1}));
        assert_eq!(key("t", None, "get", &a), key("t", None, "get", &b));
        assert_ne!(key("t", None, "get", &a), key("u", None, "get", &a));
        assert_ne!(key("t", None, "get", &a), key("t", Some("ann"), "get", &a));
        assert_ne!(key("t", None, "get", &a), key("t", None, "got", &a));
        let c = obj(json!({"b": 2, "a": {"x": "s", "y": [1, {"c": 3, "d": 2}]}}));
        assert_ne!(key("t", None, "get", &a), key("t", None, "get", &c));
        // A boundary moved between parts is another key.
        assert_ne!(
            key("ab", None, "c", &Map::new()),
            key("a", None, "bc", &Map::new())
        );
    }

    #[test]
    fn ttl_is_read_and_bounded() {
        let p = |v: Value| {
            CachePolicy::from_raw(&RawCache {
                ttl: v,
                secret_arguments: false,
            })
        };
        assert_eq!(p(json!("10m")).unwrap().ttl, Duration::from_secs(600));
        assert_eq!(p(json!(30)).unwrap().ttl, Duration::from_secs(30));
        assert!(p(json!(0)).is_err());
        assert!(p(json!("30d")).is_err() || p(json!("720h")).is_err());
        assert!(p(json!(true)).is_err());
    }

    #[test]
    fn errors_files_and_large_results_are_not_kept() {
        let ok = ToolOutput::text("fine");
        assert!(keepable(&ok).is_some());
        let mut failed = ToolOutput::text("no");
        failed.is_error = true;
        assert!(keepable(&failed).is_none());
        assert!(keepable(&ToolOutput::text("x".repeat(MAX_RESULT_BYTES))).is_none());
    }
}
