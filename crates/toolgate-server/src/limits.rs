//! `GET /v1/limits`: the process's limiter and every agent's share, live: their limits
//! and, per category, the calls running, waiting, refused and timed out.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;

use super::AppState;
use super::error::ErrorBody;
use toolgate_runtime::engine::LimitsView;

/// The limiter every run of this server takes its call slots from, and the agents'
/// shares inside it.
#[utoipa::path(get, path = "/v1/limits", tag = "records",
    responses((status = 200, body = LimitsView), (status = 401, body = ErrorBody)))]
pub async fn limits(State(state): State<Arc<AppState>>) -> Json<LimitsView> {
    Json(state.runner.limits.view())
}
