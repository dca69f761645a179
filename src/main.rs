//! The `toolgate` binary: argument parsing and exit codes; each subcommand in src/cli/.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("toolgate: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
