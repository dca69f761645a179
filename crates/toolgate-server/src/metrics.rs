//! `GET /metrics`: the process's Prometheus metrics (OpenMetrics text), behind the API
//! key on the main address, and without it on `--metrics-addr` (an address for the
//! scraper alone). Serving them turns them on: a server counts from its start.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;

use super::error::ApiError;
use super::{AppState, ServeError};
use toolgate_telemetry::{exposition, metrics};

/// Turns the metrics on, reading the server's limiter and store at each scrape, and
/// serves them on `extra` too when given (until `shutdown`).
pub async fn start(
    state: &Arc<AppState>,
    extra: Option<SocketAddr>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let limits = Arc::clone(&state.runner.limits);
    let store = state.runner.store.clone();
    metrics::install(|registry, bounds| super::collect::register(registry, bounds, limits, store));
    seed(state);
    let Some(addr) = extra else { return Ok(()) };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| ServeError::Bind { addr, error })?;
    let bound = listener.local_addr().map_err(ServeError::Io)?;
    tracing::info!(addr = %bound, "metrics on their own address: GET /metrics");
    let app = axum::Router::new().route("/metrics", axum::routing::get(scrape));
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "the metrics address stopped serving");
        }
    });
    Ok(())
}

/// Gives the agents of the folder, their tools and models their series at zero, so that
/// the first scrape of a fresh server shows 0 for them rather than nothing.
fn seed(state: &AppState) {
    let (agents, _) = state.agents.list(&state.runner.loaded);
    let mut tools = Vec::new();
    let mut models = Vec::new();
    for agent in &agents {
        if let Ok(toolkit) = state.runner.toolkit_of(agent, state.tools_dir.as_deref()) {
            tools.extend(toolkit.tools().into_iter().map(|t| t.spec.name.clone()));
        }
        models.extend(agent.model.clone());
    }
    tools.sort();
    tools.dedup();
    models.sort();
    models.dedup();
    let names: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
    metrics::seed(&names, &tools, &models);
}

/// Every metric now: OpenMetrics when the scraper asks for it, the classic Prometheus
/// text format otherwise.
pub async fn scrape(headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let openmetrics = exposition::wants_openmetrics(accept);
    // The scrape reads the store: off the async workers.
    match tokio::task::spawn_blocking(metrics::render).await {
        Ok(Some(Ok(text))) => {
            let (text, kind) = match openmetrics {
                true => (text, exposition::OPENMETRICS),
                false => (exposition::classic(&text), exposition::PROMETHEUS),
            };
            let mut r = text.into_response();
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
            r
        }
        Ok(None) => ApiError::internal("the metrics are not on in this process").into_response(),
        Ok(Some(Err(e))) => {
            ApiError::internal(format!("the metrics could not be written: {e}")).into_response()
        }
        Err(e) => ApiError::internal(format!("the scrape stopped: {e}")).into_response(),
    }
}
