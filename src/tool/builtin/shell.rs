//! `shell`: a shell command in the workspace (confirm by default), with a timeout and
//! an output cap.

use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::process::Command;

use super::{Handled, spec as builtin_spec, text_arg};
use crate::tool::process;
use crate::tool::{Permission, ToolContext, ToolOutput, ToolSpec};

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
    s
}

/// The handler of the tool.
pub fn shell<'a>(ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(text_arg(&args, "command"))
            .current_dir(&ctx.workspace);
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
