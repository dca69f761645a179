//! `ToolSpec`: what a tool is called, what it takes, who may run it and how.

use std::collections::BTreeMap;

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Entry {
    /// A handler compiled into toolgate.
    Builtin {
        /// The built-in's name: `calculator`, `echo`, `read_file`, `write_file`, `shell`, ...
        handler: String,
    },
    /// Definition only: the client runs it and submits the output.
    Client,
    /// An external program: JSON arguments on stdin, the result on stdout (JSON or
    /// text). A non-zero exit is an error result carrying stderr.
    Command {
        /// The program (a path, or a name looked up on `PATH`).
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Extra environment; values may use `${VAR}` from toolgate's environment.
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Bytes of stdout and of stderr kept (default 1 MiB).
        #[serde(default)]
        max_output: Option<usize>,
        /// Each line the program writes to stdout while it runs is streamed as a
        /// `tool.output` event (default); `false` for a program whose stdout is only
        /// its result (a long JSON document, say). The result is the same either way.
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        stream: bool,
    },
    /// A declarative HTTP call. `{param}` in `url`, `query` and `body` values is the
    /// argument; `${VAR}` in `headers` (and `url`) is an environment variable.
    Http {
        /// The URL; `{param}` is the argument, `${VAR}` an environment variable.
        url: String,
        /// The HTTP method (default GET).
        #[serde(default = "default_method")]
        method: String,
        /// Query parameter -> template; a pair whose parameters are absent is left out.
        #[serde(default)]
        query: BTreeMap<String, String>,
        /// Header -> value; `${VAR}` is an environment variable.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// `json`: the arguments not used in the URL or query, as a JSON object; or a
        /// map of field -> template.
        #[serde(default)]
        body: Option<Value>,
        /// Bytes of the response body kept (default 1 MiB).
        #[serde(default)]
        max_response: Option<usize>,
        /// Hosts, addresses or networks this tool may reach although the network rule
        /// refuses them (loopback, private, link-local, ...): for local development.
        /// `localhost`, `127.0.0.1:8080`, `[::1]`, `10.0.0.0/8`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allow_hosts: Vec<String>,
        /// The OAuth provider whose per-user token the call carries as a bearer token
        /// (the run pauses for the user's consent when there is none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        oauth: Option<Box<crate::oauth::OAuthProvider>>,
        /// Times a call is tried again after a 429, a 5xx or a failed connection.
        #[serde(default, skip_serializing_if = "is_zero")]
        retries: u32,
        /// Seconds before the first retry, doubled for each next one (default 0.5); a
        /// `Retry-After` from the server wins.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backoff: Option<f64>,
        /// Retry POST and PATCH too (by default only idempotent methods are retried:
        /// a failed POST may still have taken effect).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        retry_non_idempotent: bool,
        /// How the tool's credentials are checked without doing its work
        /// (`toolgate tools validate`): a request that answers below 400 when they work.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        validate: Option<Box<HttpCheck>>,
    },
    /// Calls other tools in order, each through the gate, its arguments templates over
    /// the workflow's input and earlier steps' saved results (`{{ input.city }}`); the
    /// run plays it as a child run under the call. See the how-to "Workflows".
    Workflow(crate::workflow::Workflow),
    /// A tool some source brings (an MCP server's tool, an OpenAPI operation, a Dify
    /// provider's tool; never written in a tool file): the source's name as its `type`
    /// and the source's own binding beside it, as `tools show --json` shows it.
    #[serde(untagged)]
    #[schemars(skip)]
    Source(SourceBinding),
}

/// An http tool's credential check: a request whose `{credential}` placeholders are
/// the tool's credentials and `${VAR}` environment variables. A status below 400 means
/// the credentials work; any other is the upstream's refusal, its body the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpCheck {
    /// The URL (default: the tool's own, which then must need no parameter but its
    /// credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The HTTP method (default GET).
    #[serde(default = "default_method")]
    pub method: String,
    /// Query parameter -> template.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, String>,
    /// Header -> template (default: the tool's own headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
}

/// How a source runs one of its tools: the source's name, a short label, and its
/// binding as JSON (the source's runner reads it back as its own type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceBinding {
    /// The source: `mcp`, `openapi`, `dify`, ...
    #[serde(rename = "type")]
    pub source: String,
    /// How it runs, in a word and its main setting (`mcp:time`, `openapi:GET getPet`).
    #[serde(skip)]
    pub label: String,
    /// The source's binding, field by field.
    #[serde(flatten)]
    pub binding: serde_json::Map<String, Value>,
}

