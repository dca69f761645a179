//! The approval inbox: a page for the people in the loop, served at `/` (and at
//! `/runs/{id}`, `/conversations/{id}`) from assets built into the binary. It talks
//! only to the public `/v1` API, with the bearer key the person gives it; every asset
//! comes from this server (the Content-Security-Policy allows no other host).

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::AppState;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");
const ICON: &str = include_str!("assets/icon.svg");

/// Only this server, for everything: no outside host can be reached from the page.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

/// The page's routes (outside `/v1`: no key needed to load the page itself, which
/// holds no data).
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(page))
        .route("/runs/{id}", get(page))
        .route("/conversations/{id}", get(page))
        .route("/inbox/app.js", get(script))
        .route("/inbox/app.css", get(style))
        .route("/inbox/icon.svg", get(icon))
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

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

async fn icon() -> Response {
    asset("image/svg+xml", ICON)
}
