//! `POST /v1/tools/{name}/validate` (admins): a tool's or a Dify provider's credential
//! check run with the stored secrets, answered valid / invalid with the upstream's
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
use toolgate_runtime::run::validate::groups;
use toolgate_store::{SecretScope, ToolValidation};

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
    let runner = state.runner.clone();
    let dir = state.tools_dir.clone();
    let library = tokio::task::spawn_blocking(move || {
        runner
            .loaded
            .library(dir.as_deref(), |d| (runner.load_library)(d))
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
    .map_err(|e| ApiError::internal(format!("the tools folder cannot be loaded: {e}")))?;
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
    let workspace = match state.workspace.clone() {
        Some(w) => w,
        None => std::env::current_dir().map_err(|e| ApiError::internal(e.to_string()))?,
    };
    let mut done = state
        .runner
        .validate(chosen, secret_tenant(&who), workspace)
        .await?;
    let first = done
        .drain(..)
        .next()
        .ok_or_else(|| ApiError::internal("the check gave no answer"))?;
    Ok(Json(CheckResult {
        tools: first.tools,
        provider: first.provider,
        status: first.status.to_string(),
        reason: first.reason,
    }))
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
