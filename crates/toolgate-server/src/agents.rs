//! The agents a server offers, by name: the agent files in its `--agents` folder, read
//! through the runner's cache, so an edited or added file is seen at the next request.

use std::path::{Path, PathBuf};

use serde::Serialize;
use utoipa::ToSchema;

use super::error::ApiError;
use toolgate_runtime::agent::Agent;
use toolgate_runtime::run::Loaded;

/// One agent as `GET /v1/agents` lists it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AgentInfo {
    pub name: String,
    /// The model its file names (`null`: the default).
    pub model: Option<String>,
    /// `native` or `xml`.
    pub mode: String,
    pub tools: Vec<String>,
    pub max_iterations: u32,
    /// The file it was read from.
    pub file: String,
    /// Groups one of which decides its calls (empty: any approver).
    pub approvers: Vec<String>,
    /// Whoever started a run may not decide its calls.
    pub four_eyes: bool,
}

/// The agent files of one folder.
#[derive(Debug, Clone)]
pub struct Agents {
    dir: PathBuf,
}

impl Agents {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn files(&self) -> Vec<PathBuf> {
        toolgate_runtime::run::agent_files(&self.dir)
    }

    /// `text` with the folder's paths named within it: where the folder sits on the
    /// host is not a client's business.
    pub fn within(&self, text: &str) -> String {
        text.replace(
            &format!("{}{}", self.dir.display(), std::path::MAIN_SEPARATOR),
            "",
        )
    }

    /// Every agent that loads, and the problems of the files that do not.
    pub fn list(&self, loaded: &Loaded) -> (Vec<Agent>, Vec<String>) {
        let mut agents = Vec::new();
        let mut problems = Vec::new();
        for file in self.files() {
            match loaded.agent(&file) {
                Ok(a) => agents.push(a),
                Err(e) => problems.push(self.within(&e.to_string())),
            }
        }
        (agents, problems)
    }

    /// The agent called `name`: the file whose `name` field says so.
    pub fn get(&self, loaded: &Loaded, name: &str) -> Result<Agent, ApiError> {
        let (agents, problems) = self.list(loaded);
        if let Some(agent) = agents.into_iter().find(|a| a.name == name) {
            return Ok(agent);
        }
        let mut message = format!("there is no agent named '{name}' (GET /v1/agents lists them)");
        if !problems.is_empty() {
            message.push_str(&format!(
                "; files that did not load: {}",
                problems.join("; ")
            ));
        }
        Err(ApiError::not_found(message))
    }
}

impl From<&Agent> for AgentInfo {
    fn from(a: &Agent) -> Self {
        AgentInfo {
            name: a.name.clone(),
            model: a.model.as_deref().map(toolgate_runtime::agent::shown_model),
            mode: match a.mode {
                toolgate_runtime::agent::Mode::Native => "native".into(),
                toolgate_runtime::agent::Mode::Xml => "xml".into(),
            },
            tools: a.tools.clone(),
            max_iterations: a.max_iterations,
            approvers: a.decision_rule.approvers.clone(),
            four_eyes: a.decision_rule.four_eyes,
            // Its name in the agents folder, not where that folder sits on the host.
            file: a
                .path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        }
    }
}
