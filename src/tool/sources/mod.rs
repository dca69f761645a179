//! The registered tool sources, each in its own folder. `registered` is the one place
//! that names them: a new source is a folder here and one line there.

pub mod builtin;
pub mod dify;
pub mod mcp;
pub mod openapi;
pub mod tool_file;

use super::source::ToolSource;

/// Every source, in the order a file of the tools folder is offered to them: the first
/// that claims it has it, and one-tool files take whatever is left.
pub(crate) fn registered() -> Vec<Box<dyn ToolSource>> {
    vec![
        Box::new(builtin::Builtins),
        Box::new(mcp::McpServers),
        Box::new(openapi::OpenApiFiles),
        Box::new(dify::DifyFiles),
        Box::new(tool_file::ToolFiles),
    ]
}
