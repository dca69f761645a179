//! `toolgate agents check [AGENT...]`: agent files checked without running them (they
//! load, their models name known providers, their tools are in the library, their
//! sub-agents load): the runtime's `check_agent`, as `POST /v1/agents/{name}/validate`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use toolgate::run::{AgentCheck, Runner, agent_files};

use super::out::{self, print, print_json};
use super::{DEFAULT_TOOLS, Failure, open_store};

#[derive(Args, Debug)]
pub struct AgentsArgs {
    #[command(subcommand)]
    command: AgentsCommand,
}

#[derive(Subcommand, Debug)]
enum AgentsCommand {
    /// Check agent files without running them; exit 2 if any has a problem.
    #[command(after_help = "Book: docs/src/tutorials/first-agent.md")]
    Check {
        /// Agent files, or names of agents in the agents folder [default: every file
        /// there].
        agents: Vec<String>,
        /// The agents folder.
        #[arg(long, default_value = "agents", env = "TOOLGATE_AGENTS")]
        dir: PathBuf,
        /// The tools folder [default: ./tools when it exists].
        #[arg(long, env = "TOOLGATE_TOOLS")]
        tools: Option<PathBuf>,
        /// Print a JSON list of {name, file, valid, problems}.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: AgentsArgs, db: &Path) -> Result<ExitCode, Failure> {
    let AgentsCommand::Check {
        agents,
        dir,
        tools,
        json,
    } = args.command;
    let tools = tools.or_else(|| {
        let d = PathBuf::from(DEFAULT_TOOLS);
        d.is_dir().then_some(d)
    });
    let files = chosen(&agents, &dir)?;
    let runner = Runner::new(open_store(db)?, toolgate::tool::sources::standard());
    let checks: Vec<AgentCheck> = files
        .iter()
        .map(|f| runner.check_agent(f, tools.as_deref()))
        .collect();
    if json {
        print_json(&mut out::stdout(), &checks, false)?;
    } else {
        let mut text = String::new();
        for c in &checks {
            let name = c.name.as_deref().unwrap_or("-");
            let word = if c.valid { "ok" } else { "problem" };
            text.push_str(&format!("{word:<8}{name} ({})\n", c.file));
            for p in &c.problems {
                text.push_str(&format!("        {p}\n"));
            }
        }
        let bad = checks.iter().filter(|c| !c.valid).count();
        text.push_str(&format!("{} agent(s), {bad} with problems\n", checks.len()));
        print(&text)?;
    }
    Ok(if checks.iter().all(|c| c.valid) {
        ExitCode::SUCCESS
    } else {
        super::exit::code(super::exit::BAD_INPUT)
    })
}

/// The files to check: each argument a file, or the name of an agent in `dir`.
fn chosen(agents: &[String], dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let all = agent_files(dir);
    if agents.is_empty() {
        if all.is_empty() {
            return Err(Failure::bad_input(format!(
                "no agent files in {} (--dir names the folder)",
                dir.display()
            )));
        }
        return Ok(all);
    }
    agents
        .iter()
        .map(|a| {
            let file = PathBuf::from(a);
            if file.is_file() {
                return Ok(file);
            }
            all.iter()
                .find(|f| toolgate::agent::Agent::load(f).is_ok_and(|ag| &ag.name == a))
                .cloned()
                .ok_or_else(|| {
                    Failure::bad_input(format!(
                        "'{a}' is neither a file nor an agent of {}",
                        dir.display()
                    ))
                })
        })
        .collect()
}
