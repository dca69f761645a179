//! Paths a run keeps absolute: the scripted model's file, the tools folder and the
//! workspace, so that a run continued from another folder finds them.

use std::path::{Path, PathBuf};

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

/// The root for a run's file tools: the one asked for, else the agent's, else the
/// current folder; absolute.
pub(crate) fn workspace_of(asked: Option<&Path>, agent: &Agent) -> PathBuf {
    let workspace = asked
        .or(agent.workspace.as_deref())
        .unwrap_or(Path::new("."));
    absolute(workspace)
}
