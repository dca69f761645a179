//! `ToolSpec`: what a tool is called, what it takes, who may run it and how.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whether a call may run at once or waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    #[default]
    Auto,
    Confirm,
    /// Refused without asking.
    Never,
}

/// How a tool runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// A handler compiled into toolgate.
    Builtin { handler: String },
    /// Definition only: the client runs it and submits the output.
    Client,
    /// An external program: JSON arguments on stdin, the result on stdout.
    Command {
        command: String,
        #[serde(default)]
        args: Vec<String>,
    },
    /// A declarative HTTP call.
    Http {
        url: String,
        #[serde(default = "default_method")]
        method: String,
    },
}

fn default_method() -> String {
    "GET".to_string()
}

/// One tool's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema object (`type: object`, `properties`, `required`).
    pub parameters: Value,
    pub permission: Permission,
    pub entry: Entry,
    pub category: Option<String>,
    /// Seconds.
    pub timeout: Option<f64>,
    pub tags: Vec<String>,
    pub version: Option<String>,
}

impl ToolSpec {
    /// Definition-only tools are never executed by the runtime.
    pub fn definition_only(&self) -> bool {
        matches!(self.entry, Entry::Client)
    }
}
