//! MCP servers' tool lists kept between processes, so that loading a library starts no
//! server: one file per declaration, named by a hash of it (its server's name, how it is
//! reached, its file), in the user's cache folder (`$XDG_CACHE_HOME/toolgate/mcp-tools`,
//! else `~/.cache/toolgate/mcp-tools`; `TOOLGATE_CACHE_DIR` replaces the folder). Not
//! in the tools folder: that is the user's (often in git, sometimes read-only, and
//! watched for changes), and a lost list only costs one start of the server. A changed
//! declaration has another hash, so it is listed again; a server's
//! `notifications/tools/list_changed` writes its list again.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use sha2::Digest;

use super::config::Declaration;

/// Set by `tools check`: list every server live, whatever is kept.
static LIVE: AtomicBool = AtomicBool::new(false);

/// From now on in this process, tool lists come from the servers themselves (started
/// for the listing and stopped after), and are kept again.
pub fn list_live() {
    LIVE.store(true, Ordering::Relaxed);
}

/// The folder of the kept lists, if there is a place for it.
/// The folder of toolgate's caches (the MCP tool lists under `mcp-tools/`).
pub const CACHE_DIR_ENV: &str = "TOOLGATE_CACHE_DIR";

fn dir() -> Option<PathBuf> {
    let set = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = set(CACHE_DIR_ENV) {
        return Some(d.join("mcp-tools"));
    }
    let base = set("XDG_CACHE_HOME").or_else(|| set("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("toolgate").join("mcp-tools"))
}

/// The file holding `decl`'s tool list.
pub fn file_of(decl: &Declaration) -> Option<PathBuf> {
    let path = std::path::absolute(&decl.path).unwrap_or_else(|_| decl.path.clone());
    let key = format!("{:?}", (&decl.name, &decl.connect, &path));
    let hash = sha2::Sha256::digest(key.as_bytes());
    let hex: String = hash.iter().take(16).map(|b| format!("{b:02x}")).collect();
    Some(dir()?.join(format!("{}-{hex}.json", decl.name)))
}

/// `decl`'s kept tool list (`tools/list`, as JSON), unless there is none or the process
/// lists live.
pub fn read(decl: &Declaration) -> Option<Vec<Value>> {
    if LIVE.load(Ordering::Relaxed) {
        return None;
    }
    let text = std::fs::read_to_string(file_of(decl)?).ok()?;
    let kept: Value = serde_json::from_str(&text).ok()?;
    kept.get("tools")?.as_array().cloned()
}

/// Keeps `tools` as the list of the declaration whose file is `file` (written whole
/// and renamed into place, so that a reader never sees half of it). A failure is only
/// logged: the next load lists the server again.
pub fn write(file: &std::path::Path, server: &str, tools: &[Value]) {
    let body = json!({"server": server, "tools": tools});
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            let tmp = file.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, body.to_string())?;
            std::fs::rename(&tmp, file)
        });
    if let Err(e) = written {
        tracing::debug!(file = %file.display(), "cannot keep the MCP server's tool list: {e}");
    }
}
