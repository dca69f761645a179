//! An MCP server's tool as a toolgate tool: its spec (`SERVER__TOOL`, its input schema,
//! the permission from the file or its annotations) and its results mapped to output
//! parts (text, structured content, images, resources; `isError` to an error output).

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use serde_json::{Map, Value};

use super::client::{Bearer, Server, extra_env, on_runtime, tenant_of};
use super::config::Declaration;
use toolgate_tool::files::FileSink;
use toolgate_tool::{
    Part, Permission, Schema, SourceBinding, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// One tool of a running server.
pub struct McpTool {
    spec: ToolSpec,
    server: Arc<Server>,
    /// The tool's name on its server.
    remote: String,
    /// For a server that requires a user's token: its provider.
    oauth: Option<toolgate_tool::oauth::OAuthProvider>,
}

impl McpTool {
    /// One call on the server, as the user `bearer` names when given.
    async fn call_as(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
        bearer: Option<Bearer>,
    ) -> Result<ToolOutput, ToolError> {
        let server = Arc::clone(&self.server);
        let remote = self.remote.clone();
        let sink = toolgate_tool::files::FileSink::of(ctx);
        let ctx = ctx.clone();
        // Read here: the call runs on the MCP runtime, outside this call's span.
        let traceparent = toolgate_telemetry::propagate::current();
        let result =
            on_runtime(async move { server.call(&remote, args, ctx, traceparent, bearer).await })
                .await??;
        let result = serde_json::to_value(&result).unwrap_or(Value::Null);
        output_saving(&result, Some(&sink))
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let Some(provider) = &self.oauth else {
            return self.call_as(ctx, args, None).await;
        };
        let user = ctx.run.user.clone().unwrap_or_default();
        toolgate_tool::oauth::as_user(ctx, &self.spec.name, provider, |token| {
            let bearer = Bearer {
                user: user.clone(),
                token,
            };
            self.call_as(ctx, args.clone(), Some(bearer))
        })
        .await
    }

    fn user_oauth(&self) -> Option<toolgate_tool::oauth::OAuthProvider> {
        self.oauth.clone()
    }

    fn checks_credentials(&self) -> bool {
        // A server that requires a user's token has no credentials of its own to check.
        self.oauth.is_none()
    }

    /// Initialize and list tools on a process of its own, started with `credentials` in
    /// its environment: a server that refuses them (exits, fails initialize or the
    /// listing) is invalid, with why.
    async fn validate(
        &self,
        ctx: &ToolContext,
        credentials: Map<String, Value>,
    ) -> Option<Result<toolgate_tool::Verdict, ToolError>> {
        let server = Arc::clone(&self.server);
        let tenant = tenant_of(ctx);
        let extra: Vec<(String, String)> = credentials
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect();
        let checked = on_runtime(async move { server.check(&tenant, &extra).await }).await;
        Some(checked.map(|answer| match answer {
            Ok(_) => toolgate_tool::Verdict::Valid,
            Err(why) => toolgate_tool::Verdict::Invalid {
                reason: format!("the MCP server {why}"),
            },
        }))
    }

    /// The server process of the call's tenant, started if it is not running (within its start timeout, not the
    /// call's).
    fn ready(
        &self,
        ctx: &ToolContext,
    ) -> Option<futures_util::future::BoxFuture<'_, Result<(), ToolError>>> {
        // A user's connection starts in the call, where a refused token is refreshed.
        if self.oauth.is_some() {
            return None;
        }
        let server = Arc::clone(&self.server);
        let (tenant, extra) = (tenant_of(ctx), extra_env(ctx));
        Some(Box::pin(async move {
            on_runtime(async move { server.start_if_stopped(&tenant, &extra).await }).await?
        }))
    }

    /// The tool on a server of its own, started in `policy`'s sandbox.
    fn with_sandbox(&self, policy: toolgate_sandbox::SandboxPolicy) -> Option<Arc<dyn Tool>> {
        let server = self.server.with_sandbox(policy.clone())?;
        Some(Arc::new(McpTool {
            spec: self.spec.with_sandbox(policy),
            server,
            remote: self.remote.clone(),
            oauth: self.oauth.clone(),
        }))
    }
}

/// `SERVER__TOOL`, with any character an OpenAI function name cannot hold as `_`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{server}__{clean}")
}

