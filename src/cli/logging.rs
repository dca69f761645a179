//! Logs and traces: one `tracing` subscriber writing logs to stderr (never stdout,
//! which carries the command's output), as text or JSON lines, and, when an OTLP
//! endpoint is set, exporting toolgate's spans to it. The log level comes from
//! `RUST_LOG` when it is set, otherwise from `-v`: warnings only, `-v` info, `-vv`
//! debug, `-vvv` trace for toolgate's own logs (other crates stay at warn; `RUST_LOG`
//! reaches them). The export has its own filter: it does not depend on `-v`.

use std::io::IsTerminal;

use clap::ValueEnum;
use toolgate::telemetry::otel::{self, Exporting, OtelSettings};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use super::out::{self, say};

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One line of text per event (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object per event, with its span's fields.
    Json,
}

/// The filter `-v` given `verbose` times stands for.
fn verbosity(verbose: u8) -> &'static str {
    match verbose {
        0 => "warn",
        1 => "warn,toolgate=info",
        2 => "warn,toolgate=debug",
        _ => "warn,toolgate=trace",
    }
}

/// Installs the subscriber, exporting spans when `otlp` is given; the exporter runs
/// until the returned value is dropped. A `RUST_LOG` that does not parse is said once
/// and `-v` used instead; an endpoint that cannot be used is an error.
pub fn init(
    verbose: u8,
    format: LogFormat,
    otlp: Option<&OtelSettings>,
) -> Result<Option<Exporting>, String> {
    if format == LogFormat::Json {
        out::say_as_json();
    }
    let from_env = std::env::var(super::environment::RUST_LOG)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let filter = match from_env.map(|v| (EnvFilter::try_new(&v), v)) {
        Some((Ok(filter), _)) => filter,
        Some((Err(e), v)) => {
            say!("toolgate: warning: RUST_LOG='{v}' is not a log filter ({e}); using -v");
            EnvFilter::new(verbosity(verbose))
        }
        None => EnvFilter::new(verbosity(verbose)),
    };
    let (spans, exporting) = match otlp {
        Some(settings) => {
            let (layer, exporting) = otel::layer::<Registry>(settings)
                .map_err(|e| format!("{e} (--otlp-endpoint, OTEL_EXPORTER_OTLP_ENDPOINT)"))?;
            (Some(layer), Some(exporting))
        }
        None => (None, None),
    };
    let logs = tracing_subscriber::fmt::layer().with_writer(out::stderr);
    let logs = match format {
        LogFormat::Text => logs
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => logs.json().with_filter(filter).boxed(),
    };
    // A second subscriber (a test that runs `init` twice) keeps the first.
    let _ = tracing_subscriber::registry()
        .with(spans)
        .with(logs)
        .try_init();
    Ok(exporting)
}
