//! `/v1/keys`: issued keys over HTTP, for admins only (the table in `roles.rs`). The
//! same checks and store calls as `toolgate keys` ([`super::manage_keys`]); the key
//! itself is in the answer to `POST` and nowhere else.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use toolgate_protocol::budget::Budget;
use toolgate_protocol::identity::DEFAULT_TENANT;
use toolgate_store::KeyInfo;

use super::key_update::{self, KeyUpdate};
use super::manage_keys::{self, KeyError, KeyRequest};
use super::scope::Caller;
use super::{ApiError, ApiJson, AppState, ErrorBody, PathId};

/// A key to issue.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    /// Its name: what `decided_by` records for its decisions; never reused.
    pub name: String,
    /// `client`, `approver`, `admin`, or several: `client,approver`.
    pub role: String,
    /// The tenant it acts in (`default` when absent).
    #[serde(default)]
    pub tenant: Option<String>,
    /// Its groups, for agents' `approvers:`.
    #[serde(default)]
    pub groups: Vec<String>,
    /// The only agents it may start; any agent of its tenant when absent.
    #[serde(default)]
    pub agents: Option<Vec<String>>,
    /// The only tools its runs may call (`github__*` for every tool of an MCP server);
    /// any tool when absent.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// How long it lasts: `30d`, `12h`, `90m`; forever when absent.
    #[serde(default)]
    pub expires: Option<String>,
    /// Spend limits on the runs it starts, `AMOUNT(tokens|usd)/PER[:pause|fail|warn]`
    /// (e.g. `5usd/month:fail`).
    #[serde(default)]
    pub budgets: Vec<String>,
}

/// An issued key as listed: never the key itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyRow {
    pub name: String,
    /// Its roles, comma-separated.
    pub role: String,
    pub roles: Vec<String>,
    pub tenant: String,
    pub groups: Vec<String>,
    /// Absent: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Its budgets in the short form (`5usd/month:fail`).
    pub budgets: Vec<String>,
    /// `active`, `expired` or `revoked`.
    pub state: String,
    /// Unix milliseconds.
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// A key just issued: its row and the key, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedKeyBody {
    #[serde(flatten)]
    pub row: KeyRow,
    /// The key: stored only as its SHA-256, never shown again.
    pub key: String,
}

/// A key's row, as the API lists it.
pub fn row(info: KeyInfo, budgets: &[Budget]) -> KeyRow {
    KeyRow {
        state: manage_keys::state(&info, manage_keys::now_ms()).into(),
        role: info.roles.to_string(),
        roles: info.roles.names().into_iter().map(String::from).collect(),
        name: info.name,
        tenant: info.tenant,
        groups: info.groups,
        agents: info.allow.agents,
        tools: info.allow.tools,
        budgets: budgets.iter().map(Budget::to_string).collect(),
        created_at: info.created_at,
        expires_at: info.expires_at,
        revoked_at: info.revoked_at,
    }
}

/// A key error as the API's: bad input 400, no such key 404, a name taken 409.
fn api_error(e: KeyError) -> ApiError {
    match e {
        KeyError::Invalid(m) => ApiError::bad_request(m),
        KeyError::NoKey(_) => ApiError::not_found(e.to_string()),
        KeyError::Store(s) => s.into(),
    }
}

/// Every issued key, revoked and expired ones included, oldest first (admins).
#[utoipa::path(get, path = "/v1/keys", tag = "management",
    responses((status = 200, body = Vec<KeyRow>), (status = 401, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn list_keys(State(state): State<Arc<AppState>>) -> Result<Json<Vec<KeyRow>>, ApiError> {
    let keys = manage_keys::list(&state.runner.store)
        .await
        .map_err(api_error)?;
    Ok(Json(keys.into_iter().map(|(k, b)| row(k, &b)).collect()))
}

/// Issues a key (admins): the answer carries the key, shown only this once.
#[utoipa::path(post, path = "/v1/keys", tag = "management", request_body = CreateKey,
    responses((status = 201, body = IssuedKeyBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 409, description = "A key of that name exists (names are never reused)", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn create_key(
    State(state): State<Arc<AppState>>,
    Caller(_admin): Caller,
    ApiJson(req): ApiJson<CreateKey>,
) -> Result<(StatusCode, Json<IssuedKeyBody>), ApiError> {
    let req = KeyRequest {
        name: req.name,
        role: req.role,
        tenant: req.tenant.unwrap_or_else(|| DEFAULT_TENANT.to_string()),
        groups: req.groups,
        agents: req.agents,
        tools: req.tools,
        expires: req.expires,
        budgets: req.budgets,
    };
    let issued = manage_keys::issue(&state.runner.store, req)
        .await
        .map_err(api_error)?;
    let body = IssuedKeyBody {
        row: row(issued.info, &issued.budgets),
        key: issued.key,
    };
    Ok((StatusCode::CREATED, Json(body)))
}

/// Revokes a key (admins): refused from now on; its name stays taken.
#[utoipa::path(delete, path = "/v1/keys/{name}", tag = "management",
    params(("name" = String, Path, description = "A key's name")),
    responses((status = 204, description = "Revoked"), (status = 401, body = ErrorBody),
        (status = 404, description = "No active key of that name", body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn revoke_key(
    State(state): State<Arc<AppState>>,
    PathId(name): PathId,
) -> Result<StatusCode, ApiError> {
    manage_keys::revoke(&state.runner.store, &name)
        .await
        .map_err(api_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// What to change of a key: each field given replaces the key's (`null` for `agents`,
/// `tools` or `expires`: no limit, never expires); absent fields stay as they are.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateKey {
    /// `client`, `approver`, `admin`, or several: `client,approver`.
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub groups: Option<Vec<String>>,
    /// The only agents it may start; `null`: any agent of its tenant.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub agents: Option<Option<Vec<String>>>,
    /// The only tools its runs may call; `null`: any tool.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub tools: Option<Option<Vec<String>>>,
    /// How long it lasts from now (`30d`, `12h`); `null`: forever.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub expires: Option<Option<String>>,
    /// Replaces its budgets (`[]` removes them).
    #[serde(default)]
    pub budgets: Option<Vec<String>>,
}

/// A field that is present (`null` included): `Some`, holding `None` for `null`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Changes a key in place (admins): roles, groups, allow-lists, expiry, budgets; the
/// caller's next request with it sees the change.
#[utoipa::path(patch, path = "/v1/keys/{name}", tag = "management", request_body = UpdateKey,
    params(("name" = String, Path, description = "A key's name")),
    responses((status = 200, body = KeyRow), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, description = "No active key of that name", body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn update_key(
    State(state): State<Arc<AppState>>,
    PathId(name): PathId,
    ApiJson(req): ApiJson<UpdateKey>,
) -> Result<Json<KeyRow>, ApiError> {
    let change = KeyUpdate {
        role: req.role,
        groups: req.groups,
        agents: req.agents,
        tools: req.tools,
        expires: req.expires,
        budgets: req.budgets,
    };
    let (info, budgets) = key_update::update(&state.runner.store, &name, change)
        .await
        .map_err(api_error)?;
    Ok(Json(row(info, &budgets)))
}
