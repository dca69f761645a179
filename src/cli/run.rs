//! `toolgate run`: one agent run from the command line, and what every command that
//! drives a run shares: the runner, the event printer, the terminal prompts for a
//! paused run, and the exit code (0 completed, 3 paused, 1 otherwise).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use toolgate::agent::Agent;
use toolgate::protocol::{RunObject, RunStatus};
use toolgate::run::{Loaded, RunError, Runner, StartRun};
use toolgate::store::Store;
use toolgate::tool::ToolLibrary;

use super::out::say;
use super::{Failure, render};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The agent file (YAML).
    #[arg(long, value_hint = clap::ValueHint::FilePath)]
    agent: PathBuf,
    /// The model: openai:NAME, anthropic:NAME or scripted:FILE (default: the agent's, else openai:gpt-4o-mini).
    #[arg(long)]
    model: Option<String>,
    /// Continue this conversation (its history goes to the model); a new one otherwise.
    #[arg(long)]
    conversation: Option<String>,
    /// Print events as JSON lines, the run object last (and never ask on the terminal).
    #[arg(long)]
    json: bool,
    /// The tools folder (default ./tools; built-in tools are always there).
    #[arg(long, env = "TOOLGATE_TOOLS")]
    tools: Option<PathBuf>,
    /// The root for file tools, created when missing (default: the agent's workspace,
    /// else the current folder).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// The run's priority under the `priority` strategy (default: the agent's
    /// `priority:`); higher goes first.
    #[arg(long, allow_negative_numbers = true)]
    priority: Option<i32>,
    #[command(flatten)]
    limits: super::limits::LimitArgs,
    /// The message for the agent; `-` reads it from stdin.
    message: String,
}

/// The variable naming where a command-line run's consents come back to.
pub const OAUTH_CALLBACK_ENV: &str = "TOOLGATE_OAUTH_CALLBACK";

/// What a command asks of the runner.
pub enum Op {
    Start(Box<StartRun>),
    Resume(String),
}

/// The stack of each runtime thread: a run's future nests a child run's (a sub-agent, a
/// workflow, their steps), and polling a tree of them goes deeper than tokio's 2 MiB
/// default allows in an unoptimized build.
pub const STACK: usize = 16 * 1024 * 1024;

pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(STACK)
        .enable_all()
        .build()
        .map_err(|e| Failure::other(format!("cannot start the runtime: {e}")))
}

/// A runner whose tool library comes from the run's tools folder, broken tool files
/// reported on stderr (each once, when it breaks).
pub fn runner(store: Store) -> Runner {
    // Tool files of `entry: {type: knowledge}` search this store's knowledge bases.
    let sources = toolgate::tool::sources::standard()
        .with_first(toolgate::knowledge::KnowledgeFiles::new(store.clone()));
    let mut runner = Runner::new(store, sources.clone());
    runner.limits = super::limits::process();
    // Where a consent begun here sends the browser back: `toolgate oauth connect`
    // listens there (default http://localhost:8080/v1/oauth/callback).
    if let Ok(url) = std::env::var(OAUTH_CALLBACK_ENV)
        && !url.trim().is_empty()
    {
        runner.oauth_callback = url;
    }
    runner.load_library = Arc::new(move |dir: Option<&Path>| match dir {
        None => Ok(ToolLibrary::builtin(&sources)),
        Some(dir) => ToolLibrary::load(dir, &sources),
    });
    runner.loaded = Arc::new(Loaded::reporting(Arc::new(|line: &str| {
        say!("toolgate: warning: {line}")
    })));
    runner
}

pub fn run_failure(e: RunError) -> Failure {
    match e {
        RunError::UnknownTool(m) => Failure::bad_input(format!(
            "{m} (tool files are read from --tools DIR, default ./tools)"
        )),
        RunError::BadInput(_)
        | RunError::InvalidArguments(_)
        | RunError::NotFound(_)
        | RunError::Secret(_) => Failure::bad_input(e.to_string()),
        RunError::Store(s) => super::store_failure(s),
        RunError::Refused { .. } | RunError::Corrupt(_) => Failure::other(e.to_string()),
    }
}

