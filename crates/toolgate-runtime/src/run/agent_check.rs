//! Checking an agent file without running it: it loads, its model (and each fallback)
//! names a provider this program has (a scripted model's file reads), its tools are in
//! the library of the tools folder, and each sub-agent's file loads. The one check
//! behind `toolgate agents check` and `POST /v1/agents/{name}/validate`.

use std::path::Path;

use serde::Serialize;

use super::{Runner, absolute_model_name};
use crate::agent::Agent;

/// What checking one agent file found.
#[derive(Debug, Clone, Serialize)]
pub struct AgentCheck {
    /// Its `name`, when the file loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The file, as given.
    pub file: String,
    /// No problem found.
    pub valid: bool,
    /// Each problem in a sentence.
    pub problems: Vec<String>,
}

impl Runner {
    /// Checks the agent file `file` against the tools folder `tools_dir`.
    pub fn check_agent(&self, file: &Path, tools_dir: Option<&Path>) -> AgentCheck {
        let shown = file.display().to_string();
        let agent = match self.loaded.agent(file) {
            Ok(a) => a,
            Err(e) => {
                return AgentCheck {
                    name: None,
                    file: shown,
                    valid: false,
                    problems: vec![e.to_string()],
                };
            }
        };
        let mut problems = self.model_problems(&agent);
        if let Err(e) = self.toolkit_of(&agent, tools_dir) {
            problems.push(e.to_string());
        }
        for s in &agent.subagents.list {
            if let Err(e) = self.loaded.agent(&s.file) {
                problems.push(format!("sub-agent '{}': {e}", s.name));
            }
        }
        AgentCheck {
            name: Some(agent.name.clone()),
            file: shown,
            valid: problems.is_empty(),
            problems,
        }
    }

    /// What is wrong with the agent's model and fallbacks (none when it names none: the
    /// program's default applies).
    fn model_problems(&self, agent: &Agent) -> Vec<String> {
        let names = agent
            .model
            .iter()
            .map(|m| absolute_model_name(m))
            .chain(agent.fallback.iter().map(|f| f.name.clone()));
        let mut problems = Vec::new();
        for name in names {
            let checked = match name.split_once(':') {
                Some(("scripted", path)) if !path.is_empty() => {
                    self.loaded.scripted(Path::new(path)).map(|_| ())
                }
                _ => self.models.check(&name),
            };
            if let Err(e) = checked {
                problems.push(format!("model '{name}': {e}"));
            }
        }
        problems
    }
}
