//! Command-line definitions shared by every subcommand; the exit codes are in `exit`:
//! 0 done, 2 bad input (one line on stderr), 3 paused for action, 1 anything else.

mod agents;
mod calls;
mod completions;
mod docs;
mod doctor;
mod doctor_model;
mod environment;
pub mod exit;
mod interactive;
mod kb;
mod keys;
mod limits;
mod logging;
mod man;
mod mcp;
mod oauth;
mod oauth_connect;
pub mod out;
mod parse;
mod prompt;
mod render;
mod run;
mod runs;
mod scaffold;
mod secrets;
mod serve;
mod stats;
mod stats_limits;
mod stats_spend;
mod table;
mod tools;
mod tree;
mod validate;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use std::sync::Arc;
use toolgate::store::{Store, StoreError, postgres_url};

use toolgate::tool::{LoadedTool, ToolLibrary};

/// What `toolgate --version` prints after the name: the version and the commit it was
/// built from (hash and date; build.rs finds them).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TOOLGATE_COMMIT"),
    ")"
);

#[derive(Parser, Debug)]
#[command(
    name = "toolgate",
    version = VERSION,
    about = "An agent-loop runtime: tool calls parsed, gated, run and recorded",
    after_help = "Book: docs/src/introduction.md"
)]
pub struct Cli {
    /// The database: a SQLite file, or a PostgreSQL URL (postgres://USER@HOST:PORT/DB)
    /// that many workers share.
    #[arg(long, global = true, env = "TOOLGATE_DB", default_value = toolgate::store::DEFAULT_DB)]
    db: PathBuf,
    /// More logs on stderr: -v info, -vv debug, -vvv trace (RUST_LOG, when set, wins).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Log lines on stderr as text or JSON (one object per line).
    #[arg(long, global = true, value_enum, env = "TOOLGATE_LOG_FORMAT", default_value_t = logging::LogFormat::Text)]
    log_format: logging::LogFormat,
    /// Export spans over OTLP/HTTP (protobuf) to this OpenTelemetry collector (its base
    /// URL: spans go to /v1/traces).
    #[arg(
        long,
        global = true,
        env = "OTEL_EXPORTER_OTLP_ENDPOINT",
        value_name = "URL"
    )]
    otlp_endpoint: Option<String>,
    /// Exported spans carry tool arguments and results (secret values stay masked).
    #[arg(long, global = true)]
    trace_content: bool,
    /// Work as this tenant: see only its runs, calls and secrets, start runs in it
    /// (without it, the CLI on a local database is the admin of every tenant; new runs,
    /// keys and secrets go to `default`, secrets to the shared scope).
    #[arg(long, global = true, value_name = "T")]
    tenant: Option<String>,
    #[command(subcommand)]
    command: Command,
}

/// Waits for a store operation from a synchronous command, on a small runtime of its
/// own (the store reads on its blocking pool).
pub trait Wait: std::future::Future + Sized {
    fn wait(self) -> Result<Self::Output, Failure> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::other(format!("cannot start the runtime: {e}")))?;
        Ok(rt.block_on(self))
    }
}

impl<F: std::future::Future> Wait for F {}

static TENANT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// The `--tenant` the CLI works as (`None`: admin of every tenant).
pub fn tenant() -> Option<&'static str> {
    TENANT.get().and_then(|t| t.as_deref())
}

