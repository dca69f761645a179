//! `toolgate prompt TOOL...` or `toolgate prompt --agent FILE`: the tool instructions
//! (or an agent's whole system prompt) in xml mode, or with `--openai` the `tools`
//! array a native agent sends.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use toolgate::agent::{Agent, Mode};
use toolgate::prompt::{Prompts, openai_tools};
use toolgate::run::{request_tools, system_prompt};
use toolgate::tool::ToolLibrary;

use super::out::{self, print_json};
use super::{Failure, find_tool, load_tools};

#[derive(Args, Debug)]
pub struct PromptArgs {
    /// The tools to describe (all tools of the library when none is named).
    tools: Vec<String>,
    /// Folder of tool files [default: ./tools].
    #[arg(long = "tools", env = "TOOLGATE_TOOLS")]
    tools_dir: Option<PathBuf>,
    /// Print the OpenAI `tools` array (native mode) instead.
    #[arg(long)]
    openai: bool,
    /// Print this agent's system prompt in xml mode (its instructions, then its tools').
    #[arg(long, value_hint = clap::ValueHint::FilePath, conflicts_with = "tools")]
    agent: Option<PathBuf>,
}

pub fn run(args: PromptArgs) -> Result<ExitCode, Failure> {
    let lib = load_tools(args.tools_dir.as_deref())?;
    if let Some(file) = &args.agent {
        return agent_prompt(file, lib, args.openai);
    }
    let names = if args.tools.is_empty() {
        lib.names()
    } else {
        args.tools.clone()
    };
    let mut tools = Vec::new();
    for name in &names {
        let tool = find_tool(&lib, name)?;
        tools.push(&**tool);
    }
    let mut out = out::stdout();
    if args.openai {
        print_json(&mut out, &openai_tools(&tools), true)?;
        return Ok(ExitCode::SUCCESS);
    }
    let prompts = Prompts::new().map_err(|e| Failure::other(e.to_string()))?;
    let text = prompts
        .tool_instructions(&tools)
        .map_err(|e| Failure::other(e.to_string()))?;
    use std::io::Write;
    out.write_all(text.as_bytes()).map_err(out::write_failure)?;
    Ok(ExitCode::SUCCESS)
}

fn agent_prompt(file: &Path, lib: ToolLibrary, openai: bool) -> Result<ExitCode, Failure> {
    let mut agent = Agent::load(file).map_err(|e| Failure::bad_input(e.to_string()))?;
    let toolkit = agent
        .toolkit(&Arc::new(lib))
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    let mut out = out::stdout();
    if openai {
        agent.mode = Mode::Native;
        let tools = serde_json::Value::Array(request_tools(&agent, &toolkit));
        print_json(&mut out, &tools, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    agent.mode = Mode::Xml;
    let text = system_prompt(&agent, &toolkit).map_err(|e| Failure::other(e.to_string()))?;
    use std::io::Write;
    writeln!(out, "{text}").map_err(out::write_failure)?;
    Ok(ExitCode::SUCCESS)
}
