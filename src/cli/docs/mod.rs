//! `toolgate docs gen` (hidden): writes the book's generated reference pages
//! (`docs/src/reference/`) and the file formats' JSON Schemas (`schemas/`) from the code
//! they describe; `--check` compares them with the files there and names each that
//! differs, so a stale page fails the tests.

mod cli_page;
mod formats;
mod http_page;
mod schema_md;
mod tables;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, CommandFactory, Subcommand};

use super::Failure;

#[derive(Args, Debug)]
pub struct DocsArgs {
    #[command(subcommand)]
    command: DocsCommand,
}

#[derive(Subcommand, Debug)]
enum DocsCommand {
    /// Write the reference pages and schemas (or, with --check, compare them).
    Gen {
        /// Compare with the files there instead of writing them; exit 1 naming each
        /// file that differs.
        #[arg(long)]
        check: bool,
        /// The repository's root (the pages go under docs/src/reference/, the
        /// schemas under schemas/).
        #[arg(long, value_name = "DIR", default_value = ".")]
        out: PathBuf,
    },
}

/// One generated file: its path under the root, and its text.
pub struct Page {
    path: String,
    text: String,
}

impl Page {
    fn new(path: String, text: String) -> Self {
        Self { path, text }
    }

    /// A page of the book's reference part.
    fn reference(name: &str, text: String) -> Self {
        Self::new(format!("docs/src/reference/{name}"), text)
    }
}

/// A JSON value as a schema file holds it: pretty, ending with a newline.
fn to_json(v: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    text
}

/// Every generated file.
pub fn pages() -> Result<Vec<Page>, String> {
    let cli = super::Cli::command();
    let mut pages = vec![
        Page::reference("cli.md", cli_page::page(&cli)),
        Page::reference(
            "http-api.md",
            http_page::page(&toolgate::server::document()),
        ),
        Page::reference("metrics.md", tables::metrics()?),
        Page::reference("exit-codes.md", tables::exit_codes()),
        Page::reference("environment.md", tables::environment(&cli)),
    ];
    pages.extend(formats::pages());
    Ok(pages)
}

/// `toolgate docs gen`.
pub fn run(args: DocsArgs) -> Result<ExitCode, Failure> {
    let DocsCommand::Gen { check, out } = args.command;
    let pages = pages().map_err(Failure::other)?;
    if check {
        let stale: Vec<String> = pages
            .iter()
            .filter(|p| std::fs::read_to_string(out.join(&p.path)).ok().as_ref() != Some(&p.text))
            .map(|p| p.path.clone())
            .collect();
        if !stale.is_empty() {
            return Err(Failure::other(format!(
                "generated files differ from the code (run `toolgate docs gen`): {}",
                stale.join(", ")
            )));
        }
        return Ok(ExitCode::SUCCESS);
    }
    for p in &pages {
        write(&out, p)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `page` under `root`, making its folder.
fn write(root: &Path, page: &Page) -> Result<(), Failure> {
    let path = root.join(&page.path);
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)
            .map_err(|e| Failure::other(format!("{}: {e}", folder.display())))?;
    }
    std::fs::write(&path, &page.text)
        .map_err(|e| Failure::other(format!("{}: {e}", path.display())))
}
