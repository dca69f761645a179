//! `/v1/oauth/connections`: the providers a user has connected (per-user OAuth tokens),
//! listed and revoked over HTTP. Every caller sees and revokes their own (the user of
//! the runs they start: their identity's name, in their tenant); an admin may name
//! another user and tenant. Only names, scopes and times come out, never a token.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use toolgate_protocol::identity::{Identity, Role};
use toolgate_store::oauth::{OAuthGrant, OAuthOwner};

use super::scope::Caller;
use super::{ApiError, ApiQuery, AppState, ErrorBody, PathId};

/// Whose connections: the caller's own unless an admin names someone.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OwnerQuery {
    /// A user (admins only; everyone else sees their own). An admin who leaves it out
    /// lists every user of the tenant, and revokes their own.
    pub user: Option<String>,
    /// A tenant (admins only); the caller's own when absent.
    pub tenant: Option<String>,
}

/// The tenant and user `q` asks about, as `who` may: a non-admin naming anyone but
/// themselves is refused (403), not silently answered about themselves.
fn owner_of(who: &Identity, q: &OwnerQuery) -> Result<(String, Option<String>), ApiError> {
    let admin = who.roles.has(Role::Admin);
    let tenant = match &q.tenant {
        Some(t) if !admin && *t != who.tenant => return Err(forbidden("another tenant's")),
        Some(t) => t.clone(),
        None => who.tenant.clone(),
    };
    let user = match &q.user {
        Some(u) if !admin && *u != who.name => return Err(forbidden("another user's")),
        Some(u) => Some(u.clone()),
        None if admin => None,
        None => Some(who.name.clone()),
    };
    Ok((tenant, user))
}

fn forbidden(whose: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        format!("only an admin may see or revoke {whose} OAuth connections"),
    )
}

/// The connected providers: the caller's own, or (admins) a tenant's or a user's.
#[utoipa::path(get, path = "/v1/oauth/connections", tag = "oauth", params(OwnerQuery),
    responses((status = 200, body = Vec<OAuthGrant>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn list_connections(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    ApiQuery(q): ApiQuery<OwnerQuery>,
) -> Result<Json<Vec<OAuthGrant>>, ApiError> {
    let (tenant, user) = owner_of(&who, &q)?;
    let grants = state
        .runner
        .store
        .oauth_grants(&tenant, user.as_deref())
        .await?;
    Ok(Json(grants))
}

/// Revokes a connection: its tokens are deleted, and revoked at the provider too when
/// it has a revocation endpoint (RFC 7009); the next call that needs them pauses for
/// consent again.
#[utoipa::path(delete, path = "/v1/oauth/connections/{provider}", tag = "oauth",
    params(("provider" = String, Path, description = "The provider's name (`oauth: {name}` in the tool file)"), OwnerQuery),
    responses((status = 204, description = "Revoked"), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, description = "No such connection", body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn revoke_connection(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(provider): PathId,
    ApiQuery(q): ApiQuery<OwnerQuery>,
) -> Result<StatusCode, ApiError> {
    let (tenant, user) = owner_of(&who, &q)?;
    // An admin naming no one revokes their own, as everyone else does.
    let user = user.unwrap_or_else(|| who.name.clone());
    let owner = OAuthOwner {
        tenant: tenant.clone(),
        user: user.clone(),
        provider: provider.clone(),
    };
    let declared = super::oauth::declared_providers(&state)
        .into_iter()
        .find(|p| p.name == provider);
    let revoked = state
        .runner
        .oauth_broker(Some(tenant))
        .revoke(declared.as_ref(), &owner)
        .await
        .map_err(super::oauth::refused)?;
    if revoked.is_some() {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!(
            "{user} has no connection to {provider}"
        )))
    }
}