/// The toolgate tool for one entry of the server's `tools/list`, with its compiled schema.
pub fn mcp_tool(
    decl: &Declaration,
    server: &Arc<Server>,
    listed: &Value,
) -> Result<(McpTool, Schema), String> {
    let remote = listed
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a listed tool has no name")?
        .to_string();
    let mut parameters = listed
        .get("inputSchema")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object"}));
    if let Some(obj) = parameters.as_object_mut() {
        obj.entry("type").or_insert_with(|| "object".into());
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let schema = Schema::compile_full(&parameters)
        .map_err(|e| format!("tool '{remote}': its input schema does not compile: {e}"))?;
    let hint = |key: &str| {
        listed
            .get("annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    let read_only = hint("readOnlyHint") == Some(true);
    let from_hints = if read_only {
        Permission::Auto
    } else {
        Permission::Confirm
    };
    let permission = decl
        .permissions
        .get(&remote)
        .copied()
        .or(decl.permission)
        .unwrap_or(from_hints);
    let description = listed
        .get("description")
        .and_then(Value::as_str)
        .or_else(|| listed.get("title").and_then(Value::as_str))
        .unwrap_or_default()
        .to_string();
    let spec = ToolSpec {
        name: tool_name(&decl.name, &remote),
        description,
        parameters,
        permission,
        entry: SourceBinding::entry(
            "mcp",
            format!("mcp:{}", decl.name),
            &serde_json::json!({"server": decl.name, "tool": remote}),
        ),
        category: Some("mcp".into()),
        timeout: decl.timeout,
        tags: Vec::new(),
        version: None,
        read_only,
        output: None,
        credentials: decl.credentials.clone(),
        is_final: false,
        hidden: false,
        sandbox: decl.sandbox.clone(),
        display: display_of(listed),
    };
    Ok((
        McpTool {
            spec,
            server: Arc::clone(server),
            remote,
            oauth: decl.oauth.clone(),
        },
        schema,
    ))
}

/// A `tools/call` result (as JSON) as toolgate output. Structured content is one JSON
/// part; a text block that only repeats it (servers send both) is left out. Audio and
/// binary resources are described, not kept (see [`output_saving`]).
pub fn output_of(result: &Value) -> ToolOutput {
    let mut out = parts_of(result);
    for part in &mut out.parts {
        if let Blob::Kept { mime, data, .. } = part {
            *part = Blob::Ready(Part::Text {
                text: format!("[{mime}, {} bytes of base64: not kept]", data.len()),
            });
        }
    }
    out.finish()
}

/// [`output_of`], with audio and binary resources (`blob`) saved as files in the run's
/// workspace by `sink` (their kinds kept: an image resource is an image part).
pub fn output_saving(result: &Value, sink: Option<&FileSink>) -> Result<ToolOutput, ToolError> {
    let Some(sink) = sink else {
        return Ok(output_of(result));
    };
    let mut out = parts_of(result);
    for part in &mut out.parts {
        if let Blob::Kept { mime, data, name } = &*part {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| {
                    ToolError::Execution(format!(
                        "the server sent {mime} data that is not base64: {e}"
                    ))
                })?;
            *part = Blob::Ready(sink.part(&bytes, mime, name.as_deref())?);
        }
    }
    Ok(out.finish())
}

/// A part, or binary data still to be kept or described.
enum Blob {
    Ready(Part),
    Kept {
        mime: String,
        data: String,
        name: Option<String>,
    },
}

/// Parts on their way to an output.
struct Pending {
    parts: Vec<Blob>,
    is_error: bool,
}

impl Pending {
    fn finish(self) -> ToolOutput {
        ToolOutput {
            parts: self
                .parts
                .into_iter()
                .filter_map(|b| match b {
                    Blob::Ready(p) => Some(p),
                    Blob::Kept { .. } => None,
                })
                .collect(),
            is_error: self.is_error,
        }
    }
}

/// The blocks of a result in order, binary ones not yet kept.
fn parts_of(result: &Value) -> Pending {
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    let mut parts = Vec::new();
    if let Some(json) = structured {
        parts.push(Blob::Ready(Part::Json { json: json.clone() }));
    }
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(part) = block_part(block, structured) {
            parts.push(part);
        }
    }
    Pending {
        parts,
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
    }
}

/// One content block (`None`: a text block that repeats the structured content).
fn block_part(block: &Value, structured: Option<&Value>) -> Option<Blob> {
    let text = |k: &str| block.get(k).and_then(Value::as_str).map(str::to_string);
    let part = match block.get("type").and_then(Value::as_str) {
        Some("text") => {
            let t = text("text").unwrap_or_default();
            let repeats = structured.is_some_and(|s| {
                serde_json::from_str::<Value>(&t).is_ok_and(|parsed| &parsed == s)
            });
            if repeats {
                return None;
            }
            Part::Text { text: t }
        }
        Some("image") => Part::Image {
            mime: text("mimeType").unwrap_or_else(|| "image/png".into()),
            url: None,
            data: text("data"),
        },
        Some("audio") => {
            return Some(Blob::Kept {
                mime: text("mimeType").unwrap_or_else(|| "audio/wav".into()),
                data: text("data").unwrap_or_default(),
                name: None,
            });
        }
        Some("resource_link") => Part::Link {
            url: text("uri").unwrap_or_default(),
            title: text("title").or_else(|| text("name")),
        },
        Some("resource") => return Some(resource_part(block)),
        _ => Part::Json {
            json: block.clone(),
        },
    };
    Some(Blob::Ready(part))
}

/// An embedded resource: its text, its binary data to keep, or a link to it.
fn resource_part(block: &Value) -> Blob {
    let res = block.get("resource").cloned().unwrap_or(Value::Null);
    let field = |k: &str| res.get(k).and_then(Value::as_str).map(str::to_string);
    let uri = field("uri").unwrap_or_default();
    if let Some(body) = field("text") {
        return Blob::Ready(Part::Text {
            text: format!("[resource {uri}]\n{body}"),
        });
    }
    match field("blob") {
        Some(data) => Blob::Kept {
            mime: field("mimeType").unwrap_or_else(|| "application/octet-stream".into()),
            data,
            name: uri.rsplit('/').next().map(str::to_string),
        },
        None => Blob::Ready(Part::Link {
            url: uri,
            title: field("mimeType"),
        }),
    }
}

/// The label and icon a server lists: `title` (else `annotations.title`), and the first
/// of `icons` given inline as a `data:image/...` URI (a URL to fetch is left out: the
/// inbox loads nothing from another host).
fn display_of(listed: &Value) -> toolgate_tool::display::Display {
    let title = listed
        .get("title")
        .or_else(|| listed.get("annotations").and_then(|a| a.get("title")))
        .and_then(|t| toolgate_tool::display::localized(t).ok().flatten());
    let icon = listed
        .get("icons")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| i.get("src").and_then(Value::as_str))
        .find(|src| toolgate_tool::display::inline_image(src))
        .map(String::from);
    toolgate_tool::display::Display {
        label: title,
        icon,
        help: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_function_names() {
        assert_eq!(
            tool_name("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(tool_name("fs", "read.file/v2"), "fs__read_file_v2");
    }

    #[test]
    fn blobs_and_audio_are_saved_as_files_of_their_kind() {
        let dir = tempfile::tempdir().unwrap();
        let sink = FileSink::new(dir.path(), "run_0c4e");
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let result = json!({"content": [
            {"type": "resource", "resource": {"uri": "mem://docs/report.pdf", "mimeType": "application/pdf", "blob": b64(b"%PDF-1.7 \xff")}},
            {"type": "resource", "resource": {"uri": "mem://notes/a", "mimeType": "text/plain", "blob": b64(b"just text")}},
            {"type": "audio", "mimeType": "audio/wav", "data": b64(b"RIFF....WAVE")},
        ]});
        let out = output_saving(&result, Some(&sink)).unwrap();
        let Part::File {
            path, name, mime, ..
        } = &out.parts[0]
        else {
            panic!("{:?}", out.parts)
        };
        assert_eq!(name.as_deref(), Some("report.pdf"));
        assert_eq!(mime.as_deref(), Some("application/pdf"));
        assert_eq!(
            std::fs::read(dir.path().join(path)).unwrap(),
            b"%PDF-1.7 \xff"
        );
        assert!(matches!(&out.parts[1], Part::Text { text } if text == "just text"));
        assert!(matches!(&out.parts[2], Part::File { mime: Some(m), .. } if m == "audio/wav"));
        // Without a run to save in, they are described.
        assert!(output_of(&result).to_text().contains("application/pdf, "));
    }

    #[test]
    fn results_become_parts() {
        let out = output_of(&json!({
            "content": [
                {"type": "text", "text": "{\"a\":1}"},
                {"type": "text", "text": "note"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"},
                {"type": "resource", "resource": {"uri": "mem://r", "text": "body"}}
            ],
            "structuredContent": {"a": 1},
            "isError": false
        }));
        assert!(!out.is_error);
        assert_eq!(
            out.parts[0],
            Part::Json {
                json: json!({"a": 1})
            }
        );
        assert_eq!(
            out.parts[1],
            Part::Text {
                text: "note".into()
            }
        );
        assert!(matches!(&out.parts[2], Part::Image { mime, .. } if mime == "image/png"));
        assert!(matches!(&out.parts[3], Part::Link { url, .. } if url == "file:///x"));
        assert_eq!(
            out.parts[4],
            Part::Text {
                text: "[resource mem://r]\nbody".into()
            }
        );
        let failed =
            output_of(&json!({"content": [{"type": "text", "text": "bad"}], "isError": true}));
        assert!(failed.is_error);
    }
}