/// Refuses run `id` when `--tenant` names another tenant than the run's: answered as
/// for an unknown run.
pub fn check_run_tenant(store: &Store, id: &str) -> Result<(), Failure> {
    let Some(t) = tenant() else {
        return Ok(());
    };
    let unknown = || Failure::other(format!("there is no run '{id}' (toolgate runs lists them)"));
    match toolgate::run::Runner::new(store.clone(), toolgate::tool::sources::standard())
        .get(id)
        .wait()?
    {
        Ok(run) if run.tenant == t => Ok(()),
        _ => Err(unknown()),
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse one model output (a file, or stdin) and print its text, calls and problems as JSON.
    #[command(after_help = "Book: docs/src/howto/parse.md")]
    Parse(parse::ParseArgs),
    /// List, inspect, check and call the tools of the library.
    #[command(after_help = "Book: docs/src/tutorials/first-tool.md")]
    Tools(tools::ToolsArgs),
    /// Check agent files without running them: models, tools, sub-agents.
    #[command(after_help = "Book: docs/src/tutorials/first-agent.md")]
    Agents(agents::AgentsArgs),
    /// Print the XML tool instructions (or the OpenAI tools array) for some tools.
    #[command(after_help = "Book: docs/src/tutorials/first-tool.md")]
    Prompt(prompt::PromptArgs),
    /// List recorded calls (by conversation, run, tool, status, time), as a table or JSON.
    #[command(after_help = "Book: docs/src/explanation/record.md")]
    Calls(calls::CallsArgs),
    /// Usage summaries: one conversation, one tool, or everything.
    #[command(after_help = "Book: docs/src/explanation/record.md")]
    Stats(stats::StatsArgs),
    /// Run an agent on a message, until it answers, pauses for action (exit 3) or fails.
    #[command(after_help = "Book: docs/src/tutorials/first-agent.md")]
    Run(run::RunArgs),
    /// List runs, newest first.
    #[command(after_help = "Book: docs/src/tutorials/person-in-the-loop.md")]
    Runs(runs::RunsArgs),
    /// Show one run: status, waiting items, usage (--json: the run object).
    #[command(after_help = "Book: docs/src/tutorials/person-in-the-loop.md")]
    Show(runs::ShowArgs),
    /// Approve a paused run's call(s), optionally for good (--always) or with edited --args.
    #[command(after_help = "Book: docs/src/tutorials/person-in-the-loop.md")]
    Approve(runs::ApproveArgs),
    /// Deny a paused run's call; the reason goes to the model.
    #[command(after_help = "Book: docs/src/tutorials/person-in-the-loop.md")]
    Deny(runs::DenyArgs),
    /// Give a client tool's output to a paused run.
    #[command(after_help = "Book: docs/src/tutorials/person-in-the-loop.md")]
    Submit(runs::SubmitArgs),
    /// Continue a run whose items are all resolved, that failed, or whose process died.
    #[command(after_help = "Book: docs/src/tutorials/person-in-the-loop.md")]
    Resume(runs::ResumeArgs),
    /// Cancel a run that has not ended.
    #[command(after_help = "Book: docs/src/tutorials/person-in-the-loop.md")]
    Cancel(runs::ResumeArgs),
    /// Serve the run API, SSE and an OpenAI Responses endpoint over HTTP.
    #[command(after_help = "Book: docs/src/tutorials/serving.md")]
    Serve(Box<serve::ServeArgs>),
    /// Serve an agent's tools to an MCP client over stdio, every call gated and recorded.
    #[command(after_help = "Book: docs/src/howto/mcp-server.md")]
    Mcp(mcp::McpArgs),
    /// Issue, list and revoke the keys `serve` accepts (roles, tenants, groups).
    #[command(after_help = "Book: docs/src/howto/identities.md")]
    Keys(keys::KeysArgs),
    /// Store, list and remove the named credentials tool files ask for (sealed at rest).
    #[command(after_help = "Book: docs/src/howto/secrets.md")]
    Secrets(secrets::SecretsArgs),
    /// List and revoke the providers users have connected (per-user OAuth tokens).
    #[command(name = "oauth", after_help = "Book: docs/src/howto/oauth.md")]
    OAuth(oauth::OAuthArgs),
    /// Knowledge bases: create, add documents, list, show, search, remove.
    #[command(after_help = "Book: docs/src/howto/knowledge.md")]
    Kb(kb::KbArgs),
    /// What this machine can confine (Landlock, seccomp, the tools' user), and whether a
    /// program starts in the default sandbox.
    #[command(after_help = "Book: docs/src/howto/sandbox.md")]
    Doctor(doctor::DoctorArgs),
    /// Print the completion script for bash, zsh, fish, elvish or PowerShell.
    #[command(after_help = "Book: docs/src/howto/install.md")]
    Completions(completions::CompletionsArgs),
    /// Print the manual page, or write every command's page into a folder (--dir).
    #[command(after_help = "Book: docs/src/howto/install.md")]
    Man(man::ManArgs),
    /// Generate (or check) the book's reference pages and the file formats' JSON Schemas.
    #[command(hide = true)]
    Docs(docs::DocsArgs),
}

/// A failed command: its exit code and the one line to print.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// Bad input from the user: exit code 2.
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self {
            code: exit::BAD_INPUT,
            message: message.into(),
        }
    }
    /// Anything else: exit code 1.
    pub fn other(message: impl Into<String>) -> Self {
        Self {
            code: exit::FAILED,
            message: message.into(),
        }
    }
}

