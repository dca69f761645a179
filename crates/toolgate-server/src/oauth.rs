//! `GET /v1/oauth/callback`: where the authorization server sends the user back after
//! a consent. The single-use `state` is the only credential (the browser carries no
//! key): it names the consent, and through it the run, the call and the user. The code
//! is exchanged and the tokens stored sealed; the run's `authorization` item is decided
//! (approved, or denied with the refusal in words for the model) and the run continues
//! on this server. The page says what happened; it never shows a token.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ApiQuery, ErrorBody};
use super::{AppState, Drive};
use toolgate_protocol::Decision;
use toolgate_runtime::oauth::{BrokerError, Callback, Completed, OAuthProvider};

/// The query the authorization server redirects with (RFC 6749 §4.1.2).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    /// The state the consent URL carried: it names the consent, once.
    pub state: Option<String>,
    /// The authorization code, when the user consented.
    pub code: Option<String>,
    /// `access_denied` when the user refused.
    pub error: Option<String>,
    /// The authorization server's words about `error`.
    pub error_description: Option<String>,
}

/// Completes a user's consent: the tokens are stored, and the paused run continues.
#[utoipa::path(get, path = "/v1/oauth/callback", tag = "oauth", security(()), params(CallbackQuery),
    responses((status = 200, description = "A page saying the account is connected, or that the consent was refused (the run is told)", content_type = "text/html"),
        (status = 400, description = "The state is missing, unknown, used or expired", body = ErrorBody),
        (status = 502, description = "The token endpoint refused the code or could not be reached", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn callback(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<CallbackQuery>,
) -> Result<Response, ApiError> {
    let answer = Callback {
        state: q
            .state
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ApiError::bad_request("the callback has no state"))?,
        code: q.code,
        error: q.error,
        error_description: q.error_description,
    };
    let providers = declared_providers(&state);
    let done = state
        .runner
        .oauth_broker(None)
        .complete(&answer, |name| {
            providers.iter().find(|p| p.name == name).cloned()
        })
        .await
        .map_err(refused)?;
    resolve(&state, &done).await?;
    let page = match &done.outcome {
        Ok(()) => format!(
            "Connected {} for {}. You can close this window; the run goes on.",
            done.owner.provider, done.owner.user
        ),
        Err(why) => format!("Not connected: {why}."),
    };
    Ok((StatusCode::OK, Html(html_page(&page))).into_response())
}

/// Decides the paused call's `authorization` item and continues its run.
async fn resolve(state: &Arc<AppState>, done: &Completed) -> Result<(), ApiError> {
    let (Some(run_id), Some(call_id)) = (&done.run_id, &done.call_id) else {
        return Ok(());
    };
    let decision = match &done.outcome {
        Ok(()) => Decision::Approve,
        Err(why) => Decision::Deny {
            reason: Some(why.clone()),
        },
    };
    let decider = toolgate_store::Decider {
        by: format!("oauth:{}", done.owner.user),
        key_id: None,
        shown: None,
    };
    let d = state
        .runner
        .decide_as(run_id, Some(call_id), decision, decider)
        .await?;
    if d.waiting == 0 {
        let (state, id) = (Arc::clone(state), run_id.clone());
        tokio::spawn(async move {
            if let Err(e) = state.drive(Drive::Resume(id.clone())).await {
                tracing::warn!(run = %id, error = %e.message, "the run did not continue after the consent");
            }
        });
    }
    Ok(())
}

/// The callback URL this server gives consents: under `--public-url` when set, else
/// its bound address.
pub fn callback_url(public: Option<&url::Url>, scheme: &str, addr: std::net::SocketAddr) -> String {
    match public {
        Some(u) => format!("{}/v1/oauth/callback", u.as_str().trim_end_matches('/')),
        None => format!("{scheme}://{addr}/v1/oauth/callback"),
    }
}

/// The `oauth:` providers the server's tools declare.
pub(super) fn declared_providers(state: &AppState) -> Vec<OAuthProvider> {
    let Ok(library) = (state.runner.load_library)(state.tools_dir.as_deref()) else {
        return Vec::new();
    };
    library.tools().filter_map(|t| t.user_oauth()).collect()
}

pub(super) fn refused(e: BrokerError) -> ApiError {
    match e {
        BrokerError::UnknownState | BrokerError::Expired | BrokerError::UnknownProvider(_) => {
            ApiError::bad_request(e.to_string())
        }
        BrokerError::OAuth(_) => {
            ApiError::new(StatusCode::BAD_GATEWAY, "oauth_refused", e.to_string())
        }
        BrokerError::Store(e) => e.into(),
        BrokerError::Sealing(_) => ApiError::internal(e.to_string()),
    }
}

fn html_page(text: &str) -> String {
    let escaped = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!("<!doctype html><meta charset=utf-8><title>toolgate</title><p>{escaped}</p>\n")
}
