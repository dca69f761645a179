//! Credential checks: a tool (or the provider it belongs to) asked whether the
//! credentials it would be given work, without doing its work (Dify's
//! `_validate_credentials`, an http tool's `validate:` request, an MCP server's
//! initialize and tool list), and the answer, whose reason never quotes a credential.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Credential, LoadedTool, Resolver, ToolContext, ToolError};

/// The longest a check may take when its tool gives no timeout.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// What the upstream said about the credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// The upstream accepted them.
    Valid,
    /// The upstream refused them, with its reason (credentials in it read `[secret]`).
    Invalid { reason: String },
}

impl Verdict {
    /// Whether the credentials were accepted.
    pub fn is_valid(&self) -> bool {
        matches!(self, Verdict::Valid)
    }

    /// The upstream's reason for a refusal; `None` when they were accepted.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Verdict::Valid => None,
            Verdict::Invalid { reason } => Some(reason),
        }
    }

    /// This verdict with each of `hidden` in its reason shown as `[secret]`.
    pub fn masked(self, hidden: &[String]) -> Verdict {
        match self {
            Verdict::Valid => Verdict::Valid,
            Verdict::Invalid { reason } => Verdict::Invalid {
                reason: crate::secrets::mask_values(&reason, hidden).into_owned(),
            },
        }
    }
}

/// Why a check gave no verdict.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// The tool has no way to check its credentials.
    #[error(
        "tool '{0}' has no credential check (an http tool's `validate:`, a Dify provider, an MCP server or an OpenAPI `validate:` operation has one)"
    )]
    NoCheck(String),
    /// A credential has no value: nothing to check.
    #[error("{0}")]
    Unset(String),
    /// The check itself could not run (the upstream unreachable, the adapter failed).
    #[error("the check of '{tool}' could not run: {error}")]
    Failed { tool: String, error: String },
}

impl LoadedTool {
    /// Whether the tool has a credential check.
    pub fn checks_credentials(&self) -> bool {
        self.runner().is_some_and(|r| r.checks_credentials())
    }

    /// Checks this tool's credentials, resolved by `resolver`: the upstream's verdict,
    /// with every credential value in its reason masked.
    pub async fn validate(
        &self,
        ctx: &ToolContext,
        resolver: &Resolver,
    ) -> Result<Verdict, CheckError> {
        let name = self.spec.name.clone();
        if !self.checks_credentials() {
            return Err(CheckError::NoCheck(name));
        }
        let mut wanted = self.spec.credentials.clone();
        if let Some(used) = self.runner().and_then(|r| r.credentials_checked()) {
            wanted.retain(|k, _| used.contains(k));
        }
        let credentials = resolve(&name, wanted, resolver).await?;
        let hidden: Vec<String> = credentials
            .values()
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        let masked = ctx.clone().with_masks(hidden.clone());
        let runner = self
            .runner()
            .ok_or_else(|| CheckError::NoCheck(name.clone()))?;
        let limit = self
            .spec
            .timeout
            .map_or(DEFAULT_CHECK_TIMEOUT, Duration::from_secs_f64);
        // Not `ready()`: a check starts what it needs with the credentials it checks.
        let answer = tokio::time::timeout(limit, runner.validate(&masked, credentials))
            .await
            .map_err(|_| ToolError::Timeout(limit));
        let fail = |e: ToolError| CheckError::Failed {
            tool: name.clone(),
            error: crate::secrets::mask_values(&e.to_string(), &hidden).into_owned(),
        };
        match answer {
            Ok(Some(Ok(verdict))) => Ok(verdict.masked(&hidden)),
            Ok(Some(Err(e))) | Err(e) => Err(fail(e)),
            Ok(None) => Err(CheckError::NoCheck(name.clone())),
        }
    }
}

/// The tool's credentials by argument name (resolved off the async threads: a stored
/// secret's lookup waits for the store).
async fn resolve(
    tool: &str,
    wanted: BTreeMap<String, Credential>,
    resolver: &Resolver,
) -> Result<Map<String, Value>, CheckError> {
    let (name, resolver) = (tool.to_string(), resolver.clone());
    tokio::task::spawn_blocking(move || resolver.resolve(&name, &wanted))
        .await
        .map_err(|e| CheckError::Failed {
            tool: tool.to_string(),
            error: e.to_string(),
        })?
        .map_err(|e| CheckError::Unset(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_never_quotes_a_credential() {
        let v = Verdict::Invalid {
            reason: "key sk-123 refused".into(),
        }
        .masked(&["sk-123".into()]);
        assert_eq!(v.reason(), Some("key [secret] refused"));
        assert!(!v.is_valid());
        assert_eq!(
            serde_json::to_value(&v).ok(),
            Some(serde_json::json!({"status": "invalid", "reason": "key [secret] refused"}))
        );
    }
}
