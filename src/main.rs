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
    args.start_logging();
    match cli::run(args) {
        Ok(code) => code,
        Err(failure) => {
            cli::out::say!("toolgate: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
