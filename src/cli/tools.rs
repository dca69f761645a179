//! `toolgate tools`: list, show, check and call the tools of the library.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};
use toolgate::engine::{self, Cancel, Engine, EngineConfig, prepare};
use toolgate::protocol::CallerKind;
use toolgate::tool::secrets::{mask_output, mask_values};
use toolgate::tool::{LoadedTool, Part, ToolError, ToolLibrary, ToolOutput, workspace};

use super::out::{self, print_json, say};
use super::{DEFAULT_TOOLS, Failure, find_tool, load_tools, open_store, table};

#[derive(Args, Debug)]
pub struct ToolsArgs {
    /// Folder of tool files [default: ./tools].
    #[arg(long, global = true, env = "TOOLGATE_TOOLS")]
    tools: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<ToolsCommand>,
}

#[derive(Subcommand, Debug)]
enum ToolsCommand {
    /// Every tool: name, permission, how it runs, where it is defined.
    #[command(after_help = "Book: docs/src/tutorials/first-tool.md")]
    List {
        #[arg(long)]
        json: bool,
    },
    /// One tool in full.
    #[command(after_help = "Book: docs/src/tutorials/first-tool.md")]
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Load every tool file in DIR (default: the tools folder) and report problems; exit 2 if any.
    #[command(after_help = "Book: docs/src/tutorials/first-tool.md")]
    Check { dir: Option<PathBuf> },
    /// Check credentials with the upstream: one tool's, one Dify provider's, or (no name)
    /// those of every tool with a check; exit 1 if any is refused.
    #[command(after_help = "Book: docs/src/howto/secrets.md")]
    Validate {
        /// A tool or a Dify provider [default: every tool with a credential check].
        target: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Write a working, commented tool of a kind into the tools folder (never over a
    /// file), and say how to try it.
    #[command(after_help = "Book: docs/src/tutorials/first-tool.md")]
    New {
        /// The tool's name (a source's prefix for openapi, mcp and dify).
        name: String,
        #[arg(long, value_enum, default_value = "command")]
        kind: super::scaffold::Kind,
        /// The service an http or openapi tool calls [default: https://httpbin.org].
        #[arg(long)]
        url: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Validate arguments and run one tool directly.
    #[command(after_help = "Book: docs/src/tutorials/first-tool.md")]
    Call {
        name: String,
        /// The arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// The root for file tools [default: the current folder].
        #[arg(long, env = "TOOLGATE_WORKSPACE")]
        workspace: Option<PathBuf>,
        /// Record the call under this conversation [default: a new one].
        #[arg(long)]
        conversation: Option<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: ToolsArgs, db: &Path) -> Result<ExitCode, Failure> {
    match args.command.unwrap_or(ToolsCommand::List { json: false }) {
        ToolsCommand::List { json } => list(&load_tools(args.tools.as_deref())?, db, json),
        ToolsCommand::Validate { target, json } => super::validate::validate(
            &load_tools(args.tools.as_deref())?,
            target.as_deref(),
            db,
            json,
        ),
        ToolsCommand::Show { name, json } => show(&load_tools(args.tools.as_deref())?, &name, json),
        ToolsCommand::New {
            name,
            kind,
            url,
            json,
        } => new_tool(
            &args.tools.unwrap_or_else(|| PathBuf::from(DEFAULT_TOOLS)),
            &name,
            kind,
            url.as_deref(),
            json,
        ),
        ToolsCommand::Check { dir } => check(
            dir.or(args.tools)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_TOOLS)),
        ),
        ToolsCommand::Call {
            name,
            args: raw,
            workspace,
            conversation,
            json,
        } => {
            let lib = load_tools(args.tools.as_deref())?;
            call(&lib, &name, &raw, workspace, conversation, db, json)
        }
    }
}

/// `tools new`: writes the files, lists them, says how to try the tool.
fn new_tool(
    dir: &Path,
    name: &str,
    kind: super::scaffold::Kind,
    url: Option<&str>,
    json: bool,
) -> Result<ExitCode, Failure> {
    let (files, try_it) = super::scaffold::write(dir, name, kind, url)?;
    let mut out = out::stdout();
    if json {
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        print_json(&mut out, &json!({"files": files, "try": try_it}), false)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    for f in &files {
        text.push_str(&format!("wrote {}\n", f.display()));
    }
    text.push_str(&format!("try it: {try_it}\n"));
    write_out(&mut out, &text)?;
    Ok(ExitCode::SUCCESS)
}

fn summary(tool: &LoadedTool) -> Value {
    let mut v = json!({
        "name": tool.spec.name,
        "description": tool.spec.description,
        "permission": tool.spec.permission,
        "entry": tool.spec.entry.label(),
        "definition_only": tool.definition_only(),
        "category": tool.spec.category,
        "source": tool.origin.place(),
        "sandbox": tool.spec.sandbox.as_ref().map(|p| p.to_json()),
    });
    if let (Value::Object(out), Ok(Value::Object(shown))) =
        (&mut v, serde_json::to_value(&tool.spec.display))
    {
        out.extend(shown);
    }
    v
}

/// The sandbox in a word or three; `-` for a tool that starts no program.
fn sandbox_summary(tool: &LoadedTool) -> String {
    tool.spec
        .sandbox
        .as_ref()
        .map_or_else(|| "-".to_string(), |p| p.summary())
}

fn list(lib: &ToolLibrary, db: &Path, json: bool) -> Result<ExitCode, Failure> {
    let mut out = out::stdout();
    let checks = super::validate::last_checks(db);
    if json {
        let all: Vec<Value> = lib
            .tools()
            .map(|t| {
                let mut s = summary(t);
                if let Some(v) = checks.get(&t.spec.name) {
                    s["validation"] = json!(v);
                }
                s
            })
            .collect();
        print_json(&mut out, &all, false)?;
        return Ok(ExitCode::SUCCESS);
    }
    // The credentials column only where some tool has a check or a last validation.
    let shown = !checks.is_empty() || lib.tools().any(|t| t.checks_credentials());
    let rows: Vec<Vec<String>> = lib
        .tools()
        .map(|t| {
            let mut row = vec![
                t.spec.name.clone(),
                format!("{:?}", t.spec.permission).to_lowercase(),
                t.spec.entry.label(),
                sandbox_summary(t),
            ];
            if shown {
                row.push(super::validate::word(checks.get(&t.spec.name)));
            }
            row.push(first_sentence(&t.spec.description));
            row
        })
        .collect();
    let mut header = vec!["NAME", "PERMISSION", "RUNS AS", "SANDBOX"];
    if shown {
        header.push("CREDENTIALS");
    }
    header.push("DESCRIPTION");
    let text = table::render(&header, &rows);
    write_out(&mut out, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// The label, icon and help lines of `tools show` (English, else the first language).
fn shown_as(display: &toolgate_tool::display::Display) -> String {
    use toolgate_tool::display::{DEFAULT_LANGUAGE, pick};
    let mut text = String::new();
    if let Some(label) = display.label_in(DEFAULT_LANGUAGE) {
        text.push_str(&format!("  label:      {label}\n"));
    }
    match display.icon.as_deref() {
        Some(i) if i.starts_with("data:") => text.push_str("  icon:       (an image)\n"),
        Some(i) => text.push_str(&format!("  icon:       {i}\n")),
        None => {}
    }
    if let Some(help) = display
        .help
        .as_ref()
        .and_then(|h| pick(h, DEFAULT_LANGUAGE))
    {
        text.push_str(&format!("  help:       {}\n", first_sentence(help)));
    }
    text
}

fn first_sentence(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(70).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}

fn write_out(out: &mut impl Write, text: &str) -> Result<(), Failure> {
    out.write_all(text.as_bytes()).map_err(out::write_failure)
}

fn show(lib: &ToolLibrary, name: &str, json: bool) -> Result<ExitCode, Failure> {
    let tool = find_tool(lib, name)?;
    let mut out = out::stdout();
    if json {
        let mut v = summary(tool);
        v["parameters"] = tool.spec.parameters.clone();
        v["spec"] = serde_json::to_value(&tool.spec).unwrap_or(Value::Null);
        print_json(&mut out, &v, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!(
        "{}\n  {}\n  permission: {:?}\n  runs as:    {}\n  defined in: {}\n",
        tool.spec.name,
        tool.spec.description,
        tool.spec.permission,
        tool.spec.entry.label(),
        tool.origin.place()
    );
    if let Some(t) = tool.spec.timeout {
        text.push_str(&format!("  timeout:    {t} s\n"));
    }
    if let Some(policy) = &tool.spec.sandbox {
        text.push_str(&format!("  sandbox:    {}\n", policy.to_json()));
    }
    text.push_str(&shown_as(&tool.spec.display));
    text.push_str("  parameters:\n");
    let mut any = false;
    for (name, s) in tool.schema.properties() {
        any = true;
        let req = if tool.schema.is_required(name) {
            "required".to_string()
        } else {
            s.default_value()
                .map_or("optional".into(), |d| format!("default {d}"))
        };
        let desc = s
            .description()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        text.push_str(&format!("    {name} ({}, {req}){desc}\n", s.type_name()));
    }
    if !any {
        text.push_str("    (none)\n");
    }
    write_out(&mut out, &text)?;
    Ok(ExitCode::SUCCESS)
}

fn check(dir: PathBuf) -> Result<ExitCode, Failure> {
    // A check asks the MCP servers themselves, not the lists kept of them.
    toolgate::tool::mcp::list_live();
    // Loaded as a run loads it: a workflow calling a tool nobody has is a problem too.
    let lib = ToolLibrary::load(&dir, &toolgate::tool::sources::standard())
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    let mut out = out::stdout();
    let mut text = String::new();
    let mut tools: Vec<_> = lib
        .tools()
        .filter_map(|t| t.origin.file.as_ref().map(|f| (f, &t.spec.name)))
        .collect();
    tools.sort();
    for (file, name) in &tools {
        text.push_str(&format!("ok      {name} ({})\n", file.display()));
    }
    for e in lib.errors() {
        text.push_str(&format!("broken  {e}\n"));
    }
    text.push_str(&format!(
        "{} tool(s) loaded, {} problem(s) in {}\n",
        tools.len(),
        lib.errors().len(),
        dir.display()
    ));
    write_out(&mut out, &text)?;
    if lib.errors().is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(Failure::bad_input(format!(
            "{} tool file(s) have problems",
            lib.errors().len()
        )))
    }
}

fn call(
    lib: &ToolLibrary,
    name: &str,
    raw: &str,
    ws: Option<PathBuf>,
    conversation: Option<String>,
    db: &Path,
    json: bool,
) -> Result<ExitCode, Failure> {
    let tool = find_tool(lib, name)?.clone();
    let args = call_args(raw)?;
    // The secret values among the arguments: no output of this command shows them,
    // even when the tool echoes one (credentials the engine injects are masked by it).
    let mut secrets = Vec::new();
    tool.secret_values(&args, &mut secrets);
    let root = super::workspace_dir(ws)?.unwrap_or_else(|| PathBuf::from("."));
    let root = workspace::canonical_root(&root)
        .map_err(|e| Failure::bad_input(format!("workspace {}: {e}", root.display())))?;
    let new_conversation = conversation.is_none();
    let conversation =
        conversation.unwrap_or_else(|| format!("conv_{}", uuid::Uuid::new_v4().simple()));
    let store = open_store(db)?;
    let shown_db = store.path().display().to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::other(format!("cannot start the runtime: {e}")))?;
    // Lines the tool streams while it runs go to stderr (not with --json: one object).
    let (tx, printer) = spawn_printer(&runtime, name);
    let engine = Engine::new(
        EngineConfig {
            workspace: root,
            credentials: Some(
                toolgate::run::Runner::new(store.clone(), toolgate::tool::sources::standard())
                    .credentials(),
            ),
            cache: Some(std::sync::Arc::new(engine::StoreCache(store.clone()))),
            ..EngineConfig::default()
        },
        (!json).then_some(tx),
    );
    let call_id = format!("call_{}", uuid::Uuid::new_v4().simple());
    let prepared = prepare(
        engine::call(&call_id, name, args),
        Ok(tool),
        &conversation,
        CallerKind::User,
    );
    let outcome = runtime
        .block_on(async {
            let outcomes = engine.execute_batch(vec![prepared], &Cancel::new()).await;
            toolgate::run::commit_outcomes(&store, outcomes).await
        })
        .map_err(super::store_failure)?
        .pop()
        .ok_or_else(|| Failure::other("the call produced no outcome"))?;
    drop(engine);
    let _ = runtime.block_on(printer);
    if new_conversation && !json {
        say!("toolgate: recorded in conversation {conversation} ({shown_db})");
    }
    report(outcome, name, &call_id, &conversation, json, &secrets)
}

/// `--args`: a JSON object.
fn call_args(raw: &str) -> Result<Map<String, Value>, Failure> {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Failure::bad_input("--args must be a JSON object")),
        Err(e) => Err(Failure::bad_input(format!("--args is not valid JSON: {e}"))),
    }
}

/// Prints on stderr the lines a tool streams while it runs; the sender goes to the
/// engine, the task ends when it is dropped.
fn spawn_printer(
    runtime: &tokio::runtime::Runtime,
    name: &str,
) -> (
    tokio::sync::mpsc::UnboundedSender<toolgate::protocol::Event>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let shown = name.to_string();
    let printer = runtime.spawn(async move {
        while let Some(event) = rx.recv().await {
            if let toolgate::protocol::Event::ToolOutput { part, .. } = event {
                let one = toolgate::tool::ToolOutput {
                    parts: vec![part],
                    is_error: false,
                };
                for line in one.to_text().lines() {
                    say!("  {shown} │ {line}");
                }
            }
        }
    });
    (tx, printer)
}

/// Shows the call's outcome (one JSON object with `--json`, else its output) and its
/// exit code: 3 for a client tool, an error for a failed call.
fn report(
    outcome: toolgate::engine::CallOutcome,
    name: &str,
    call_id: &str,
    conversation: &str,
    json: bool,
    secrets: &[String],
) -> Result<ExitCode, Failure> {
    let mut out = out::stdout();
    let result = outcome.result.map(|o| mask_output(o, secrets));
    let hide = |text: String| mask_values(&text, secrets).into_owned();
    if json {
        let (output, error) = match &result {
            Ok(o) => (serde_json::to_value(o).unwrap_or(Value::Null), Value::Null),
            Err(e) => (
                Value::Null,
                json!({"kind": e.kind(), "message": hide(e.to_string())}),
            ),
        };
        let mut v = json!({
            "tool": name,
            "call_id": call_id,
            "conversation_id": conversation,
            "status": outcome.status,
            "arguments": outcome.record.arguments,
            "output": output,
            "error": error,
        });
        if let Some(cached) = outcome.record.cached {
            v["cached"] = json!(cached);
        }
        print_json(&mut out, &v, false)?;
    }
    match result {
        Ok(output) => {
            if !json {
                write_out(&mut out, &readable(&output))?;
            }
            if output.is_error {
                return Err(Failure::other(format!("'{name}' reported an error")));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ToolError::ClientSide(_)) => {
            say!(
                "toolgate: '{name}' is a client tool: toolgate never runs it; its arguments are valid"
            );
            Ok(super::exit::code(super::exit::PAUSED))
        }
        Err(e @ (ToolError::InvalidArguments { .. } | ToolError::NotFound { .. })) => {
            Err(Failure::bad_input(hide(e.to_string())))
        }
        Err(e) => Err(Failure::other(hide(format!("{name}: {e}")))),
    }
}

/// An output for a person: text as is, JSON indented.
fn readable(output: &ToolOutput) -> String {
    let mut text = String::new();
    for part in &output.parts {
        match part {
            Part::Json { json } => {
                text.push_str(&serde_json::to_string_pretty(json).unwrap_or_default())
            }
            other => text.push_str(
                &ToolOutput {
                    parts: vec![other.clone()],
                    is_error: false,
                }
                .to_text(),
            ),
        }
        text.push('\n');
    }
    text
}
