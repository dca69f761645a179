//! `read_file`, `list_dir` (auto) and `write_file` (confirm), confined to the
//! workspace: every path is opened beneath the root (see [`toolgate_tool::workspace`]),
//! so `..`, absolute paths and symlinks out are refused even while the workspace
//! changes under a call; files with more than one hard link are neither read nor written.

use std::io::{Read, Write};
use std::path::Path;

use cap_std::fs::OpenOptions;
use serde_json::{Map, Value, json};

use super::{Handled, spec as builtin_spec, text_arg};
use toolgate_tool::workspace::{Workspace, shown, single_link};
use toolgate_tool::{Part, Permission, ToolContext, ToolError, ToolOutput, ToolSpec};

pub fn read_spec() -> ToolSpec {
    ToolSpec {
        credentials: Default::default(),
        is_final: false,
        hidden: false,
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
        is_final: false,
        hidden: false,
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

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::Execution(format!("the file operation stopped: {e}")))?
}

/// Refuses a folder or a special file (a pipe, a socket, a device) for `tool`.
fn regular_file(is_dir: bool, is_file: bool, requested: &str, tool: &str) -> Result<(), ToolError> {
    if is_dir {
        let hint = if tool == "read_file" {
            "; list_dir lists it"
        } else {
            ""
        };
        return Err(ToolError::Execution(format!(
            "'{}' is a folder{hint}",
            shown(requested)
        )));
    }
    if !is_file {
        return Err(ToolError::Execution(format!(
            "'{}' is not a regular file (a pipe, socket or device); {tool} only works on files",
            shown(requested)
        )));
    }
    Ok(())
}

/// Looks before opening, so that a pipe is refused instead of blocking the open. The
/// open file is checked again: the name may change in between.
fn look_before_open(
    ws: &Workspace,
    rel: &Path,
    requested: &str,
    tool: &str,
) -> Result<(), ToolError> {
    match ws.dir().metadata(rel) {
        Ok(meta) => regular_file(meta.is_dir(), meta.is_file(), requested, tool),
        // Absent (to be created), or an escape the open will name.
        Err(_) => Ok(()),
    }
}

/// The handler of the tool.
pub fn read_file<'a>(ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let requested = text_arg(&args, "path").to_string();
        let max = args
            .get("max_bytes")
            .and_then(Value::as_u64)
            .unwrap_or(1 << 20);
        let root = ctx.workspace.clone();
        blocking(move || read_beneath(&root, &requested, max)).await
    })
}

/// A file's text, or (PNG, JPEG, GIF, WebP) the image it holds, for a vision model.
fn read_beneath(root: &Path, requested: &str, max: u64) -> Result<ToolOutput, ToolError> {
    let ws = Workspace::open(root)?;
    let rel = ws.relative(requested)?;
    look_before_open(&ws, &rel, requested, "read_file")?;
    let file = ws
        .dir()
        .open(&rel)
        .map_err(|e| Workspace::io_error("read", requested, e))?
        .into_std();
    ws.check_opened(&file, requested)?;
    let meta = file
        .metadata()
        .map_err(|e| Workspace::io_error("read", requested, e))?;
    regular_file(meta.is_dir(), meta.is_file(), requested, "read_file")?;
    single_link(&meta, requested, "read_file")?;
    let mut bytes = Vec::new();
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| Workspace::io_error("read", requested, e))?;
    let total = meta.len().max(bytes.len() as u64);
    if let Some(mime) = toolgate_protocol::image::sniff(&bytes) {
        if total > max {
            return Err(ToolError::Execution(format!(
                "'{}' is an image of {total} bytes, over max_bytes ({max})",
                shown(requested)
            )));
        }
        use base64::Engine;
        return Ok(ToolOutput {
            parts: vec![toolgate_tool::Part::Image {
                mime: mime.to_string(),
                url: None,
                data: Some(base64::engine::general_purpose::STANDARD.encode(&bytes)),
            }],
            is_error: false,
        });
    }
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(ToolError::Execution(format!(
            "'{}' is a binary file ({total} bytes); read_file reads text",
            shown(requested)
        )));
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if total > max {
        text.push_str(&format!("\n[file truncated: {max} of {total} bytes shown]"));
    }
    Ok(ToolOutput::text(text))
}