impl SourceBinding {
    /// The entry of a tool source `source` brings, bound by `binding` (it must serialize
    /// as a JSON object).
    pub fn entry(source: &str, label: String, binding: &impl Serialize) -> Entry {
        let binding = match serde_json::to_value(binding) {
            Ok(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        Entry::Source(SourceBinding {
            source: source.to_string(),
            label,
            binding,
        })
    }

    /// The binding read back as the source's own type.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, BindingError> {
        serde_json::from_value(Value::Object(self.binding.clone())).map_err(|error| BindingError {
            source_name: self.source.clone(),
            error: error.to_string(),
        })
    }
}

/// A source binding that cannot be read back as its source's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {source_name} binding cannot be read: {error}")]
pub struct BindingError {
    /// The source (`mcp`, `openapi`, ...).
    pub source_name: String,
    pub error: String,
}

impl From<BindingError> for String {
    fn from(e: BindingError) -> String {
        e.to_string()
    }
}

impl Entry {
    /// The types a tool file may write.
    pub const FILE_TYPES: [&str; 5] = ["builtin", "client", "command", "http", "workflow"];

    /// Its `type`: `builtin`, `client`, `command`, `http`, or the source that brings it
    /// (`mcp`, `openapi`, `dify`, ...).
    pub fn kind(&self) -> &str {
        match self {
            Entry::Builtin { .. } => "builtin",
            Entry::Client => "client",
            Entry::Command { .. } => "command",
            Entry::Http { .. } => "http",
            Entry::Workflow(_) => "workflow",
            Entry::Source(b) => &b.source,
        }
    }

    /// How a tool runs, in a word and its main setting (`builtin:echo`, `command:./x`,
    /// `http:GET`, `mcp:time`, `openapi:GET getPet`, `dify:provider`, `client`).
    pub fn label(&self) -> String {
        match self {
            Entry::Builtin { handler } => format!("builtin:{handler}"),
            Entry::Client => "client".into(),
            Entry::Command { command, .. } => format!("command:{command}"),
            Entry::Http { method, .. } => format!("http:{method}"),
            Entry::Workflow(w) => format!("workflow:{} steps", w.steps.len()),
            Entry::Source(b) => b.label.clone(),
        }
    }
}

fn default_method() -> String {
    "GET".to_string()
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
    /// The tool changes nothing (it reads or computes): a call cut short by a crash may
    /// simply run again, so the loop does not fence it with a durable "executing" mark.
    #[serde(default)]
    pub read_only: bool,
    /// The declared shape of the tool's output (a JSON Schema), from a tool file's
    /// `output:`. A call whose output does not match it fails with an execution error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Arguments the model never sees nor fills, injected when the call runs: by name,
    /// where each value comes from.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub credentials: std::collections::BTreeMap<String, super::Credential>,
    /// `final: true` in a tool file: a successful output of this tool is the run's
    /// answer, and the run ends without asking the model again.
    #[serde(default, rename = "final", skip_serializing_if = "std::ops::Not::not")]
    pub is_final: bool,
    /// The call is recorded and its result goes to the model, but it is left out of
    /// event streams (`--json`, SSE) and the command line's output.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The sandbox its programs start in: `Some` for tools that start programs
    /// (command, `shell`, Dify, stdio MCP servers), `None` for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<toolgate_sandbox::SandboxPolicy>,
    /// How people see it (label, icon, help); the model never does.
    #[serde(default, skip_serializing_if = "crate::display::Display::is_empty")]
    pub display: crate::display::Display,
}

/// The time a call may take when its tool does not say.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl ToolSpec {
    /// A tool the program runs itself (`entry: builtin`, handler `name`) with the given
    /// permission, no category, tag or output schema, and the default timeout; set any
    /// other field on the result.
    pub fn new(name: &str, description: &str, permission: Permission, parameters: Value) -> Self {
        ToolSpec {
            name: name.to_string(),
            description: description.to_string(),
            parameters,
            permission,
            entry: Entry::Builtin {
                handler: name.to_string(),
            },
            category: None,
            timeout: None,
            tags: Vec::new(),
            version: None,
            read_only: false,
            output: None,
            credentials: Default::default(),
            is_final: false,
            hidden: false,
            sandbox: None,
            display: Default::default(),
        }
    }

    /// The tool's timeout, or [`DEFAULT_TIMEOUT`].
    pub fn timeout_or_default(&self) -> std::time::Duration {
        self.timeout
            .map(std::time::Duration::from_secs_f64)
            .unwrap_or(DEFAULT_TIMEOUT)
    }

    /// This spec with its programs in `policy`'s sandbox.
    pub fn with_sandbox(&self, policy: toolgate_sandbox::SandboxPolicy) -> ToolSpec {
        ToolSpec {
            sandbox: Some(policy),
            ..self.clone()
        }
    }

    /// Definition-only tools are never executed by the runtime.
    pub fn definition_only(&self) -> bool {
        matches!(self.entry, Entry::Client)
    }
}
