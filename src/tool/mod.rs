//! Tools: their specs and files, argument validation, the library and per-agent
//! toolkits, the ways a tool runs (built-in, external command, HTTP, client), the
//! sources that bring many tools from one file (OpenAPI documents, Dify providers, MCP
//! servers) and the built-in tools.

pub mod builtin;
mod command;
pub mod credentials;
pub mod dify;
pub(crate) mod file;
pub mod http;
mod keywords;
mod library;
mod list_form;
pub mod mcp;
pub mod net;
pub mod openapi;
mod output;
pub mod process;
mod reload;
mod runnable;
mod schema;
mod sources;
mod spec;
mod toolkit;
pub mod vars;
pub mod workspace;

pub use credentials::{Credential, Resolver};
pub use file::{LoadError, LoadedTools, ToolDef, load_dir, load_file};
pub use library::{LoadedTool, Source, ToolLibrary};
pub use output::{ArgError, Part, ToolError, ToolOutput};
pub use runnable::{RunContext, Tool, ToolContext};
pub use schema::{Schema, SchemaError};
pub use spec::{DEFAULT_TIMEOUT, Entry, Permission, ToolSpec};
pub use toolkit::{Toolkit, ToolkitError};
