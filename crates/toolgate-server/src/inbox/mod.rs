//! The approval inbox and the console: pages for the people in the loop and the
//! operators, served at `/` (the inbox), `/runs` (every run, filtered), `/runs/{id}`,
//! `/conversations/{id}`, `/tools` (the catalogue) and `/tools/{name}` (a tool's stats)
//! from assets built into the binary. It talks
//! only to the public `/v1` API, with the bearer key the person gives it; every asset
//! comes from this server (the Content-Security-Policy allows no other host).

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::AppState;

const INDEX: &str = include_str!("assets/index.html");

/// The assets under `/inbox/`: name, content type, text.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", JS, include_str!("assets/app.js")),
    ("api.js", JS, include_str!("assets/api.js")),
    ("dom.js", JS, include_str!("assets/dom.js")),
    ("items.js", JS, include_str!("assets/items.js")),
    ("pages.js", JS, include_str!("assets/pages.js")),
    ("chart.js", JS, include_str!("assets/chart.js")),
    ("console.js", JS, include_str!("assets/console.js")),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
    ("icon.svg", "image/svg+xml", include_str!("assets/icon.svg")),
];
const JS: &str = "text/javascript; charset=utf-8";

/// Only this server, for everything: no outside host can be reached from the page.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

/// The page's routes (outside `/v1`: no key needed to load the page itself, which
/// holds no data).
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(page))
        .route("/runs", get(page))
        .route("/runs/{id}", get(page))
        .route("/conversations/{id}", get(page))
        .route("/tools", get(page))
        .route("/tools/{name}", get(page))
        .route("/inbox/{name}", get(asset_named))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn page() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

async fn asset_named(super::PathId(name): super::PathId) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => asset(content_type, body),
        None => {
            super::ApiError::not_found(format!("the inbox has no asset '{name}'")).into_response()
        }
    }
}
