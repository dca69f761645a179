//! The `toolgate` binary: argument parsing, logging and exit codes; each subcommand in
//! src/cli/.

// Every write goes through cli::out, where a closed pipe ends the stream quietly
// (`println!` would panic on it).
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    // Spans still buffered are sent when this is dropped, after the command.
    let _exporting = match args.start_logging() {
        Ok(exporting) => exporting,
        Err(failure) => return failed(failure),
    };
    // A toolgate killed while its tools ran left their workspaces lent to the tool
    // user: take that back before anything else runs (a no-op when not root).
    if let Err(e) = toolgate::sandbox::sweep() {
        tracing::warn!("could not restore what a killed toolgate left lent: {e}");
    }
    match cli::run(args) {
        Ok(code) => code,
        Err(failure) => failed(failure),
    }
}

fn failed(failure: cli::Failure) -> ExitCode {
    cli::out::say_failure(format_args!("toolgate: {}", failure.message));
    ExitCode::from(failure.code)
}
