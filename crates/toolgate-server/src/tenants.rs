//! Tenant allow-lists: `serve --tenants FILE` limits what each tenant's callers may use,
//! whatever their key or token says. The file maps a tenant to its lists:
//!
//! ```yaml
//! acme:
//!   agents: [support, billing]   # the only agents acme's callers may start
//!   tools: [search, github__*]   # the only tools acme's runs may call
//! globex:
//!   tools: []                    # no tool at all (agents: any)
//!   budget: {per: month, usd: 50, on_limit: fail}   # a spend limit on its runs
//! ```
//!
//! A tenant the file does not name, and a list it leaves out, is not limited. A caller
//! may use what both its tenant's lists and its own (`keys create --agents --tools`, a
//! JWT's `agents`/`tools` claims) allow. The server's own admin (its `--api-key-file`
//! key, or the loopback user of an open server) and keys with the admin role answer to
//! their own lists only: they act across tenants. The file is read at start.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use toolgate_protocol::budget::Budget;
use toolgate_protocol::identity::{Allow, Identity, Role};

/// Each tenant's allow-lists and spend limits, as `--tenants` gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantAllows(HashMap<String, Allow>, HashMap<String, Vec<Budget>>);

/// A `--tenants` file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TenantsError {
    #[error("cannot read --tenants {}: {error}", path.display())]
    Read { path: PathBuf, error: String },
    #[error(
        "--tenants {}: {error} (a map of tenant -> {{agents: [A, ...], tools: [X, ...], budget: ...}})",
        path.display()
    )]
    Parse { path: PathBuf, error: String },
}

/// One tenant's entry: only these keys.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(default)]
    agents: Option<Vec<String>>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    /// Spend limits on the tenant's runs: one budget or a list.
    #[serde(default)]
    budget: Option<serde_json::Value>,
}

impl TenantAllows {
    /// Reads `--tenants FILE`.
    pub fn load(path: &Path) -> Result<TenantAllows, TenantsError> {
        let text = std::fs::read_to_string(path).map_err(|e| TenantsError::Read {
            path: path.to_path_buf(),
            error: e.to_string(),
        })?;
        Self::parse(&text).map_err(|error| TenantsError::Parse {
            path: path.to_path_buf(),
            error,
        })
    }

    /// Reads the file's text.
    pub fn parse(text: &str) -> Result<TenantAllows, String> {
        let entries: HashMap<String, Option<Entry>> =
            serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        let mut allows = HashMap::new();
        let mut budgets = HashMap::new();
        for (tenant, e) in entries {
            let e = e.unwrap_or(Entry {
                agents: None,
                tools: None,
                budget: None,
            });
            let b = toolgate_runtime::budget::read(e.budget.as_ref())
                .map_err(|m| format!("tenant {tenant}: budget: {m}"))?;
            if !b.is_empty() {
                budgets.insert(tenant.clone(), b);
            }
            let allow = Allow {
                agents: e.agents,
                tools: e.tools,
            };
            allows.insert(tenant, allow);
        }
        Ok(TenantAllows(allows, budgets))
    }

    /// The spend limits of `tenant`'s runs (none when the file names none).
    pub fn budgets(&self, tenant: &str) -> &[Budget] {
        self.1.get(tenant).map_or(&[], Vec::as_slice)
    }

    /// `who` limited by its tenant's lists too (an admin answers to its own only).
    pub fn limit(&self, mut who: Identity) -> Identity {
        if who.roles.has(Role::Admin) {
            return who;
        }
        if let Some(tenant) = self.0.get(&who.tenant) {
            who.allow = who.allow.meet(tenant);
        }
        who
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolgate_protocol::identity::Roles;

    #[test]
    fn a_tenant_list_meets_the_callers_own() {
        let t = TenantAllows::parse("acme:\n  agents: [a, b]\n  tools: [x]\nglobex:\n").unwrap();
        let who = |tenant: &str, role: Role| Identity {
            name: "k".into(),
            key_id: None,
            roles: Roles::of(&[role]),
            tenant: tenant.into(),
            groups: vec![],
            allow: Allow {
                agents: Some(vec!["b".into(), "c".into()]),
                tools: None,
            },
        };
        let limited = t.limit(who("acme", Role::Client)).allow;
        assert!(limited.agent("b") && !limited.agent("a") && !limited.agent("c"));
        assert!(limited.tool("x") && !limited.tool("y"));
        // Unnamed tenants and empty entries limit nothing beyond the caller's own.
        assert_eq!(t.limit(who("globex", Role::Client)).allow.tools, None);
        assert_eq!(t.limit(who("acme", Role::Admin)).allow.tools, None);
        assert!(TenantAllows::parse("acme: {agent: [a]}").is_err());
        let b = TenantAllows::parse("acme:\n  budget: {per: day, tokens: 5}\n").unwrap();
        assert_eq!(b.budgets("acme").len(), 1);
        assert!(b.budgets("globex").is_empty());
        assert!(TenantAllows::parse("acme: {budget: {per: week, tokens: 5}}").is_err());
    }
}
