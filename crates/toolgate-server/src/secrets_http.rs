//! `/v1/secrets`: the sealed secrets tool files ask for, over HTTP, for admins only
//! (the table in `roles.rs`). The same checks and store calls as `toolgate secrets`
//! ([`super::manage_secrets`]): values go in, only names and times come out. Without
//! `tenant` a route works on the shared secrets, as the command without `--tenant`.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use toolgate_store::SecretScope;

use super::manage_secrets::{self, SecretError};
use super::{ApiError, ApiJson, ApiQuery, AppState, ErrorBody, PathId};

/// A secret to store (or replace).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetSecret {
    /// The name tool files use (`credentials: {token: {secret: NAME}}`).
    pub name: String,
    /// Its value: sealed before it is stored, never shown again.
    pub value: String,
    /// The tenant whose secret it is; the shared secrets when absent.
    #[serde(default)]
    pub tenant: Option<String>,
}

/// Whose secrets.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TenantQuery {
    /// A tenant; the shared secrets when absent.
    pub tenant: Option<String>,
}

/// A stored secret: its name and times, never its value.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretRow {
    pub name: String,
    /// Unix milliseconds.
    pub created_at: i64,
    pub updated_at: i64,
}

/// A secret error as the API's: bad input 400, no such secret 404, a keyring that
/// cannot seal 500.
fn api_error(e: SecretError) -> ApiError {
    match e {
        SecretError::Invalid(m) => ApiError::bad_request(m),
        SecretError::NoSecret(_) => ApiError::not_found(e.to_string()),
        SecretError::Seal(m) => ApiError::internal(m),
        SecretError::Store(s) => s.into(),
    }
}

/// The names of the stored secrets of a tenant, or the shared ones (admins).
#[utoipa::path(get, path = "/v1/secrets", tag = "management", params(TenantQuery),
    responses((status = 200, body = Vec<SecretRow>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn list_secrets(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<TenantQuery>,
) -> Result<Json<Vec<SecretRow>>, ApiError> {
    let scope = SecretScope::of(q.tenant.as_deref());
    let list = manage_secrets::list(&state.runner.store, scope)
        .await
        .map_err(api_error)?;
    Ok(Json(
        list.into_iter()
            .map(|s| SecretRow {
                name: s.name,
                created_at: s.created_at,
                updated_at: s.updated_at,
            })
            .collect(),
    ))
}

/// Stores or replaces a secret, sealed (admins).
#[utoipa::path(post, path = "/v1/secrets", tag = "management", request_body = SetSecret,
    responses((status = 204, description = "Stored"), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn set_secret(
    State(state): State<Arc<AppState>>,
    ApiJson(req): ApiJson<SetSecret>,
) -> Result<StatusCode, ApiError> {
    let scope = SecretScope::of(req.tenant.as_deref());
    let keyring = &state.runner.keyring;
    manage_secrets::set(&state.runner.store, keyring, scope, &req.name, &req.value)
        .await
        .map_err(api_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a stored secret (admins).
#[utoipa::path(delete, path = "/v1/secrets/{name}", tag = "management",
    params(("name" = String, Path, description = "A secret's name"), TenantQuery),
    responses((status = 204, description = "Removed"), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, description = "No secret of that name", body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn remove_secret(
    State(state): State<Arc<AppState>>,
    PathId(name): PathId,
    ApiQuery(q): ApiQuery<TenantQuery>,
) -> Result<StatusCode, ApiError> {
    let scope = SecretScope::of(q.tenant.as_deref());
    manage_secrets::remove(&state.runner.store, scope, &name)
        .await
        .map_err(api_error)?;
    Ok(StatusCode::NO_CONTENT)
}
