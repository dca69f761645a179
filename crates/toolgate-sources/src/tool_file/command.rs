//! The `command` entry type: an external program in any language. The arguments go
//! to its stdin as one JSON object; its stdout (JSON or text) is the result; a non-zero
//! exit is an error result carrying stderr. Timeout and output size are capped. Each
//! line it writes to stdout while it runs is streamed as a `tool.output` part. It runs
//! in the tool's sandbox (see `toolgate_sandbox`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::process::Command;

use super::http::expand_env;
use toolgate_sandbox as sandbox;
use toolgate_tool::{Entry, Part, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, process};

/// Output bytes kept per stream when a tool does not say.
pub const DEFAULT_MAX_OUTPUT: usize = 1024 * 1024;

pub struct CommandTool {
    spec: ToolSpec,
}

impl CommandTool {
    pub fn new(spec: ToolSpec) -> Self {
        Self { spec }
    }
}

#[async_trait]
impl Tool for CommandTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let Entry::Command {
            command,
            args: argv,
            env,
            max_output,
            stream,
        } = &self.spec.entry
        else {
            return Err(ToolError::Execution("not a command tool".into()));
        };
        let mut cmd = Command::new(command);
        cmd.args(argv).current_dir(&ctx.workspace);
        let mut declared = Vec::with_capacity(env.len() + 1);
        for (k, v) in env {
            declared.push((k.clone(), expand_env(v)?));
        }
        declared.push(("TOOLGATE_CALL_ID".to_string(), ctx.call_id.clone()));
        // For whom it runs: the run's tenant, user, run and conversation.
        for (k, v) in ctx.run.env() {
            declared.push((k.to_string(), v.to_string()));
        }
        let who = format!("tool '{}'", self.spec.name);
        let launch = sandbox::Launch {
            who: &who,
            workspace: &ctx.workspace,
            program: Some((command, argv)),
            env: &declared,
        };
        let policy = self.spec.sandbox.clone().unwrap_or_default();
        // Kept until the program has ended: its temporary folder goes with it.
        let _confined = sandbox::confine(&mut cmd, &policy, &launch)?;
        let input = serde_json::to_vec(&Value::Object(args))
            .map_err(|e| ToolError::Execution(format!("cannot encode the arguments: {e}")))?;
        // One line, one part: a part is never split, and the parts of calls running
        // side by side never interleave inside one.
        let on_line = |line: String| ctx.emit(Part::Text { text: line });
        let streaming = *stream && ctx.streams();
        let done = process::run_streaming(
            cmd,
            &input,
            self.spec.timeout_or_default(),
            max_output.unwrap_or(DEFAULT_MAX_OUTPUT),
            streaming.then_some(&on_line as process::OnLine<'_>),
        )
        .await?;
        Ok(output_of(
            &self.spec.name,
            done,
            declared_image(self.spec.output.as_ref()),
        ))
    }

    fn with_sandbox(&self, policy: sandbox::SandboxPolicy) -> Option<Arc<dyn Tool>> {
        Some(Arc::new(CommandTool::new(self.spec.with_sandbox(policy))))
    }
}

/// The image type a tool file declares its output to be (`output: {type: string,
/// contentMediaType: image/png}`).
fn declared_image(output: Option<&Value>) -> Option<&str> {
    output?
        .get("contentMediaType")?
        .as_str()
        .filter(|m| m.starts_with("image/"))
}

/// A finished program's output: stdout on success (JSON when it parses; an image part
/// when the tool declares an image output, or the bytes are a PNG, JPEG, GIF or WebP
/// image), stderr on failure.
pub fn output_of(name: &str, done: process::Finished, image: Option<&str>) -> ToolOutput {
    match done.code {
        Some(0)
            if !done.stdout.truncated()
                && (image.is_some()
                    || toolgate_protocol::image::sniff(&done.stdout.bytes).is_some()) =>
        {
            use base64::Engine;
            let mime = toolgate_protocol::image::sniff(&done.stdout.bytes)
                .or(image)
                .unwrap_or("image/png");
            ToolOutput {
                parts: vec![Part::Image {
                    mime: mime.to_string(),
                    url: None,
                    data: Some(
                        base64::engine::general_purpose::STANDARD.encode(&done.stdout.bytes),
                    ),
                }],
                is_error: false,
            }
        }
        Some(0) => {
            let text = String::from_utf8_lossy(&done.stdout.bytes);
            let json = (!done.stdout.truncated())
                .then(|| serde_json::from_str::<Value>(text.trim()).ok())
                .flatten();
            match json {
                Some(json) => ToolOutput::json(json),
                None => ToolOutput::text(done.stdout.text().trim_end().to_string()),
            }
        }
        code => {
            let status = match code {
                Some(c) => format!("'{name}' exited with status {c}"),
                None => format!("'{name}' was killed by a signal"),
            };
            let detail = if done.stderr.total > 0 {
                done.stderr.text()
            } else {
                done.stdout.text()
            };
            let mut out = ToolOutput::error(status);
            if !detail.trim().is_empty() {
                out.parts.push(Part::Text {
                    text: detail.trim_end().to_string(),
                });
            }
            out
        }
    }
}
