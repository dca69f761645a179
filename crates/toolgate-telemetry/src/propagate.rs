//! Trace context across processes (W3C `traceparent`): read from an incoming request,
//! written onto the HTTP requests tools make, and kept with a run so that every drive
//! of it, after any pause and in any process, is part of one trace. Everything here is
//! a no-op unless spans are exported (see `otel`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

static EXPORTING: AtomicBool = AtomicBool::new(false);
static CONTENT: AtomicBool = AtomicBool::new(false);

/// Spans are exported (an OTLP endpoint is set).
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Exported spans may carry argument and result values (`--trace-content`), secret
/// ones masked as everywhere else.
pub fn trace_content() -> bool {
    CONTENT.load(Ordering::Relaxed)
}

pub(super) fn set(exporting: bool, content: bool) {
    EXPORTING.store(exporting, Ordering::Relaxed);
    CONTENT.store(content, Ordering::Relaxed);
}

struct HttpHeaders<'a>(&'a http::HeaderMap);

impl Extractor for HttpHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HttpHeadersMut<'a>(&'a mut http::HeaderMap);

impl Injector for HttpHeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// The caller's trace context from request headers, when they carry a valid one.
pub fn extract(headers: &http::HeaderMap) -> Option<Context> {
    if !exporting() {
        return None;
    }
    let cx = TraceContextPropagator::new().extract(&HttpHeaders(headers));
    cx.span().span_context().is_valid().then_some(cx)
}

/// Writes the current span's `traceparent` (and `tracestate`) onto outgoing headers.
pub fn inject(headers: &mut http::HeaderMap) {
    if !exporting() {
        return;
    }
    let cx = tracing::Span::current().context();
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&cx, &mut HttpHeadersMut(headers));
    }
}

/// The current span's `traceparent`, when spans are exported.
pub fn current() -> Option<String> {
    if !exporting() {
        return None;
    }
    traceparent(&tracing::Span::current())
}

/// The `traceparent` naming `span`, when it is exported.
fn traceparent(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}

fn parse(traceparent: &str) -> Option<Context> {
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// Puts a run's new drive span into the run's trace. `kept` is the `traceparent` kept
/// with the run (its first drive's span): when the drive runs outside that trace (a
/// resume from another request or process), the span becomes a child of it, linked
/// to the context it was started in. Returns the `traceparent` to keep when the run
/// has none yet (its first drive).
pub fn continue_run(span: &tracing::Span, kept: Option<&str>) -> Option<String> {
    if !exporting() {
        return None;
    }
    let Some(kept) = kept.and_then(parse) else {
        return traceparent(span);
    };
    let here = tracing::Span::current().context();
    let here = here.span().span_context().clone();
    if here.trace_id() != kept.span().span_context().trace_id() {
        let _ = span.set_parent(kept);
        if here.is_valid() {
            span.add_link(here);
        }
    }
    None
}

/// Makes `span` continue the caller's trace `cx` (an incoming request's).
pub fn adopt(span: &tracing::Span, cx: Context) {
    let _ = span.set_parent(cx);
}
