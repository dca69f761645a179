//! Running a Dify tool: its Python class through toolgate's adapter (`adapter.py`,
//! built into the binary and given to python with `-c`), as a command tool. The
//! adapter gets `{"tool_parameters", "credentials"}` on stdin and writes the messages
//! the tool yields to stdout, one per line.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::tool_file::command::CommandTool;
use toolgate_tool::{Entry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The adapter's source.
pub const ADAPTER: &str = include_str!("adapter.py");

/// How one Dify tool runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// The provider's `identity.name`.
    pub provider: String,
    /// The tool's `identity.name`.
    pub tool: String,
    /// The Python file holding the tool's class.
    pub source: PathBuf,
    /// The plugin's folder, put first on Python's path (for the tool's own imports).
    pub root: PathBuf,
    /// The program that runs it (`python3`, or `TOOLGATE_PYTHON` when set at load).
    pub python: String,
    /// Which credentials are the provider's (the others are form parameters).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_credentials: Vec<String>,
    /// Form parameters set by no configuration: their defaults.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub form_defaults: Map<String, Value>,
}

/// A Dify tool, run as a command tool by the adapter.
pub struct DifyTool {
    spec: ToolSpec,
    /// The provider's tool, read back from the spec's binding, and the adapter that
    /// runs it.
    bound: Option<(Binding, CommandTool)>,
}

impl DifyTool {
    pub fn new(spec: ToolSpec) -> Self {
        let binding: Option<Binding> = match &spec.entry {
            Entry::Source(b) if b.source == "dify" => b.decode().ok(),
            _ => None,
        };
        let bound = match binding {
            Some(b) => {
                let mut inner = spec.clone();
                inner.entry = Entry::Command {
                    command: b.python.clone(),
                    args: vec![
                        "-c".into(),
                        ADAPTER.into(),
                        b.source.display().to_string(),
                        b.root.display().to_string(),
                    ],
                    env: Default::default(),
                    max_output: None,
                    // The adapter's stdout is its protocol (the tool's messages as JSON),
                    // not progress lines for a person.
                    stream: false,
                };
                let command = CommandTool::new(inner);
                Some((b, command))
            }
            None => None,
        };
        Self { spec, bound }
    }
}

#[async_trait]
impl Tool for DifyTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let Some((b, command)) = &self.bound else {
            return Err(ToolError::Execution("not a Dify tool".into()));
        };
        let mut parameters = b.form_defaults.clone();
        let mut credentials = Map::new();
        for (k, v) in args {
            if b.provider_credentials.contains(&k) {
                credentials.insert(k, v);
            } else {
                parameters.insert(k, v);
            }
        }
        let request = json!({"tool_parameters": parameters, "credentials": credentials});
        let Value::Object(request) = request else {
            return Err(ToolError::Execution("the request is not an object".into()));
        };
        let out = command.call(ctx, request).await?;
        super::messages::parts_of(out, &toolgate_tool::files::FileSink::of(ctx))
    }

    fn with_sandbox(&self, policy: toolgate_sandbox::SandboxPolicy) -> Option<Arc<dyn Tool>> {
        Some(Arc::new(DifyTool::new(self.spec.with_sandbox(policy))))
    }
}
