//! Incoming trace context: a request carrying a W3C `traceparent` is served inside a
//! server span that continues the caller's trace, so that the runs it drives (on their
//! own tasks, which carry the span along) are spans of that trace. Without a
//! `traceparent`, or when spans are not exported, requests pass untouched.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use toolgate_telemetry::propagate;

pub async fn continue_trace(req: Request, next: Next) -> Response {
    let Some(cx) = propagate::extract(req.headers()) else {
        return next.run(req).await;
    };
    // The route, not the path: span names stay few (a path carries ids).
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_string();
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{} {route}", req.method()),
        otel.kind = "server",
        "http.request.method" = %req.method(),
        "http.route" = %route,
    );
    propagate::adopt(&span, cx);
    next.run(req).instrument(span).await
}
