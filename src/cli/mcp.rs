//! `toolgate mcp --agent FILE`: the agent's toolkit served over stdio to an MCP client,
//! every call gated and recorded as a run in the database. Stdout carries the protocol;
//! everything else goes to stderr.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use toolgate::agent::Agent;
use toolgate::mcp_gateway::{Gateway, GatewayError};

use super::Failure;

#[derive(Args, Debug)]
pub struct McpArgs {
    /// The agent file (YAML) whose tools are served.
    #[arg(long, value_hint = clap::ValueHint::FilePath)]
    agent: PathBuf,
    /// The tools folder (default ./tools; built-in tools are always there).
    #[arg(long, env = "TOOLGATE_TOOLS")]
    tools: Option<PathBuf>,
    /// The root for file tools, created when missing (default: the agent's workspace,
    /// else the current folder).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// How long a held CONFIRM call waits for a decision (toolgate approve RUN, from
    /// any process) before it is denied, when the client cannot ask its user
    /// (e.g. 4s, 5m, 1500ms); an agent's `mcp_hold:` wins. Shorter than the client's
    /// own timeout, so it reads the reason rather than giving up.
    #[arg(long, default_value = "4s", value_parser = parse_duration)]
    approval_timeout: Duration,
    /// How often the tools folder is looked at for added, changed and removed files;
    /// the client is told its tool list changed (e.g. 1s, 500ms; 0 turns it off).
    #[arg(long, env = "TOOLGATE_RELOAD_EVERY", default_value = "1s", value_parser = parse_duration)]
    reload_every: Duration,
    #[command(flatten)]
    limits: super::limits::LimitArgs,
}

pub use toolgate::policy::parse_duration;

pub fn run(args: McpArgs, db: &Path) -> Result<ExitCode, Failure> {
    args.limits.apply()?;
    let agent = Agent::load(&args.agent).map_err(|e| Failure::bad_input(e.to_string()))?;
    let tools_dir = super::tools_dir(args.tools)?;
    let tools_dir = tools_dir.map(|d| std::path::absolute(&d).unwrap_or(d));
    let store = super::open_store(db)?;
    let runner = super::run::runner(store.clone());
    // The toolkit is checked before the client connects: a broken agent is one line.
    runner
        .toolkit_of(&agent, tools_dir.as_deref())
        .map_err(super::run::run_failure)?;
    let watched = tools_dir.clone();
    let gateway = Gateway {
        runner,
        tools_dir,
        workspace: super::workspace_dir(args.workspace)?,
        approval_timeout: args.approval_timeout,
        owner: super::tenant().map(|t| toolgate::identity::RunOwner {
            tenant: t.to_string(),
            user: std::env::var("USER").ok().map(|u| format!("cli:{u}")),
            allow: Default::default(),
            budgets: Vec::new(),
        }),
    };
    let rt = super::run::runtime()?;
    let served = rt.block_on(async {
        let _watching = gateway.runner.watch_tools(watched, args.reload_every);
        gateway.serve_stdio(agent).await
    });
    store.close();
    // A read of stdin may still block a thread (when stdout closed first): not waited for.
    rt.shutdown_background();
    match served {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // The client went away before the handshake: nothing to say on a closed pipe.
        Err(GatewayError::Closed) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(Failure::other(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_read_with_units() {
        assert_eq!(parse_duration("300"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("3d").is_err());
    }
}
