//! `toolgate completions SHELL`: the shell's completion script for toolgate, generated
//! from the command-line definitions (clap_complete), printed for the user to install.

use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, Failure, out};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the completion script: subcommands, options and their values, file names
/// where a file is asked for.
pub fn run(args: &CompletionsArgs) -> Result<ExitCode, Failure> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "toolgate", &mut script);
    std::io::Write::write_all(&mut out::stdout(), &script).map_err(out::write_failure)?;
    Ok(ExitCode::SUCCESS)
}
