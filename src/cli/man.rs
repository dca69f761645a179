//! `toolgate man`: the manual pages, generated from the command-line definitions
//! (clap_mangen): the top page on stdout, or every page (`toolgate.1`,
//! `toolgate-run.1`, ...) written into a folder.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory};

use super::{Cli, Failure, out};

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write a page per command into this folder (created when missing), e.g.
    /// ~/.local/share/man/man1, instead of printing toolgate(1).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    dir: Option<PathBuf>,
}

pub fn run(args: &ManArgs) -> Result<ExitCode, Failure> {
    let cmd = Cli::command();
    let Some(dir) = &args.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut page)
            .map_err(out::write_failure)?;
        std::io::Write::write_all(&mut out::stdout(), &page).map_err(out::write_failure)?;
        return Ok(ExitCode::SUCCESS);
    };
    let cannot = |e: std::io::Error| {
        Failure::other(format!(
            "{}: cannot write the manual pages: {e}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(cannot)?;
    clap_mangen::generate_to(cmd, dir).map_err(cannot)?;
    Ok(ExitCode::SUCCESS)
}
