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
use toolgate_tool::{Entry, Part, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Verdict};

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
    /// The provider's Python file (`extra.python.source`), whose `ToolProvider` class
    /// checks the provider's credentials (`_validate_credentials`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_source: Option<PathBuf>,
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
    /// The adapter run on the provider's class, to check credentials.
    checker: Option<CommandTool>,
}

/// The adapter as a command: `python -c ADAPTER SOURCE ROOT [EXTRA...]`.
fn adapter(
    spec: &ToolSpec,
    python: &str,
    source: &std::path::Path,
    root: &std::path::Path,
    extra: &[&str],
) -> CommandTool {
    let mut inner = spec.clone();
    let mut args = vec![
        "-c".into(),
        ADAPTER.into(),
        source.display().to_string(),
        root.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    inner.entry = Entry::Command {
        command: python.to_string(),
        args,
        env: Default::default(),
        max_output: None,
        // The adapter's stdout is its protocol (the tool's messages as JSON), not
        // progress lines for a person.
        stream: false,
    };
    CommandTool::new(inner)
}

impl DifyTool {
    pub fn new(spec: ToolSpec) -> Self {
        let binding: Option<Binding> = match &spec.entry {
            Entry::Source(b) if b.source == "dify" => b.decode().ok(),
            _ => None,
        };
        let checker = binding.as_ref().and_then(|b| {
            let source = b.provider_source.as_deref()?;
            Some(adapter(&spec, &b.python, source, &b.root, &["--validate"]))
        });
        let bound = binding.map(|b| {
            let command = adapter(&spec, &b.python, &b.source, &b.root, &[]);
            (b, command)
        });
        Self {
            spec,
            bound,
            checker,
        }
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

    fn checks_credentials(&self) -> bool {
        self.checker.is_some()
    }

    fn credentials_checked(&self) -> Option<Vec<String>> {
        self.bound
            .as_ref()
            .map(|(b, _)| b.provider_credentials.clone())
    }

    async fn validate(
        &self,
        ctx: &ToolContext,
        credentials: Map<String, Value>,
    ) -> Option<Result<Verdict, ToolError>> {
        let checker = self.checker.as_ref()?;
        let (b, _) = self.bound.as_ref()?;
        // The provider's own credentials (a tool's form parameters are not its to check).
        let credentials: Map<String, Value> = credentials
            .into_iter()
            .filter(|(k, _)| b.provider_credentials.contains(k))
            .collect();
        let mut request = Map::new();
        request.insert("credentials".into(), Value::Object(credentials));
        Some(checker.call(ctx, request).await.and_then(verdict_of))
    }

    fn with_sandbox(&self, policy: toolgate_sandbox::SandboxPolicy) -> Option<Arc<dyn Tool>> {
        Some(Arc::new(DifyTool::new(self.spec.with_sandbox(policy))))
    }
}

/// The adapter's answer to `--validate` (`{"kind": "valid"}` or `{"kind": "invalid",
/// "reason"}`) as a verdict; a failed adapter run is the check's error.
fn verdict_of(out: ToolOutput) -> Result<Verdict, ToolError> {
    let text: String = out
        .parts
        .iter()
        .map(|p| match p {
            Part::Json { json } => json.to_string(),
            Part::Text { text } => text.clone(),
            _ => String::new(),
        })
        .collect();
    if out.is_error {
        return Err(ToolError::Execution(text.trim().to_string()));
    }
    let answer: Value = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l.trim()).ok())
        .ok_or_else(|| {
            ToolError::Execution(format!("the adapter gave no verdict: {}", text.trim()))
        })?;
    match answer["kind"].as_str() {
        Some("valid") => Ok(Verdict::Valid),
        Some("invalid") => Ok(Verdict::Invalid {
            reason: answer["reason"].as_str().unwrap_or("refused").to_string(),
        }),
        _ => Err(ToolError::Execution(format!(
            "the adapter gave no verdict: {answer}"
        ))),
    }
}
