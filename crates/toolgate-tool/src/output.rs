//! What a tool returns (`ToolOutput`: ordered parts and an error flag) and how a call
//! fails (`ToolError`, whose `kind` names go into the records).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use toolgate_protocol::{ErrorKind, Part};

/// A tool's result: parts in order, and whether the tool reports an error (the model
/// still sees it: a failed command's stderr is useful to it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub parts: Vec<Part>,
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// The images with data among the parts, in order.
    pub fn images(&self) -> Vec<toolgate_protocol::ImagePart> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Image {
                    mime,
                    data: Some(data),
                    ..
                } => Some(toolgate_protocol::ImagePart {
                    mime: mime.clone(),
                    data: data.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    pub fn text(text: impl Into<String>) -> Self {
        Self {
            parts: vec![Part::Text { text: text.into() }],
            is_error: false,
        }
    }

    pub fn json(json: Value) -> Self {
        Self {
            parts: vec![Part::Json { json }],
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            parts: vec![Part::Text { text: text.into() }],
            is_error: true,
        }
    }

    pub fn with(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// The output as text for a model: text as is, JSON compact, the rest described.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if !out.is_empty() {
                out.push('\n');
            }
            match part {
                Part::Text { text } => out.push_str(text),
                Part::Json { json } => out.push_str(&json.to_string()),
                Part::Image {
                    mime,
                    data: Some(data),
                    ..
                } => out.push_str(&toolgate_protocol::image::reference(mime, data)),
                Part::Image { mime, url, .. } => out.push_str(&format!(
                    "[image {mime}{}]",
                    url.as_deref().map(|u| format!(" {u}")).unwrap_or_default()
                )),
                Part::Link { url, title } => match title {
                    Some(t) => out.push_str(&format!("[{t}]({url})")),
                    None => out.push_str(url),
                },
                Part::File {
                    path,
                    mime,
                    id: Some(_),
                    name,
                    bytes,
                } => out.push_str(&format!(
                    "[file {path}: {}, {}, {} bytes; saved in the workspace, read it with read_file]",
                    name.as_deref().unwrap_or(path),
                    mime.as_deref().unwrap_or("application/octet-stream"),
                    bytes.unwrap_or(0)
                )),
                Part::File { path, .. } => out.push_str(&format!("[file {path}]")),
            }
        }
        out
    }
}

/// One problem with a call's arguments, worded for the model to fix its call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgError {
    /// The parameter, with a path inside it: `attendees[2]`, `when.hour`; empty for the call.
    pub param: String,
    pub message: String,
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.param.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "'{}': {}", self.param, self.message)
        }
    }
}

/// Why a call did not produce an output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("there is no tool named '{name}'; the tools you have are: {}", available.join(", "))]
    NotFound {
        name: String,
        available: Vec<String>,
    },
    #[error("invalid arguments for '{tool}': {}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    InvalidArguments { tool: String, errors: Vec<ArgError> },
    #[error("{0}")]
    Execution(String),
    #[error("timed out after {}", humantime(*.0))]
    Timeout(Duration),
    #[error("the call was cancelled")]
    Cancelled,
    #[error("the tool failed unexpectedly: {0}")]
    Panicked(String),
    /// An MCP server could not be reached, or stopped during the call (the next call
    /// starts it again).
    #[error("{0}")]
    ServerUnavailable(String),
    #[error("'{0}' is run by the client, not by toolgate")]
    ClientSide(String),
    /// The concurrency limits refused the call (a full queue, or the `reject` strategy).
    #[error("{0}")]
    Rejected(String),
    /// A credential the tool file names has no value (or cannot be read).
    #[error("{0}")]
    MissingCredential(String),
    /// The program could not be started in its sandbox (this kernel cannot enforce
    /// it, or setting it up failed).
    #[error(transparent)]
    Sandbox(#[from] toolgate_sandbox::SandboxError),
    /// An HTTP tool was about to connect where the network rule forbids it.
    #[error(
        "refused to connect to {host}: it resolves to {address}, a {range} address, which HTTP tools may not reach by default. To allow it for local development, add \"{host}\" to allow_hosts in the tool's http entry, or to the TOOLGATE_HTTP_ALLOW environment variable (comma-separated)"
    )]
    BlockedAddress {
        /// The URL's host (and port, when the URL gives one).
        host: String,
        /// The address that was refused.
        address: String,
        /// Its range: loopback, private, link-local, ...
        range: String,
    },
}

impl ToolError {
    /// The error kind recorded with the call.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ToolError::NotFound { .. } => ErrorKind::ToolNotFound,
            ToolError::InvalidArguments { .. } => ErrorKind::ValidationError,
            ToolError::Execution(_) | ToolError::Panicked(_) => ErrorKind::ExecutionError,
            ToolError::Timeout(_) => ErrorKind::Timeout,
            ToolError::Cancelled => ErrorKind::Cancelled,
            ToolError::ClientSide(_) => ErrorKind::Client,
            ToolError::ServerUnavailable(_) => ErrorKind::ServerUnavailable,
            ToolError::BlockedAddress { .. } => ErrorKind::BlockedAddress,
            ToolError::MissingCredential(_) => ErrorKind::MissingCredential,
            ToolError::Rejected(_) => ErrorKind::Rejected,
            ToolError::Sandbox(_) => ErrorKind::Sandbox,
        }
    }
}

fn humantime(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
