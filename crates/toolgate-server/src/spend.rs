//! `GET /v1/spend?by=agent|conversation|tenant|key`: the tokens and money of the model
//! requests recorded, summed by conversation, agent, tenant or key, in the caller's
//! tenant (an admin sees every tenant's).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::error::{ApiError, ApiQuery, ErrorBody};
use toolgate_store::{Scope, SpendBy, SpendRow};

/// The query of `GET /v1/spend`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SpendQuery {
    /// `conversation`, `agent` (the default), `tenant` or `key`.
    #[serde(default)]
    #[param(value_type = Option<String>)]
    pub by: Option<String>,
    /// Only this conversation's requests: one row (none when it made no request), read
    /// by itself rather than picked out of every conversation's.
    #[serde(default)]
    pub conversation_id: Option<String>,
}

/// Spend grouped one way, largest cost first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SpendReport {
    /// What the rows are grouped by.
    pub by: SpendBy,
    pub rows: Vec<SpendRow>,
}

/// Tokens and cost of the recorded model requests per conversation, agent, tenant or
/// key.
#[utoipa::path(get, path = "/v1/spend", tag = "records", params(SpendQuery),
    responses((status = 200, body = SpendReport), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn spend(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
    ApiQuery(q): ApiQuery<SpendQuery>,
) -> Result<Json<SpendReport>, ApiError> {
    let by = match q.by.as_deref() {
        None => SpendBy::Agent,
        Some(b) => b.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "by={b}: group by conversation, agent, tenant or key"
            ))
        })?,
    };
    if let Some(conversation) = q.conversation_id {
        let filter = toolgate_store::SpendFilter {
            tenant: who.scope().map(str::to_string),
            conversation: Some(conversation.clone()),
            ..Default::default()
        };
        let spend = state.runner.store.spend(&filter).await?;
        let rows = (spend.requests > 0)
            .then_some(SpendRow {
                name: conversation,
                spend,
            })
            .into_iter()
            .collect();
        return Ok(Json(SpendReport {
            by: SpendBy::Conversation,
            rows,
        }));
    }
    let rows = state
        .runner
        .store
        .spend_by(by, Scope::of(who.scope()))
        .await?;
    Ok(Json(SpendReport { by, rows }))
}
