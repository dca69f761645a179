//! `POST /v1/tools/{name}/validate` and `POST /v1/secrets/{name}/validate` (admins): a
//! tool's, a Dify provider's or a stored secret's users' credential check run with the
//! stored secrets, answered valid / invalid with the upstream's
//! reason (never a credential) and kept as the tools' last validation, which
//! `GET /v1/tools` shows.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use super::error::{ApiError, ErrorBody, PathId};
use toolgate_protocol::identity::{DEFAULT_TENANT, Identity};
use toolgate_runtime::run::validate::{Checked, groups, groups_using};
use toolgate_store::{SecretScope, ToolValidation};
use toolgate_tool::ToolLibrary;

/// A credential check's answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckResult {
    /// The tools it answers for (a Dify provider's: all of them).
    pub tools: Vec<String>,
    /// The Dify provider checked, when the name was one's or its tool's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `valid`, `invalid` (the upstream refused them), or `error` (the check could not
    /// run: a credential unset, the upstream unreachable).
    pub status: String,
    /// The upstream's reason for a refusal, or why the check could not run; credential
    /// values in it read `[secret]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A tool's last credential check, as `GET /v1/tools` shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LastCheck {
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unix milliseconds.
    pub checked_at: i64,
}

impl From<ToolValidation> for LastCheck {
    fn from(v: ToolValidation) -> Self {
        LastCheck {
            valid: v.valid,
            reason: v.reason,
            checked_at: v.checked_at,
        }
    }
}

/// The secrets a caller's checks use: its tenant's (then the shared ones); the default
/// tenant's are the shared ones, as the command line keeps them.
pub fn secret_tenant(who: &Identity) -> Option<&str> {
    Some(who.tenant.as_str()).filter(|t| *t != DEFAULT_TENANT)
}

/// Checks the credentials of a tool, or of a Dify provider's tools.
#[utoipa::path(post, path = "/v1/tools/{name}/validate", tag = "catalogue",
    params(("name" = String, Path, description = "A tool, or a Dify provider")),
    responses((status = 200, body = CheckResult), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn validate(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
    PathId(name): PathId,
) -> Result<Json<CheckResult>, ApiError> {
    let library = library(&state).await?;
    let mut chosen = groups(&library, Some(&name)).map_err(ApiError::not_found)?;
    chosen.retain(|g| g.tools.iter().all(|t| who.allow.tool(&t.spec.name)));
    if chosen.is_empty() {
        return Err(ApiError::not_found(format!(
            "there is no tool named '{name}'"
        )));
    }
    if !chosen
        .iter()
        .any(|g| g.tools.iter().any(|t| t.checks_credentials()))
    {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_check",
            format!(
                "'{name}' has no credential check: an http tool's `validate:` request or a Dify provider's `_validate_credentials` is one"
            ),
        ));
    }
    let mut done = state
        .runner
        .validate(chosen, secret_tenant(&who), workspace(&state)?)
        .await?;
    let first = done
        .drain(..)
        .next()
        .ok_or_else(|| ApiError::internal("the check gave no answer"))?;
    Ok(Json(CheckResult::from(first)))
}

impl From<Checked> for CheckResult {
    fn from(c: Checked) -> Self {
        CheckResult {
            tools: c.tools,
            provider: c.provider,
            status: c.status.to_string(),
            reason: c.reason,
        }
    }
}

/// The tool library of this server, loaded (or as last loaded) off the async threads.
async fn library(state: &AppState) -> Result<Arc<ToolLibrary>, ApiError> {
    let runner = state.runner.clone();
    let dir = state.tools_dir.clone();
    tokio::task::spawn_blocking(move || {
        runner
            .loaded
            .library(dir.as_deref(), |d| (runner.load_library)(d))
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
    .map_err(|e| ApiError::internal(format!("the tools folder cannot be loaded: {e}")))
}

/// Where checks run: the server's workspace, else its current folder.
fn workspace(state: &AppState) -> Result<std::path::PathBuf, ApiError> {
    match state.workspace.clone() {
        Some(w) => Ok(w),
        None => std::env::current_dir().map_err(|e| ApiError::internal(e.to_string())),
    }
}

/// Whose secret a check of a stored secret reads.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SecretTenant {
    /// A tenant; the shared secrets when absent.
    pub tenant: Option<String>,
}

/// Checks a stored secret: the credential check of every tool that uses it, each
/// answered valid / invalid / error (admins). As `toolgate secrets set NAME
/// --validate`, without storing anything.
#[utoipa::path(post, path = "/v1/secrets/{name}/validate", tag = "management",
    params(("name" = String, Path, description = "A stored secret's name"), SecretTenant),
    responses((status = 200, body = Vec<CheckResult>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, description = "No stored secret of that name", body = ErrorBody),
        (status = 422, description = "No tool with a credential check uses it", body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn validate_secret(
    State(state): State<Arc<AppState>>,
    PathId(name): PathId,
    super::ApiQuery(q): super::ApiQuery<SecretTenant>,
) -> Result<Json<Vec<CheckResult>>, ApiError> {
    let tenant = q.tenant.as_deref();
    let stored = state.runner.store.secrets(SecretScope::of(tenant)).await?;
    if !stored.iter().any(|s| s.name == name) {
        return Err(ApiError::not_found(format!(
            "there is no stored secret named '{name}'"
        )));
    }
    let library = library(&state).await?;
    let chosen = groups_using(&library, &name).map_err(ApiError::bad_request)?;
    if chosen.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_check",
            format!("no tool with a credential check uses the secret '{name}'"),
        ));
    }
    let done = state
        .runner
        .validate(chosen, tenant, workspace(&state)?)
        .await?;
    Ok(Json(done.into_iter().map(CheckResult::from).collect()))
}

/// Every tool's last check for `who`, by tool name.
pub async fn last_checks(
    state: &AppState,
    who: &Identity,
) -> Result<std::collections::BTreeMap<String, LastCheck>, ApiError> {
    Ok(state
        .runner
        .store
        .validations(SecretScope::of(secret_tenant(who)))
        .await?
        .into_iter()
        .map(|v| (v.tool.clone(), LastCheck::from(v)))
        .collect())
}
