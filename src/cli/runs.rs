//! The pause/resume loop from outside: `runs`, `show`, `approve`, `deny`, `submit`,
//! `resume` and `cancel`. A decision that resolves a run's last waiting item continues
//! the run in the same command, unless `--no-resume`.

use super::Wait;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;
use toolgate::protocol::{Decision, RunObject, RunStatus};
use toolgate::run::RunError;
use toolgate::run::run_object;
use toolgate::store::{Refusal, Scope, Store};

use super::out::{self, say};
use super::run::{Op, drive, finish, run_failure, runner, runtime};
use super::{Failure, render, table};

#[derive(Args, Debug)]
pub struct RunsArgs {
    /// Only runs with this status (in_progress, requires_action, completed, incomplete, failed, cancelled).
    #[arg(long)]
    status: Option<String>,
    /// Only runs of this conversation.
    #[arg(long)]
    conversation: Option<String>,
    /// Only runs of this agent (its name).
    #[arg(long)]
    agent: Option<String>,
    /// At most this many, newest first.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The run id (or a unique start of it).
    run: String,
    #[arg(long)]
    json: bool,
}

/// What every decision command shares.
#[derive(Args, Debug)]
pub struct DecisionArgs {
    /// The run id (or a unique start of it).
    run: String,
    /// Record the decision only; do not continue the run.
    #[arg(long)]
    no_resume: bool,
    /// Print events as JSON lines, the run object last.
    #[arg(long)]
    json: bool,
    /// Who decides, recorded with the decision (default: cli:$USER).
    #[arg(long, value_name = "NAME")]
    by: Option<String>,
}

#[derive(Args, Debug)]
pub struct ApproveArgs {
    #[command(flatten)]
    common: DecisionArgs,
    /// The call to approve (default: every call waiting for approval).
    #[arg(long)]
    call: Option<String>,
    /// Also approve every later call of the same tool by the same agent in this conversation.
    #[arg(long)]
    always: bool,
    /// Run the call with these arguments instead (a JSON object, validated first).
    #[arg(long)]
    args: Option<String>,
}

#[derive(Args, Debug)]
pub struct DenyArgs {
    #[command(flatten)]
    common: DecisionArgs,
    #[arg(long)]
    call: String,
    /// Told to the model as the call's result.
    #[arg(long)]
    reason: Option<String>,
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    #[command(flatten)]
    common: DecisionArgs,
    #[arg(long)]
    call: String,
    /// The client tool's output; `-` reads it from stdin.
    #[arg(long)]
    output: String,
    /// The output is an error (the call failed on the client's side).
    #[arg(long)]
    error: bool,
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    run: String,
    #[arg(long)]
    json: bool,
}

fn open(db: &Path) -> Result<Store, Failure> {
    super::open_existing_store(db)
}

