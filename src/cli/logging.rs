//! Logs: one `tracing` subscriber writing to stderr (never stdout, which carries the
//! command's output), as text or JSON lines. The level comes from `RUST_LOG` when it is
//! set, otherwise from `-v`: warnings only, `-v` info, `-vv` debug, `-vvv` trace for
//! toolgate's own logs (other crates stay at warn; `RUST_LOG` reaches them).

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

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

/// Installs the subscriber. A `RUST_LOG` that does not parse is said once and `-v`
/// used instead.
pub fn init(verbose: u8, format: LogFormat) {
    let from_env = std::env::var("RUST_LOG")
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
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(out::stderr);
    // A second subscriber (a test that runs `init` twice) keeps the first.
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
