//! Tools: their specs, argument validation, the library and per-agent toolkits, and
//! the [`ToolSource`] trait through which tools come in. The sources themselves (the
//! built-ins, tool files with their command and HTTP runners, OpenAPI documents, Dify
//! providers, MCP servers) live in `sources/`, one folder each.

pub mod client;
pub mod credentials;
pub(crate) mod folder;
mod keywords;
mod library;
mod list_form;
pub mod net;
mod output;
pub mod process;
mod reload;
mod runnable;
mod schema;
pub mod source;
pub mod sources;
mod spec;
mod toolkit;
pub mod vars;
pub mod workspace;

pub use client::ClientTool;
pub use credentials::{Credential, Resolver};
pub use folder::{LoadError, LoadedTools, ToolDef, load_dir};
pub use library::{LoadedTool, ToolLibrary};
pub use output::{ArgError, Part, ToolError, ToolOutput};
pub use runnable::{RunContext, Tool, ToolContext};
pub use schema::{Schema, SchemaError};
pub use source::{Claim, Found, Origin, Sources, ToolSource};
pub use sources::tool_file::load_file;
// The sources' modules at the paths the crate's users know them by.
pub use sources::tool_file::http;
pub use sources::{builtin, dify, mcp, openapi};
pub use spec::{DEFAULT_TIMEOUT, Entry, Permission, SourceBinding, ToolSpec};
pub use toolkit::{Toolkit, ToolkitError};
