//! MCP servers as tool sources: servers declared in the tools folder (`mcp_server:`
//! files, a desktop client's `mcp.json`) bring their tools as `SERVER__TOOL`, from the
//! list kept of each declaration (`cache.rs`); a server starts at the first call of one
//! of its tools. A declaration with no kept list (new, or changed) is started once to
//! list its tools, and stopped. A server that requires a user's OAuth token is never
//! listed that way: its declared `tools:` stand until a user's connection lists them.

mod cache;
mod client;
pub mod config;
mod tool;
mod traced;

use std::path::Path;

pub use cache::{CACHE_DIR_ENV, list_live};
pub use client::stop_unused;
pub use config::{Connect, Declaration, declares_servers, declares_servers_in};
pub use tool::{McpTool, output_of, tool_name};

use toolgate_tool::folder::{LoadError, ToolDef};
use toolgate_tool::source::{Claim, Found, ToolSource};

/// The source's name in its tools' origin.
pub const NAME: &str = "mcp";

/// Files declaring MCP servers (`mcp_server:` files, a desktop client's `mcp.json`).
pub struct McpServers;

impl ToolSource for McpServers {
    fn name(&self) -> &'static str {
        NAME
    }

    fn release_unused(&self) -> Vec<String> {
        stop_unused()
    }

    fn claims(&self, path: &Path, text: &str) -> Claim {
        if declares_servers_in(path, text) {
            Claim::Tools
        } else {
            Claim::Not
        }
    }

    fn load(&self, path: &Path, _text: &str) -> Found {
        load(path)
    }

    fn joins_last(&self) -> bool {
        true
    }
}

/// Reads the declarations in `path` and their servers' tools: the lists kept, else
/// listed by starting the servers (together, each stopped after); one error per server
/// that could not be used (a server that did not start: its tools are absent).
fn load(path: &Path) -> Found {
    let mut out = Found::default();
    let found = config::read(path);
    let decls = found.servers;
    out.errors.extend(found.errors);
    let servers: Vec<_> = decls.iter().map(client::server).collect();
    let kept: Vec<Option<Vec<serde_json::Value>>> = decls.iter().map(cache::read).collect();
    // A server that requires a user's token is never listed here: its tools are the
    // list a user's connection kept, else the declared ones.
    let kept: Vec<_> = decls
        .iter()
        .zip(kept)
        .map(|(d, k)| match &d.oauth {
            Some(_) => Some(k.or_else(|| d.tools.clone()).unwrap_or_default()),
            None => k,
        })
        .collect();
    let unknown: Vec<_> = servers
        .iter()
        .zip(&kept)
        .filter(|(_, k)| k.is_none())
        .map(|(s, _)| std::sync::Arc::clone(s))
        .collect();
    let mut live = if unknown.is_empty() {
        Vec::new()
    } else {
        match client::block_on(async move {
            futures_util::future::join_all(unknown.iter().map(|s| s.list_once())).await
        }) {
            Ok(l) => l,
            Err(why) => {
                for d in &decls {
                    out.errors.push(fail(&d.path, &d.name, &why));
                }
                return out;
            }
        }
    }
    .into_iter();
    let listing: Vec<Result<Vec<serde_json::Value>, String>> = kept
        .into_iter()
        .map(|k| match k {
            Some(tools) => Ok(tools),
            None => live.next().unwrap_or_else(|| Err("was not listed".into())),
        })
        .collect();
    for ((decl, server), listed) in decls.iter().zip(&servers).zip(listing) {
        let listed = match listed {
            Ok(l) if l.is_empty() && decl.oauth.is_some() => {
                out.errors.push(fail(
                    &decl.path,
                    &decl.name,
                    "requires a user's OAuth token to list its tools: declare them under \
                     `tools:` (a name each is enough; the list a user's connection gets \
                     replaces them)",
                ));
                continue;
            }
            Ok(l) => l,
            Err(why) => {
                out.errors.push(fail(&decl.path, &decl.name, &why));
                continue;
            }
        };
        let mut names = Vec::new();
        for t in &listed {
            match tool::mcp_tool(decl, server, t) {
                Ok((tool, schema)) => {
                    names.push(t["name"].as_str().unwrap_or_default().to_string());
                    let spec = toolgate_tool::Tool::spec(&tool).clone();
                    let runner: std::sync::Arc<dyn toolgate_tool::Tool> = std::sync::Arc::new(tool);
                    let mut def = ToolDef::new(spec, schema, &decl.path, NAME, Some(runner));
                    def.policy.retry = decl.retry.clone();
                    def.policy.cache = decl.cache.clone().filter(|_| def.spec.read_only);
                    out.tools.push(def);
                }
                Err(why) => out.errors.push(fail(&decl.path, &decl.name, &why)),
            }
        }
        for stray in decl.permissions.keys().filter(|k| !names.contains(k)) {
            out.errors.push(fail(
                &decl.path,
                &decl.name,
                &format!(
                    "permissions names '{stray}', which the server does not have (it has: {})",
                    names.join(", ")
                ),
            ));
        }
    }
    out
}

fn fail(path: &Path, server: &str, why: &str) -> LoadError {
    LoadError {
        path: path.to_path_buf(),
        line: None,
        message: format!("MCP server '{server}': {why}"),
    }
}
