//! Span export over OTLP/HTTP (protobuf): the `tracing` spans of runs (run > turn >
//! model call / tool call) go to an OpenTelemetry collector through
//! `tracing-opentelemetry` and `opentelemetry-otlp`, in batches off the hot path. Only
//! toolgate's own spans at info level are exported, never log events (their messages
//! are for the logs).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// Where spans go, and what they may carry.
#[derive(Debug, Clone)]
pub struct OtelSettings {
    /// The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`): spans are posted to
    /// its `/v1/traces`, unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names the full URL.
    pub endpoint: String,
    /// Spans carry argument and result values (`--trace-content`); secrets stay masked.
    pub trace_content: bool,
}

/// Why spans cannot be exported.
#[derive(Debug, thiserror::Error)]
#[error("cannot export traces to {endpoint}: {why}")]
pub struct OtelError {
    pub endpoint: String,
    pub why: String,
}

/// The exporter while it runs; dropping it sends what is still buffered and stops it.
pub struct Exporting {
    provider: SdkTracerProvider,
}

impl Drop for Exporting {
    fn drop(&mut self) {
        super::propagate::set(false, false);
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "the trace exporter did not stop cleanly");
        }
    }
}

/// The URL spans are posted to: `traces` (the full URL from
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) when set, else the base URL's `/v1/traces`.
fn traces_url(endpoint: &str, traces: Option<String>) -> String {
    match traces {
        Some(full) if !full.trim().is_empty() => full,
        _ => {
            let base = endpoint.trim_end_matches('/');
            if base.ends_with("/v1/traces") {
                base.to_string()
            } else {
                format!("{base}/v1/traces")
            }
        }
    }
}

/// The full URL spans go to, instead of `--otlp-endpoint` + `/v1/traces`.
pub const TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The exported service name (default `toolgate`).
pub const SERVICE_NAME_ENV: &str = "OTEL_SERVICE_NAME";

/// A layer exporting toolgate's spans as `settings` say, and the exporter behind it.
/// Call it outside an async runtime (the exporter makes its own HTTP client).
pub fn layer<S>(settings: &OtelSettings) -> Result<(impl Layer<S>, Exporting), OtelError>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let url = traces_url(&settings.endpoint, std::env::var(TRACES_ENDPOINT_ENV).ok());
    let fail = |why: String| OtelError {
        endpoint: url.clone(),
        why,
    };
    url::Url::parse(&url)
        .map_err(|e| fail(e.to_string()))
        .and_then(|u| match u.scheme() {
            "http" | "https" => Ok(()),
            other => Err(fail(format!("'{other}' is not http or https"))),
        })?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let mut resource = Resource::builder();
    if std::env::var_os(SERVICE_NAME_ENV).is_none() {
        resource = resource.with_service_name("toolgate");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("toolgate");
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    super::propagate::set(true, settings.trace_content);
    let only_spans = tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span()
            && meta.target().starts_with("toolgate")
            && *meta.level() <= tracing::Level::INFO
    });
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(only_spans);
    Ok((layer, Exporting { provider }))
}

#[cfg(test)]
mod tests {
    use super::traces_url;

    #[test]
    fn the_base_url_gets_the_traces_path_once() {
        assert_eq!(traces_url("http://c:4318", None), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("http://c:4318/", None),
            "http://c:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://c:4318/v1/traces", None),
            "http://c:4318/v1/traces"
        );
        let full = Some("http://t:1/x".to_string());
        assert_eq!(traces_url("http://c:4318", full), "http://t:1/x");
    }
}
