//! `read_file`, `list_dir` (auto) and `write_file` (confirm), confined to the
//! workspace: a path that escapes it through `..` or a symlink is refused.

use serde_json::{Map, Value, json};

use super::{Handled, spec as builtin_spec, text_arg};
use crate::tool::workspace::resolve;
use crate::tool::{Part, Permission, ToolContext, ToolError, ToolOutput, ToolSpec};

pub fn read_spec() -> ToolSpec {
    ToolSpec {
        credentials: Default::default(),
        read_only: true,
        ..builtin_spec(
            "read_file",
            "Read a text file in the workspace.",
            Permission::Auto,
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "A path relative to the workspace."},
                "max_bytes": {"type": "integer", "minimum": 1, "maximum": 10485760, "default": 1048576}
            }, "required": ["path"], "additionalProperties": false}),
        )
    }
}

pub fn list_spec() -> ToolSpec {
    ToolSpec {
        credentials: Default::default(),
        read_only: true,
        ..builtin_spec(
            "list_dir",
            "List a folder in the workspace.",
            Permission::Auto,
            json!({"type": "object", "properties": {
                "path": {"type": "string", "default": ".", "description": "A folder relative to the workspace."}
            }, "additionalProperties": false}),
        )
    }
}

pub fn write_spec() -> ToolSpec {
    builtin_spec(
        "write_file",
        "Write a text file in the workspace (folders are created as needed).",
        Permission::Confirm,
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "A path relative to the workspace."},
            "content": {"type": "string"},
            "append": {"type": "boolean", "default": false}
        }, "required": ["path", "content"], "additionalProperties": false}),
    )
}

fn io_error(what: &str, path: &str, e: std::io::Error) -> ToolError {
    ToolError::Execution(format!("cannot {what} '{path}': {e}"))
}

/// The handler of the tool.
pub fn read_file<'a>(ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let requested = text_arg(&args, "path");
        let path = resolve(&ctx.workspace, requested)?;
        let max = args
            .get("max_bytes")
            .and_then(Value::as_u64)
            .unwrap_or(1 << 20) as usize;
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|e| io_error("read", requested, e))?;
        if bytes.iter().take(8192).any(|&b| b == 0) {
            return Err(ToolError::Execution(format!(
                "'{requested}' is a binary file ({} bytes); read_file reads text",
                bytes.len()
            )));
        }
        let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned();
        if bytes.len() > max {
            text.push_str(&format!(
                "\n[file truncated: {max} of {} bytes shown]",
                bytes.len()
            ));
        }
        Ok(ToolOutput::text(text))
    })
}

/// The handler of the tool.
pub fn list_dir<'a>(ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let requested = match text_arg(&args, "path") {
            "" => ".",
            p => p,
        };
        let path = resolve(&ctx.workspace, requested)?;
        let mut dir = tokio::fs::read_dir(&path)
            .await
            .map_err(|e| io_error("list", requested, e))?;
        let mut entries = Vec::new();
        while let Some(entry) = dir
            .next_entry()
            .await
            .map_err(|e| io_error("list", requested, e))?
        {
            let meta = entry.metadata().await.ok();
            let kind = match entry.file_type().await {
                Ok(t) if t.is_symlink() => "link",
                Ok(t) if t.is_dir() => "dir",
                _ => "file",
            };
            entries.push(json!({
                "name": entry.file_name().to_string_lossy(),
                "type": kind,
                "size": meta.map(|m| m.len()).unwrap_or(0),
            }));
        }
        entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Ok(ToolOutput::json(Value::Array(entries)))
    })
}

/// The handler of the tool.
pub fn write_file<'a>(ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        use tokio::io::AsyncWriteExt;
        let requested = text_arg(&args, "path");
        let content = text_arg(&args, "content");
        let append = args.get("append").and_then(Value::as_bool).unwrap_or(false);
        let path = resolve(&ctx.workspace, requested)?;
        if path == ctx.workspace || path.is_dir() {
            return Err(ToolError::Execution(format!("'{requested}' is a folder")));
        }
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| io_error("create the folder for", requested, e))?;
        }
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&path)
            .await
            .map_err(|e| io_error("open", requested, e))?;
        file.write_all(content.as_bytes())
            .await
            .map_err(|e| io_error("write", requested, e))?;
        file.flush()
            .await
            .map_err(|e| io_error("write", requested, e))?;
        let verb = if append { "appended" } else { "wrote" };
        Ok(
            ToolOutput::text(format!("{verb} {} bytes to {requested}", content.len())).with(
                Part::File {
                    path: requested.to_string(),
                    mime: None,
                },
            ),
        )
    })
}
