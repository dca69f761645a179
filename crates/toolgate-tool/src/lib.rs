//! Tools: their specs, argument validation, the library and per-agent toolkits, the
//! [`ToolSource`] trait through which tools come in, the gate ([`permission`]) with its
//! policy ([`policy`]), what a model is told about its tools ([`prompt`]) and the
//! sealing of secret values ([`secrets`]). The sources themselves (built-ins, tool
//! files, OpenAPI, Dify, MCP) are the `toolgate-sources` crate; a program chooses them.
#![recursion_limit = "256"]

pub mod cache;
pub mod client;
pub mod credentials;
pub mod custom;
pub mod display;
pub mod file_schema;
pub mod files;
pub mod folder;
mod keywords;
mod library;
pub mod list_form;
pub mod net;
pub mod oauth;
mod output;
pub mod permission;
pub mod policy;
pub mod process;
pub mod prompt;
mod reload;
pub mod retry;
mod runnable;
pub mod schema;
pub mod secrets;
pub mod source;
pub mod spec;
mod toolkit;
pub mod user_file;
pub mod validate;
pub mod vars;
pub mod workflow;
pub mod workspace;

pub use client::{ClientTool, ClientToolError};
pub use credentials::{Credential, CredentialError, Resolver};
pub use folder::{LoadError, LoadedTools, ToolDef, load_dir};
pub use library::{AddToolError, LoadedTool, ToolLibrary};
pub use output::{ArgError, Part, ToolError, ToolOutput};
pub use retry::{RetryOn, RetryPolicy};
pub use runnable::{RunContext, Tool, ToolContext};
pub use schema::{Schema, SchemaError};
pub use source::{Claim, Found, Origin, Sources, ToolSource};
pub use spec::{
    BindingError, DEFAULT_TIMEOUT, Entry, HttpCheck, Permission, SourceBinding, ToolSpec,
};
pub use toolkit::{ClientToolsError, Toolkit, ToolkitError};
pub use validate::{CheckError, Verdict};