/// The handler of the tool.
pub fn list_dir<'a>(ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let requested = match text_arg(&args, "path") {
            "" => ".",
            p => p,
        }
        .to_string();
        let root = ctx.workspace.clone();
        let entries = blocking(move || list_beneath(&root, &requested)).await?;
        Ok(ToolOutput::json(Value::Array(entries)))
    })
}

fn list_beneath(root: &Path, requested: &str) -> Result<Vec<Value>, ToolError> {
    let ws = Workspace::open(root)?;
    let rel = ws.relative(requested)?;
    let fail = |e| Workspace::io_error("list", requested, e);
    let dir = ws.dir().open_dir(&rel).map_err(fail)?;
    ws.check_opened(&dir, requested)?;
    let mut entries = Vec::new();
    for entry in dir.entries().map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => "link",
            Ok(t) if t.is_dir() => "dir",
            _ => "file",
        };
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        entries.push(json!({
            "name": entry.file_name().to_string_lossy(),
            "type": kind,
            "size": size,
        }));
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Ok(entries)
}

/// The handler of the tool.
pub fn write_file<'a>(ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let requested = text_arg(&args, "path").to_string();
        let content = text_arg(&args, "content").to_string();
        let append = args.get("append").and_then(Value::as_bool).unwrap_or(false);
        let root = ctx.workspace.clone();
        let (path, len) = (requested.clone(), content.len());
        blocking(move || write_beneath(&root, &path, &content, append)).await?;
        let verb = if append { "appended" } else { "wrote" };
        Ok(
            ToolOutput::text(format!("{verb} {len} bytes to {requested}")).with(Part::File {
                path: requested,
                mime: None,
                id: None,
                name: None,
                bytes: None,
            }),
        )
    })
}

fn write_beneath(
    root: &Path,
    requested: &str,
    content: &str,
    append: bool,
) -> Result<(), ToolError> {
    let ws = Workspace::open(root)?;
    let rel = ws.relative(requested)?;
    if rel == Path::new(".") {
        return Err(ToolError::Execution(format!(
            "'{}' is a folder",
            shown(requested)
        )));
    }
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty())
        && let Err(e) = ws.dir().create_dir_all(parent)
    {
        // A link out in the way reads as "exists"; opening it names the escape.
        let e = ws.dir().open_dir(parent).err().unwrap_or(e);
        return Err(Workspace::io_error("create the folder for", requested, e));
    }
    // The folder it goes in, checked before anything is made there.
    let parent = rel.parent().filter(|p| !p.as_os_str().is_empty());
    let folder = ws
        .dir()
        .open_dir(parent.unwrap_or(Path::new(".")))
        .map_err(|e| Workspace::io_error("open the folder of", requested, e))?;
    ws.check_opened(&folder, requested)?;
    look_before_open(&ws, &rel, requested, "write_file")?;
    // Opened without truncating: nothing changes before the open file is checked.
    let mut options = OpenOptions::new();
    options.write(true).create(true).append(append);
    let mut file = ws
        .dir()
        .open_with(&rel, &options)
        .map_err(|e| Workspace::io_error("open", requested, e))?
        .into_std();
    ws.check_opened(&file, requested)?;
    let meta = file
        .metadata()
        .map_err(|e| Workspace::io_error("open", requested, e))?;
    regular_file(meta.is_dir(), meta.is_file(), requested, "write_file")?;
    single_link(&meta, requested, "write_file")?;
    if !append {
        file.set_len(0)
            .map_err(|e| Workspace::io_error("write", requested, e))?;
    }
    file.write_all(content.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| Workspace::io_error("write", requested, e))
}
