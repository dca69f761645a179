//! `shell`: a shell command in the workspace (confirm by default), with a timeout and
//! an output cap, in the tool's sandbox (see `toolgate_sandbox`).

use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::process::Command;

use async_trait::async_trait;

use super::{Handled, spec as builtin_spec, text_arg};
use toolgate_sandbox as sandbox;
use toolgate_tool::{Permission, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, process};

/// Bytes of stdout and of stderr kept.
const OUTPUT_CAP: usize = 64 * 1024;

pub fn spec() -> ToolSpec {
    let mut s = builtin_spec(
        "shell",
        "Run a shell command in the workspace and return its output.",
        Permission::Confirm,
        json!({"type": "object", "properties": {
            "command": {"type": "string", "minLength": 1},
            "timeout": {"type": "number", "minimum": 0.1, "maximum": 600, "default": 30, "description": "Seconds."}
        }, "required": ["command"], "additionalProperties": false}),
    );
    s.timeout = Some(600.0);
    s.sandbox = Some(toolgate_sandbox::SandboxPolicy::default());
    s
}

/// The tool: its spec holds its sandbox.
pub struct Shell {
    pub spec: ToolSpec,
}

#[async_trait]
impl Tool for Shell {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        shell(&self.spec, ctx, args).await
    }

    fn with_sandbox(&self, policy: sandbox::SandboxPolicy) -> Option<std::sync::Arc<dyn Tool>> {
        Some(std::sync::Arc::new(Shell {
            spec: self.spec.with_sandbox(policy),
        }))
    }
}

fn shell<'a>(spec: &'a ToolSpec, ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(text_arg(&args, "command"))
            .current_dir(&ctx.workspace);
        let who = format!("tool '{}'", spec.name);
        let launch = sandbox::Launch {
            who: &who,
            workspace: &ctx.workspace,
            // The command is the model's: nothing in it names the tool's own folder.
            program: None,
            env: &[],
        };
        let policy = spec.sandbox.clone().unwrap_or_default();
        let _confined = sandbox::confine(&mut cmd, &policy, &launch)?;
        let timeout = args.get("timeout").and_then(Value::as_f64).unwrap_or(30.0);
        let done = process::run(cmd, b"", Duration::from_secs_f64(timeout), OUTPUT_CAP).await?;
        let mut text = done.stdout.text();
        if done.stderr.total > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stderr]\n");
            text.push_str(&done.stderr.text());
        }
        Ok(match done.code {
            Some(0) => ToolOutput::text(text),
            Some(code) => ToolOutput::error(format!("exit status {code}\n{text}")),
            None => ToolOutput::error(format!("killed by a signal\n{text}")),
        })
    })
}