impl Cli {
    /// Starts the logs `-v`, `--log-format` and `RUST_LOG` ask for, on stderr, and the
    /// span export `--otlp-endpoint` asks for (running until the value is dropped).
    pub fn start_logging(&self) -> Result<Option<toolgate::telemetry::otel::Exporting>, Failure> {
        let otlp = self
            .otlp_endpoint
            .as_deref()
            .filter(|e| !e.trim().is_empty())
            .map(|endpoint| toolgate::telemetry::otel::OtelSettings {
                endpoint: endpoint.trim().to_string(),
                trace_content: self.trace_content,
            });
        logging::init(self.verbose, self.log_format, otlp.as_ref()).map_err(Failure::bad_input)
    }
}

pub fn run(cli: Cli) -> Result<ExitCode, Failure> {
    // Before any tool starts (MCP servers start when the library loads).
    if postgres_url(&cli.db).is_none() {
        toolgate::sandbox::protect_database(&cli.db);
    }
    if let Some(t) = &cli.tenant
        && (t.is_empty()
            || !t
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@')))
    {
        return Err(Failure::bad_input(format!(
            "--tenant '{t}' is not a tenant name: use letters, digits, '_', '-', '.' and '@'"
        )));
    }
    let _ = TENANT.set(cli.tenant.clone());
    match cli.command {
        Command::Parse(args) => parse::run(args),
        Command::Tools(args) => tools::run(args, &cli.db),
        Command::Agents(args) => agents::run(args, &cli.db),
        Command::Prompt(args) => prompt::run(args),
        Command::Calls(args) => calls::run(args, &cli.db),
        Command::Stats(args) => stats::run(args, &cli.db),
        Command::Run(args) => run::run(args, &cli.db),
        Command::Runs(args) => runs::list(args, &cli.db),
        Command::Show(args) => runs::show(args, &cli.db),
        Command::Approve(args) => runs::approve(args, &cli.db),
        Command::Deny(args) => runs::deny(args, &cli.db),
        Command::Submit(args) => runs::submit(args, &cli.db),
        Command::Resume(args) => runs::resume(args, &cli.db),
        Command::Cancel(args) => runs::cancel(args, &cli.db),
        Command::Serve(args) => serve::run(*args, &cli.db),
        Command::Secrets(args) => secrets::run(args, &cli.db),
        Command::OAuth(args) => oauth::run(args, &cli.db),
        Command::Kb(args) => kb::run(args, &cli.db),
        Command::Keys(args) => keys::run(args, &cli.db),
        Command::Mcp(args) => mcp::run(args, &cli.db),
        Command::Doctor(args) => doctor::run(args),
        Command::Completions(args) => completions::run(&args),
        Command::Man(args) => man::run(&args),
        Command::Docs(args) => docs::run(args),
    }
}

/// Opens the database for writing; a foreign or newer file is bad input.
/// Opens (or creates) the database, creating its folder first when it does not exist
/// yet (a desktop config naming `~/.local/share/toolgate/toolgate.db` on a new machine).
/// A PostgreSQL URL opens that database (no folder to make).
pub fn open_store(db: &Path) -> Result<Store, Failure> {
    if postgres_url(db).is_none()
        && let Some(folder) = db.parent().filter(|p| !p.as_os_str().is_empty())
        && !folder.exists()
    {
        std::fs::create_dir_all(folder).map_err(|e| {
            Failure::bad_input(format!(
                "{}: cannot create the database's folder: {e}",
                db.display()
            ))
        })?;
    }
    Store::open(db).map_err(store_failure)
}

/// Opens an existing database to read it (a PostgreSQL database is laid out when first
/// opened: an empty one reads as empty).
pub fn open_existing_store(db: &Path) -> Result<Store, Failure> {
    if postgres_url(db).is_none() && !db.exists() {
        return Err(Failure::bad_input(format!(
            "{} does not exist: nothing has been recorded there yet (--db or TOOLGATE_DB choose the file)",
            db.display()
        )));
    }
    open_store(db)
}

pub fn store_failure(e: StoreError) -> Failure {
    match e {
        StoreError::Foreign { .. } | StoreError::TooNew { .. } | StoreError::NotFound(_) => {
            Failure::bad_input(e.to_string())
        }
        other => Failure::other(other.to_string()),
    }
}

/// The tool `name` of the library, or bad input naming the tools there are.
pub fn find_tool<'a>(lib: &'a ToolLibrary, name: &str) -> Result<&'a Arc<LoadedTool>, Failure> {
    lib.get(name).ok_or_else(|| {
        Failure::bad_input(format!(
            "there is no tool named '{name}'; the library has: {}",
            lib.names().join(", ")
        ))
    })
}