pub fn list(args: RunsArgs, db: &Path) -> Result<ExitCode, Failure> {
    let status = match &args.status {
        Some(s) => Some(s.parse::<RunStatus>().map_err(|_| {
            Failure::bad_input(format!(
                "unknown status '{s}'; use one of: {}",
                RunStatus::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?),
        None => None,
    };
    let store = open(db)?;
    let rows = store
        .runs_with_pending(
            Scope::of(super::tenant()),
            status,
            args.conversation.as_deref(),
            args.agent.as_deref(),
            args.limit,
        )
        .wait()?
        .map_err(|e| run_failure(e.into()))?;
    if args.json {
        // The run objects `show --json` gives, waiting items included.
        let objects: Vec<_> = rows.iter().map(|(r, p)| run_object(r, p)).collect();
        out::print_json(&mut out::stdout(), &objects, false)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        out::print("no runs\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(r, _)| {
            vec![
                r.id.clone(),
                r.status.as_str().to_string(),
                r.agent.clone(),
                r.conversation_id.clone(),
                r.iteration.to_string(),
                super::calls::show_time(r.updated_at),
                r.last_error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    out::print(&table::render(
        &[
            "run",
            "status",
            "agent",
            "conversation",
            "turns",
            "updated",
            "error",
        ],
        &table_rows,
    ))?;
    Ok(ExitCode::SUCCESS)
}

pub fn show(args: ShowArgs, db: &Path) -> Result<ExitCode, Failure> {
    let store = open(db)?;
    super::check_run_tenant(&store, &args.run)?;
    let run = runner(store.clone())
        .get(&args.run)
        .wait()?
        .map_err(run_failure)?;
    if args.json {
        out::print_json(&mut out::stdout(), &run, false)?;
    } else {
        let mut text = describe(&run);
        text.push_str(&format!(
            "tenant        {}{}\n",
            run.tenant,
            run.started_by
                .as_deref()
                .map(|s| format!(" (started by {s})"))
                .unwrap_or_default()
        ));
        // Who decided each item: the identity, the typed name beside it.
        let rows = store
            .run_timeline(&run.id)
            .wait()?
            .map_err(|e| run_failure(e.into()))?;
        for p in rows.pauses.iter().filter(|p| p.decided_by.is_some()) {
            text.push_str(&format!(
                "decided       {}  {}  by {}{}{}\n",
                p.item.call_id,
                p.decision.as_ref().map_or("?", |d| match d {
                    toolgate::protocol::Decision::Approve => "approve",
                    toolgate::protocol::Decision::ApproveAlways => "approve_always",
                    toolgate::protocol::Decision::Deny { .. } => "deny",
                    toolgate::protocol::Decision::Edit { .. } => "edit",
                    toolgate::protocol::Decision::Submit { .. } => "submit",
                }),
                p.decided_by.as_deref().unwrap_or("?"),
                p.decided_by_key
                    .as_deref()
                    .map(|k| format!(" [{k}]"))
                    .unwrap_or_default(),
                p.decided_as
                    .as_deref()
                    .map(|s| format!(" (as {s})"))
                    .unwrap_or_default()
            ));
        }
        // A run with sub-agents (or one itself): the tree it is in, from its top.
        let top = store
            .root_run(&run.id)
            .wait()?
            .map_err(|e| run_failure(e.into()))?;
        let tree = store
            .run_tree(&top.id)
            .wait()?
            .map_err(|e| run_failure(e.into()))?;
        if !tree.children.is_empty() {
            text.push_str(
                "tree
",
            );
            for l in super::tree::render(&tree).lines() {
                text.push_str(&format!("  {l}\n"));
            }
            text.push_str(&format!(
                "with sub-agents  {}\n",
                super::tree::tally(&tree.totals)
            ));
        }
        out::print(&text)?;
    }
    Ok(exit_if_paused(run.status))
}

/// One run for a person: a line per fact, a line per waiting item.
fn describe(run: &RunObject) -> String {
    let mut text = format!(
        "run           {}\nstatus        {}\nagent         {}\nmodel         {}\nconversation  {}\nturns         {} of {}\n",
        run.id,
        run.status.as_str(),
        run.agent,
        run.model,
        run.conversation_id,
        run.iteration,
        run.max_iterations
    );
    text.push_str(&format!(
        "usage         {} model calls, {} prompt + {} completion tokens\n",
        run.usage.model_calls, run.usage.prompt_tokens, run.usage.completion_tokens
    ));
    if run.usage.compactions > 0 {
        text.push_str(&format!(
            "context       {} compaction(s) of older turns\n",
            run.usage.compactions
        ));
    }
    if let Some(e) = &run.last_error {
        text.push_str(&format!("last error    {e}\n"));
    }
    if let Some(output) = &run.output {
        text.push_str(&format!("output        {output}\n"));
    }
    for item in run.required_action.iter().flat_map(|r| &r.items) {
        if item.path.len() > 1 {
            text.push_str(&format!("waiting in    {}\n", item.path.join(" > ")));
        }
        text.push_str(&format!(
            "waiting       {}  {}  {}  {}\n",
            item.call_id,
            item.kind.as_str(),
            item.tool,
            item.arguments
        ));
        if let Some(reason) = &item.reason {
            text.push_str(&format!("  because     {reason}\n"));
        }
        if let Some(at) = item.expires_at {
            text.push_str(&format!(
                "  expires     {} (then {})\n",
                super::calls::show_time(at),
                item.on_timeout.unwrap_or_default().as_str()
            ));
        }
    }
    text
}

fn exit_if_paused(status: RunStatus) -> ExitCode {
    if status == RunStatus::RequiresAction {
        super::exit::code(super::exit::PAUSED)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn approve(args: ApproveArgs, db: &Path) -> Result<ExitCode, Failure> {
    let decision = match (&args.args, args.always) {
        (Some(_), true) => {
            return Err(Failure::bad_input(
                "--args and --always do not go together: approve the edited call, then use --always next time",
            ));
        }
        (Some(text), false) => {
            if args.call.is_none() {
                return Err(Failure::bad_input("--args needs --call ID"));
            }
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(arguments)) => Decision::Edit { arguments },
                Ok(_) => return Err(Failure::bad_input("--args must be a JSON object")),
                Err(e) => return Err(Failure::bad_input(format!("--args is not JSON: {e}"))),
            }
        }
        (None, true) => Decision::ApproveAlways,
        (None, false) => Decision::Approve,
    };
    decide(args.common, args.call.as_deref(), decision, db)
}

pub fn deny(args: DenyArgs, db: &Path) -> Result<ExitCode, Failure> {
    decide(
        args.common,
        Some(&args.call),
        Decision::Deny {
            reason: args.reason,
        },
        db,
    )
}

pub fn submit(args: SubmitArgs, db: &Path) -> Result<ExitCode, Failure> {
    let output = if args.output == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| Failure::bad_input(format!("cannot read the output from stdin: {e}")))?
    } else {
        args.output
    };
    decide(
        args.common,
        Some(&args.call),
        Decision::Submit {
            output,
            is_error: args.error,
        },
        db,
    )
}

fn decide(
    common: DecisionArgs,
    call: Option<&str>,
    decision: Decision,
    db: &Path,
) -> Result<ExitCode, Failure> {
    let store = open(db)?;
    super::check_run_tenant(&store, &common.run)?;
    let rt = runtime()?;
    rt.block_on(async {
        let deciding = runner(store.clone());
        let by = toolgate::store::Decider {
            by: decider(common.by.as_deref()),
            ..Default::default()
        };
        let decided = if common.no_resume {
            deciding.record_only(&common.run, call, decision, by).await
        } else {
            deciding.decide_as(&common.run, call, decision, by).await
        }
        .map_err(run_failure)?;
        if !common.json {
            say!(
                "toolgate: recorded for {}; {} item(s) still waiting",
                decided.calls.join(", "),
                decided.waiting
            );
        }
        if decided.waiting > 0 || common.no_resume {
            let run = runner(store.clone())
                .get(&common.run)
                .await
                .map_err(run_failure)?;
            render::outcome(&run, common.json)?;
            return Ok(super::exit::code(super::exit::PAUSED));
        }
        match drive(&store, common.json, Op::Resume(common.run.clone())).await {
            Ok(run) => finish(&store, run, common.json).await,
            // Another process resolved its own item at the same moment and took the run
            // first (or has finished it): this decision is recorded all the same.
            Err(RunError::Refused {
                kind: Refusal::LeaseHeld | Refusal::NotResumable,
                message,
            }) => {
                let run = runner(store.clone())
                    .get(&common.run)
                    .await
                    .map_err(run_failure)?;
                if !common.json {
                    say!("toolgate: the decision is recorded; {message}");
                }
                render::outcome(&run, common.json)?;
                Ok(match run.status {
                    RunStatus::InProgress => ExitCode::SUCCESS,
                    other => super::run::exit_code(other),
                })
            }
            Err(e) => Err(run_failure(e)),
        }
    })
}

/// Continues a run in this process, then finishes as `run` does.
async fn continue_run(store: &Store, id: &str, json: bool) -> Result<ExitCode, Failure> {
    let run = drive(store, json, Op::Resume(id.to_string()))
        .await
        .map_err(run_failure)?;
    finish(store, run, json).await
}

pub fn resume(args: ResumeArgs, db: &Path) -> Result<ExitCode, Failure> {
    let store = open(db)?;
    super::check_run_tenant(&store, &args.run)?;
    let rt = runtime()?;
    rt.block_on(async {
        let current = runner(store.clone())
            .get(&args.run)
            .await
            .map_err(run_failure)?;
        let waiting = current
            .required_action
            .as_ref()
            .is_some_and(|r| !r.items.is_empty());
        if waiting && !args.json && std::io::stdin().is_terminal() {
            // On a terminal, resuming a paused run asks its items right there.
            return finish(&store, current, args.json).await;
        }
        continue_run(&store, &args.run, args.json).await
    })
}

pub fn cancel(args: ResumeArgs, db: &Path) -> Result<ExitCode, Failure> {
    let store = open(db)?;
    super::check_run_tenant(&store, &args.run)?;
    let rt = runtime()?;
    let run = rt
        .block_on(runner(store).cancel(&args.run))
        .map_err(run_failure)?;
    if args.json {
        out::print_json(&mut out::stdout(), &run, false)?;
    } else {
        out::print(&format!("run {} cancelled\n", run.id))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Who a decision made here is recorded as: `--by`, else `cli:$USER` (`cli` when the
/// environment names no user).
fn decider(by: Option<&str>) -> String {
    match by.map(str::trim).filter(|b| !b.is_empty()) {
        Some(b) => b.to_string(),
        None => match std::env::var("USER").or_else(|_| std::env::var("LOGNAME")) {
            Ok(user) if !user.is_empty() => format!("cli:{user}"),
            _ => "cli".to_string(),
        },
    }
}
