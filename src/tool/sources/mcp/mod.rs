//! MCP servers as tool sources: servers declared in the tools folder (`mcp_server:`
//! files, a desktop client's `mcp.json`) are started, their tools join the library as
//! `SERVER__TOOL`, and calls go to the running server.

mod client;
pub mod config;
mod tool;
mod traced;

use std::path::Path;

pub use client::stop_unused;
pub use config::{Connect, Declaration, declares_servers, declares_servers_in};
pub use tool::{McpTool, output_of, tool_name};

use crate::tool::folder::{LoadError, ToolDef};
use crate::tool::source::{Claim, Found, ToolSource};

/// The source's name in its tools' origin.
pub const NAME: &str = "mcp";

/// Files declaring MCP servers (`mcp_server:` files, a desktop client's `mcp.json`).
pub struct McpServers;

impl ToolSource for McpServers {
    fn name(&self) -> &'static str {
        NAME
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

/// Reads the declarations in `path`, starts their servers (at once, each once per
/// process) and lists their tools; one error per server that could not be used (a
/// server that did not start: its tools are absent).
fn load(path: &Path) -> Found {
    let mut out = Found::default();
    let found = config::read(path);
    let decls = found.servers;
    out.errors.extend(found.errors);
    let servers: Vec<_> = decls.iter().map(client::server).collect();
    let listing = {
        let servers = servers.clone();
        client::block_on(async move {
            futures_util::future::join_all(servers.iter().map(|s| s.tools())).await
        })
    };
    let listing = match listing {
        Ok(l) => l,
        Err(why) => {
            for d in &decls {
                out.errors.push(fail(&d.path, &d.name, &why));
            }
            return out;
        }
    };
    for ((decl, server), listed) in decls.iter().zip(&servers).zip(listing) {
        let listed = match listed {
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
                    let spec = crate::tool::Tool::spec(&tool).clone();
                    let runner: std::sync::Arc<dyn crate::tool::Tool> = std::sync::Arc::new(tool);
                    out.tools
                        .push(ToolDef::new(spec, schema, &decl.path, NAME, Some(runner)));
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
