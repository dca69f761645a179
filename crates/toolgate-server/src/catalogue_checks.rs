//! `POST /v1/agents/{name}/validate` and `POST /v1/reload` (admins): an agent file
//! checked without running it (the runtime's `check_agent`, as `toolgate agents check`
//! does), and the agents and tools folders read now, with what loaded and what did not
//! (every request reads a changed file anyway; this says whether the edit took).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiError, AppState, ErrorBody, PathId};

/// What checking an agent found.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentCheckBody {
    pub name: String,
    /// Its file, in the agents folder.
    pub file: String,
    /// No problem found: it loads, its model and fallbacks name known providers, its
    /// tools are in the library, its sub-agents' files load.
    pub valid: bool,
    /// Each problem in a sentence.
    pub problems: Vec<String>,
}

/// Checks an agent file without running it (admins).
#[utoipa::path(post, path = "/v1/agents/{name}/validate", tag = "catalogue",
    params(("name" = String, Path, description = "An agent's name")),
    responses((status = 200, body = AgentCheckBody), (status = 401, body = ErrorBody),
        (status = 404, description = "No agent of that name (files that did not load are named)", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn validate_agent(
    State(state): State<Arc<AppState>>,
    PathId(name): PathId,
) -> Result<Json<AgentCheckBody>, ApiError> {
    let reader = Arc::clone(&state);
    tokio::task::spawn_blocking(move || {
        let agent = reader.agents.get(&reader.runner.loaded, &name)?;
        let check = reader
            .runner
            .check_agent(&agent.path, reader.tools_dir.as_deref());
        let problems = check.problems.iter().map(|p| within(&reader, p)).collect();
        Ok(Json(AgentCheckBody {
            name: agent.name,
            file: file_name(&agent.path),
            valid: check.valid,
            problems,
        }))
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
}

/// What the folders hold now.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReloadBody {
    /// The agents that load, by name.
    pub agents: Vec<String>,
    /// Agent files that do not load, each with its problem.
    pub agent_problems: Vec<String>,
    /// How many tools the library has (built-ins included).
    pub tools: usize,
    /// Tool files that do not load, each with its file, line and problem.
    pub tool_problems: Vec<String>,
}

/// Reads the agents and tools folders now and says what loaded (admins).
#[utoipa::path(post, path = "/v1/reload", tag = "catalogue",
    responses((status = 200, body = ReloadBody), (status = 401, body = ErrorBody),
        (status = 500, description = "The tools folder cannot be read", body = ErrorBody)))]
pub async fn reload(State(state): State<Arc<AppState>>) -> Result<Json<ReloadBody>, ApiError> {
    let reader = Arc::clone(&state);
    tokio::task::spawn_blocking(move || {
        let runner = &reader.runner;
        let library = runner
            .loaded
            .library(reader.tools_dir.as_deref(), |d| (runner.load_library)(d))
            .map_err(|e| ApiError::internal(format!("the tools folder cannot be loaded: {e}")))?;
        let (agents, agent_problems) = reader.agents.list(&runner.loaded);
        let tool_problems = library
            .errors()
            .iter()
            .map(|e| within(&reader, &e.to_string()))
            .collect();
        Ok(Json(ReloadBody {
            agents: agents.into_iter().map(|a| a.name).collect(),
            agent_problems,
            tools: library.tools().count(),
            tool_problems,
        }))
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
}

/// A problem with its files named within the agents or tools folder: where those
/// folders sit on the host is not a client's business.
fn within(state: &AppState, problem: &str) -> String {
    let text = state.agents.within(problem);
    match state.tools_dir.as_deref() {
        Some(dir) => text.replace(
            &format!("{}{}", dir.display(), std::path::MAIN_SEPARATOR),
            "",
        ),
        None => text,
    }
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}
