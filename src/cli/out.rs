//! Where the binary writes: stdout and stderr through writers that take a closed pipe
//! (the reader went away, as in `toolgate show RUN | head -1`) as the end of that
//! stream. The rest of that stream's output is dropped, with no panic and no error
//! line, and the command ends with its usual exit code: a run being watched goes on
//! and is saved as it would be otherwise. Any other write error is a failure.
//!
//! `println!` and `eprintln!` panic on such a pipe; the binary denies them
//! (`clippy::print_stdout`, `clippy::print_stderr` in main.rs), so every write of the
//! CLI goes through here.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use super::Failure;

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether stdout's reader has gone: loops that only produce output stop early.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// The command's output stream. Once the reader has gone, writes succeed without
/// writing anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stdout;

/// The process's stdout, as a [`Stdout`].
pub fn stdout() -> Stdout {
    Stdout
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if stdout_closed() {
            return Ok(buf.len());
        }
        match io::stdout().write(buf) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                STDOUT_CLOSED.store(true, Ordering::Relaxed);
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if stdout_closed() {
            return Ok(());
        }
        match io::stdout().flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                STDOUT_CLOSED.store(true, Ordering::Relaxed);
                Ok(())
            }
            other => other,
        }
    }
}

/// Progress, prompts, warnings and logs. A write that fails (the reader of a
/// `2>&1 | head` pipe gone, a closed descriptor) is dropped: there is nowhere left to
/// say it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stderr;

/// The process's stderr, as a [`Stderr`].
pub fn stderr() -> Stderr {
    Stderr
}

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = io::stderr().flush();
        Ok(())
    }
}

/// A write error of the command's output, as a failure (exit code 1).
pub fn write_failure(e: io::Error) -> Failure {
    Failure::other(format!("cannot write the output: {e}"))
}

/// Writes `text` to stdout as it is.
pub fn print(text: &str) -> Result<(), Failure> {
    stdout().write_all(text.as_bytes()).map_err(write_failure)
}

/// One JSON document and a line break.
pub fn print_json(
    out: &mut impl Write,
    value: &impl serde::Serialize,
    pretty: bool,
) -> Result<(), Failure> {
    let written = if pretty {
        serde_json::to_writer_pretty(&mut *out, value)
    } else {
        serde_json::to_writer(&mut *out, value)
    };
    written
        .map_err(io::Error::other)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(write_failure)
}

static STDERR_JSON: AtomicBool = AtomicBool::new(false);

/// From now on, [`say!`] lines are JSON objects shaped like the log lines of
/// `--log-format json`, so that stderr stays one JSON object per line.
pub fn say_as_json() {
    STDERR_JSON.store(true, Ordering::Relaxed);
}

/// One line on stderr (use [`say!`]): as it is, or as a JSON log object after
/// [`say_as_json`].
pub fn say_line(args: fmt::Arguments<'_>) {
    say_at(None, args);
}

/// A failure's line on stderr: as [`say_line`], at level `ERROR` in JSON.
pub fn say_failure(args: fmt::Arguments<'_>) {
    say_at(Some("ERROR"), args);
}

fn say_at(level: Option<&str>, args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    if STDERR_JSON.load(Ordering::Relaxed) {
        let line = json_line(level, &args.to_string());
        let _ = err.write_all(line.as_bytes());
    } else {
        let _ = err.write_fmt(args);
    }
    let _ = err.write_all(b"\n");
}

/// `text` as a JSON log object: `{"timestamp", "level", "fields": {"message"},
/// "target"}`; without a `level`, `WARN` for a `toolgate: warning:` line, else `INFO`.
fn json_line(level: Option<&str>, text: &str) -> String {
    let message = text.trim();
    let level = level.unwrap_or(if message.starts_with("toolgate: warning:") {
        "WARN"
    } else {
        "INFO"
    });
    serde_json::json!({
        "timestamp": jiff::Timestamp::now().to_string(),
        "level": level,
        "fields": {"message": message},
        "target": "toolgate",
    })
    .to_string()
}

/// `eprintln!` that never panics: one line on stderr, dropped if stderr is gone.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::out::say_line(format_args!($($arg)*))
    };
}
pub(crate) use say;
