//! Tool files, one tool each (`tools/*.yaml`, `*.yml`, `*.json`): the source that takes
//! every YAML or JSON file no other source claimed, and the ways such a tool runs, by
//! its `entry:` (a built-in handler, an external command, a declarative HTTP call, or
//! the client).

pub(crate) mod command;
pub mod http;
mod http_check;
mod read;
mod templates;
mod workflow;

use std::path::Path;
use std::sync::Arc;

pub(crate) use http_check::verdict_of;
pub use read::{file_schema, load_file};

use super::builtin;
use toolgate_tool::source::{Claim, Found, ToolSource};
use toolgate_tool::{Entry, Tool, ToolSpec};

/// The source's name in its tools' origin.
pub const NAME: &str = "file";

/// One-tool files: the last source asked.
pub struct ToolFiles;

impl ToolSource for ToolFiles {
    fn name(&self) -> &'static str {
        NAME
    }

    fn claims(&self, _path: &Path, _text: &str) -> Claim {
        Claim::Tools
    }

    fn load(&self, path: &Path, text: &str) -> Found {
        match read::load_text(path, text) {
            Ok(tool) => Found {
                tools: vec![tool],
                errors: Vec::new(),
            },
            Err(e) => Found {
                tools: Vec::new(),
                errors: vec![e],
            },
        }
    }
}

/// What runs a tool file's calls, by its entry; `None` for a client tool.
fn runner(spec: &ToolSpec) -> Result<Option<Arc<dyn Tool>>, String> {
    Ok(match &spec.entry {
        Entry::Client => None,
        Entry::Builtin { handler } => Some(
            builtin::handler(handler, spec.clone())
                .ok_or_else(|| format!("there is no built-in handler '{handler}'"))?,
        ),
        Entry::Command { .. } => Some(Arc::new(command::CommandTool::new(spec.clone()))),
        Entry::Http { .. } => Some(Arc::new(http::HttpTool::new(spec.clone()))),
        Entry::Workflow(_) => Some(Arc::new(workflow::WorkflowTool(spec.clone()))),
        _ => return Err("entry: this kind of tool does not come from a tool file".into()),
    })
}
