//! `toolgate prompt TOOL...`: the tool instructions an agent in xml mode gets for
//! those tools, or with `--openai` the `tools` array a native agent sends.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use toolgate::prompt::{Prompts, openai_tools};

use super::parse::print_json;
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
}

pub fn run(args: PromptArgs) -> Result<ExitCode, Failure> {
    let lib = load_tools(args.tools_dir.as_deref())?;
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
    let mut out = std::io::stdout().lock();
    if args.openai {
        print_json(&mut out, &openai_tools(&tools), true)?;
        return Ok(ExitCode::SUCCESS);
    }
    let prompts = Prompts::new().map_err(|e| Failure::other(e.to_string()))?;
    let text = prompts
        .tool_instructions(&tools)
        .map_err(|e| Failure::other(e.to_string()))?;
    use std::io::Write;
    out.write_all(text.as_bytes())
        .map_err(|e| Failure::other(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
