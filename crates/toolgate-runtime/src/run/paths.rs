//! Paths a run keeps absolute: the scripted model's file, the tools folder and the
//! workspace, so that a run continued from another folder finds them.

use std::path::{Path, PathBuf};

use toolgate_protocol::identity::{DEFAULT_TENANT, RunOwner};
use toolgate_tool::workspace::tenant_workspace;

use crate::agent::Agent;

/// `scripted:` paths made absolute, so that another folder's process finds the file.
pub(super) fn absolute_model_name(name: &str) -> String {
    match name.split_once(':') {
        Some(("scripted", path)) if !path.is_empty() => {
            let path = Path::new(path);
            let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            format!("scripted:{}", abs.display())
        }
        _ => name.to_string(),
    }
}

/// `path` made absolute (as it is when that fails).
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The root for a run's file tools: its tenant's workspace (see
/// [`toolgate_tool::workspace::tenant_workspace`]) under the root asked for, else the
/// agent's, else the current folder; absolute.
pub(crate) fn workspace_of(
    asked: Option<&Path>,
    agent: &Agent,
    owner: Option<&RunOwner>,
) -> PathBuf {
    let root = asked
        .or(agent.workspace.as_deref())
        .unwrap_or(Path::new("."));
    tenant_workspace(&absolute(root), tenant_of(owner))
}

/// A run's tenant: its owner's, else the default one.
pub(crate) fn tenant_of(owner: Option<&RunOwner>) -> &str {
    owner.map_or(DEFAULT_TENANT, |o| o.tenant.as_str())
}
