//! The standard tool sources, each in its own folder. `standard` is the one place that
//! names them: a new source is a folder here and one line there (or, in a program that
//! embeds toolgate, a [`ToolSource`] of its own added to the list).

pub mod builtin;
pub mod dify;
pub mod mcp;
pub mod openapi;
pub mod tool_file;
pub mod web;

use std::sync::Arc;

use toolgate_tool::{Sources, ToolSource};

pub use tool_file::{file_schema as tool_file_schema, http, load_file};

/// Every standard source, in the order a file of the tools folder is offered to them:
/// the first that claims it has it, and one-tool files take whatever is left.
pub fn standard() -> Sources {
    let all: Vec<Arc<dyn ToolSource>> = vec![
        Arc::new(builtin::Builtins),
        Arc::new(mcp::McpServers),
        Arc::new(openapi::OpenApiFiles),
        Arc::new(dify::DifyFiles),
        Arc::new(tool_file::ToolFiles),
    ];
    Sources::new(all)
}
