//! Credential checks for a library: which tools a `validate` target names (a tool, or
//! a Dify provider, checked once for all its tools), each check run with the tenant's
//! credentials, and each verdict kept as the tools' last validation in the store.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use toolgate_store::{SecretScope, StoreError, ToolValidation};
use toolgate_tool::validate::CheckError;
use toolgate_tool::{Credential, Entry, LoadedTool, ToolContext, ToolLibrary, Verdict};

use super::Runner;

/// The tools one check answers for: a Dify provider's tools share one, and an MCP
/// server's; any other tool is its own.
pub struct CheckGroup {
    /// The provider's name, for a Dify provider's tools.
    pub provider: Option<String>,
    pub tools: Vec<Arc<LoadedTool>>,
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// The tools it answers for.
    pub tools: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `valid`, `invalid`, or `error` (the check could not run).
    pub status: &'static str,
    /// The upstream's reason for a refusal, or why the check could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The provider a tool's check belongs to (a Dify provider's, an MCP server's or an
/// OpenAPI file's name), if any.
fn provider_of(tool: &LoadedTool) -> Option<String> {
    match &tool.spec.entry {
        Entry::Source(b) if b.source == "dify" || b.source == "mcp" => {
            b.label.split_once(':').map(|(_, name)| name.to_string())
        }
        Entry::Source(b) if b.source == "openapi" && b.binding.contains_key("check") => b
            .binding
            .get("api")
            .and_then(serde_json::Value::as_str)
            .map(String::from),
        _ => None,
    }
}

/// The checks `target` names (a tool or a provider; `None`: every tool with a check),
/// one per provider. Naming nothing known, or a tool with no check, is an error.
pub fn groups(lib: &ToolLibrary, target: Option<&str>) -> Result<Vec<CheckGroup>, String> {
    let mut out: Vec<CheckGroup> = Vec::new();
    for tool in lib.tools() {
        let provider = provider_of(tool);
        let named = target.is_none_or(|t| t == tool.spec.name || provider.as_deref() == Some(t));
        if !named || (target.is_none() && !tool.checks_credentials()) {
            continue;
        }
        match out
            .iter_mut()
            .find(|g| provider.is_some() && g.provider == provider)
        {
            Some(g) => g.tools.push(Arc::clone(tool)),
            None => out.push(CheckGroup {
                provider,
                tools: vec![Arc::clone(tool)],
            }),
        }
    }
    match (target, out.is_empty()) {
        (Some(t), true) => Err(format!(
            "there is no tool or provider named '{t}'; the library has: {}",
            lib.names().join(", ")
        )),
        _ => Ok(out),
    }
}

/// The checks of every tool that uses stored secret `secret` (as `secrets set
/// --validate` and `POST /v1/secrets/{name}/validate` run them); none when no tool with a
/// check uses it.
pub fn groups_using(lib: &ToolLibrary, secret: &str) -> Result<Vec<CheckGroup>, String> {
    let wanted = Credential::Secret(secret.to_string());
    Ok(groups(lib, None)?
        .into_iter()
        .filter(|g| {
            g.tools
                .iter()
                .any(|t| t.spec.credentials.values().any(|c| *c == wanted))
        })
        .collect())
}

impl Runner {
    /// Runs each group's check with `tenant`'s credentials and keeps every verdict as
    /// the last validation of the group's tools.
    pub async fn validate(
        &self,
        groups: Vec<CheckGroup>,
        tenant: Option<&str>,
        workspace: PathBuf,
    ) -> Result<Vec<Checked>, StoreError> {
        let resolver = self.credentials_for(tenant.map(String::from));
        let ctx = ToolContext::new(workspace);
        let mut out = Vec::new();
        for group in groups {
            let Some(first) = group.tools.first() else {
                continue;
            };
            let outcome = first.validate(&ctx, &resolver).await;
            let names: Vec<String> = group.tools.iter().map(|t| t.spec.name.clone()).collect();
            if let Ok(verdict) = &outcome {
                for tool in &names {
                    let check = ToolValidation {
                        tool: tool.clone(),
                        valid: verdict.is_valid(),
                        reason: verdict.reason().map(String::from),
                        checked_at: toolgate_protocol::clock::now_ms(),
                    };
                    self.store
                        .record_validation(SecretScope::of(tenant), check)
                        .await?;
                }
            }
            out.push(checked(names, group.provider, outcome));
        }
        Ok(out)
    }
}

fn checked(
    tools: Vec<String>,
    provider: Option<String>,
    outcome: Result<Verdict, CheckError>,
) -> Checked {
    let (status, reason) = match outcome {
        Ok(Verdict::Valid) => ("valid", None),
        Ok(Verdict::Invalid { reason }) => ("invalid", Some(reason)),
        Err(e) => ("error", Some(e.to_string())),
    };
    Checked {
        tools,
        provider,
        status,
        reason,
    }
}