/// Runs `op` with its events printed as they come.
pub async fn drive(store: &Store, json: bool, op: Op) -> Result<RunObject, RunError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The printer never holds the run up: a closed stdout drops the events quietly
    // (see out.rs), another write error is said once and the rest dropped; the run
    // goes on either way and is saved as usual.
    let printer = tokio::spawn(async move {
        let mut printer = Some(render::Printer::new(json));
        while let Some(e) = rx.recv().await {
            if let Some(Err(failure)) = printer.as_mut().map(|p| p.event(&e)) {
                say!("toolgate: {}; the run goes on", failure.message);
                printer = None;
            }
        }
    });
    let mut runner = runner(store.clone());
    runner.events = Some(tx);
    // Ctrl-C stops the run cleanly (saved as failed, ready to resume); a second one
    // exits at once.
    let interrupt = runner.interrupt.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            say!("\ntoolgate: interrupted; stopping the run (Ctrl-C again to quit now)");
            interrupt.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                // No drop runs past exit: end the tools' programs here.
                toolgate::tool::process::kill_all();
                std::process::exit(super::exit::INTERRUPTED.into());
            }
        }
    });
    let result = match op {
        Op::Start(start) => runner.start(*start).await,
        Op::Resume(id) => runner.resume(&id).await,
    };
    ctrl_c.abort();
    drop(runner);
    let _ = printer.await;
    result
}

/// After a run stopped: on a terminal (without `--json`) its waiting items are asked
/// right there and the run continues; then the outcome is printed and the exit code
/// returned.
pub async fn finish(store: &Store, mut run: RunObject, json: bool) -> Result<ExitCode, Failure> {
    let interactive = !json && std::io::stdin().is_terminal();
    while interactive && run.status == RunStatus::RequiresAction {
        let items = run
            .required_action
            .clone()
            .map(|r| r.items)
            .unwrap_or_default();
        let runner = runner(store.clone());
        let mut paused = false;
        for item in &items {
            loop {
                let mut input = std::io::stdin().lock();
                let mut out = super::out::stderr();
                let answer = super::interactive::ask(item, &mut input, &mut out)
                    .map_err(|e| Failure::other(format!("cannot read the answer: {e}")))?;
                drop(input);
                let Some(decision) = answer else {
                    paused = true;
                    break;
                };
                match runner.decide(&run.id, Some(&item.call_id), decision).await {
                    Ok(_) => break,
                    // Edited arguments that do not validate: say why and ask again.
                    Err(RunError::InvalidArguments(m)) => say!("{m}"),
                    // Decided elsewhere meanwhile, or a pending item gone.
                    Err(RunError::Refused { message, .. }) => {
                        say!("{message}");
                        break;
                    }
                    Err(e) => return Err(run_failure(e)),
                }
            }
            if paused {
                break;
            }
        }
        if paused {
            break;
        }
        run = drive(store, json, Op::Resume(run.id.clone()))
            .await
            .map_err(run_failure)?;
    }
    render::outcome(&run, json)?;
    Ok(exit_code(run.status))
}

pub fn exit_code(status: RunStatus) -> ExitCode {
    match status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::RequiresAction => super::exit::code(super::exit::PAUSED),
        _ => super::exit::code(super::exit::FAILED),
    }
}

pub fn run(args: RunArgs, db: &Path) -> Result<ExitCode, Failure> {
    let agent = Agent::load(&args.agent).map_err(|e| Failure::bad_input(e.to_string()))?;
    let message = if args.message == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| Failure::bad_input(format!("cannot read the message from stdin: {e}")))?
    } else {
        args.message
    };
    if message.trim().is_empty() {
        return Err(Failure::bad_input("the message is empty"));
    }
    let tools_dir = super::tools_dir(args.tools)?;
    let store = super::open_store(db)?;
    args.limits.apply()?;
    let start = StartRun {
        priority: args.priority,
        owner: super::tenant().map(|t| toolgate::identity::RunOwner {
            tenant: t.to_string(),
            user: std::env::var("USER").ok().map(|u| format!("cli:{u}")),
            allow: Default::default(),
            budgets: Vec::new(),
        }),
        agent,
        model: args.model,
        conversation: args.conversation,
        message,
        tools_dir,
        workspace: super::workspace_dir(args.workspace)?,
    };
    let rt = runtime()?;
    rt.block_on(async {
        let run = drive(&store, args.json, Op::Start(Box::new(start)))
            .await
            .map_err(run_failure)?;
        finish(&store, run, args.json).await
    })
}
