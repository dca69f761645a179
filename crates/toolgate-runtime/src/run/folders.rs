//! Where a continuing run finds its agent and tools: a run names its agent (and keeps a
//! hash of the file it started with), and a process that has folders of its own (a
//! server's `--agents` and `--tools`) continues it with the agent of that name there,
//! so any process deployed with the same agents continues any run, wherever it began.
//! A process without them (the CLI) uses the paths the run started with.

use std::path::{Path, PathBuf};

use super::{RunError, RunState, Runner};
use crate::agent::Agent;
use toolgate_tool::Toolkit;

/// A process's agents folder, tools folder and workspace.
#[derive(Debug, Clone)]
pub struct Folders {
    pub agents: PathBuf,
    pub tools: Option<PathBuf>,
    /// The workspace every run this process drives uses (a server's `--workspace`),
    /// whatever workspace the run started in (on another worker, maybe another host);
    /// `None`: a run keeps its own.
    pub workspace: Option<PathBuf>,
}

/// The agent files of `dir` (YAML, scripted replies left out), in name order.
pub fn agent_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains(".replies."))
        })
        .collect();
    files.sort();
    files
}

/// The SHA-256 of an agent file, in hex (`None` when it cannot be read).
pub fn file_hash(path: &Path) -> Option<String> {
    use sha2::Digest;
    let bytes = std::fs::read(path).ok()?;
    Some(
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

impl Runner {
    /// The agent and toolkit a run continues with.
    pub(super) fn agent_of(&self, state: &RunState) -> Result<(Agent, Toolkit), RunError> {
        let (file, tools) = match &self.folders {
            Some(f) => (
                self.agent_named(&f.agents, &state.agent)
                    .or_else(|| state.agent_file.exists().then(|| state.agent_file.clone()))
                    .ok_or_else(|| {
                        RunError::BadInput(format!(
                            "the run's agent '{}' is not in the agents folder {}",
                            state.agent,
                            f.agents.display()
                        ))
                    })?,
                f.tools.clone().or_else(|| state.tools_dir.clone()),
            ),
            None => (state.agent_file.clone(), state.tools_dir.clone()),
        };
        if let Some(started) = &state.agent_hash
            && file_hash(&file).as_ref() != Some(started)
        {
            tracing::warn!(
                agent = %state.agent,
                file = %file.display(),
                "the agent's file changed since the run started; it continues with the file as it is now"
            );
        }
        let mut agent = self.loaded.agent(&file)?;
        if let Some(w) = &state.workflow {
            agent = self.workflow_agent(agent, &w.tool, tools.as_deref())?;
        }
        let toolkit = self
            .toolkit(&agent, tools.as_deref())?
            .with_client_tools(&state.client_tools)
            .map_err(|e| RunError::BadInput(e.to_string()))?
            .limited(&super::allow_of(state.owner.as_ref()));
        Ok((agent, toolkit))
    }

    /// The model a run continues with: the one it started with, unless that is a
    /// scripted file this process does not have and the agent found here is scripted
    /// too (a run continued in another checkout or host of the same agents).
    pub(super) fn continuing_model(&self, state: &RunState, agent: &Agent) -> String {
        let missing = state
            .model
            .strip_prefix("scripted:")
            .is_some_and(|p| !Path::new(p).exists());
        match (&self.folders, agent.model.as_deref()) {
            (Some(_), Some(own)) if missing && own.starts_with("scripted:") => {
                super::paths::absolute_model_name(own)
            }
            _ => state.model.clone(),
        }
    }

    /// The file in `dir` of the agent called `name`.
    fn agent_named(&self, dir: &Path, name: &str) -> Option<PathBuf> {
        agent_files(dir)
            .into_iter()
            .find(|f| self.loaded.agent(f).is_ok_and(|a| a.name == name))
    }
}