/// The default tools folder, relative to the current directory.
pub const DEFAULT_TOOLS: &str = "tools";

/// The tools folder a command runs with: the one named (which must exist), else
/// `./tools` when there is one, else none (built-ins only).
/// `--workspace DIR` made ready: created (with its parents) when it does not exist yet,
/// and made absolute; one line when it cannot be created or is not a folder.
pub fn workspace_dir(named: Option<PathBuf>) -> Result<Option<PathBuf>, Failure> {
    let Some(dir) = named else { return Ok(None) };
    if dir.as_os_str().is_empty() {
        return Err(Failure::bad_input("--workspace needs a folder"));
    }
    if !dir.exists() {
        std::fs::create_dir_all(&dir).map_err(|e| {
            Failure::bad_input(format!(
                "--workspace {}: cannot create the folder: {e}",
                dir.display()
            ))
        })?;
    } else if !dir.is_dir() {
        return Err(Failure::bad_input(format!(
            "--workspace {}: not a folder",
            dir.display()
        )));
    }
    Ok(Some(std::path::absolute(&dir).unwrap_or(dir)))
}

pub fn tools_dir(named: Option<PathBuf>) -> Result<Option<PathBuf>, Failure> {
    match named {
        Some(dir) if !dir.is_dir() => Err(Failure::bad_input(format!(
            "tools folder {} does not exist",
            dir.display()
        ))),
        Some(dir) => Ok(Some(dir)),
        None => Ok(Some(PathBuf::from(DEFAULT_TOOLS)).filter(|d| d.is_dir())),
    }
}

/// Loads the tool library: the built-ins and the files in `dir` (default `./tools`).
/// A missing default folder means built-ins only; a missing folder the user named is
/// bad input. Broken files are reported on stderr and skipped.
pub fn load_tools(dir: Option<&Path>) -> Result<ToolLibrary, Failure> {
    let (dir, explicit) = match dir {
        Some(d) => (d.to_path_buf(), true),
        None => (PathBuf::from(DEFAULT_TOOLS), false),
    };
    if !dir.is_dir() {
        if explicit {
            return Err(Failure::bad_input(format!(
                "tools folder {} does not exist",
                dir.display()
            )));
        }
        return Ok(ToolLibrary::builtin(&toolgate::tool::sources::standard()));
    }
    let library = ToolLibrary::load(&dir, &toolgate::tool::sources::standard())
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    for e in library.errors() {
        out::say!("toolgate: warning: {e} (skipped)");
    }
    Ok(library)
}
