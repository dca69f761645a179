//! MCP servers as tool sources: servers declared in the tools folder (`mcp_server:`
//! files, a desktop client's `mcp.json`) are started, their tools join the library as
//! `SERVER__TOOL`, and calls go to the running server.

mod client;
pub mod config;
mod tool;
mod traced;

use std::path::{Path, PathBuf};

pub use client::stop_unused;
pub use config::{Connect, Declaration, declares_servers, declares_servers_in};
pub use tool::{McpTool, output_of, tool_name};

use crate::tool::{LoadError, Schema};

/// The tools of the servers declared in `files`, and one error per file or server
/// that could not be used (a server that did not start: its tools are absent).
pub(crate) struct Loaded {
    pub tools: Vec<(McpTool, Schema, Declaration)>,
    pub errors: Vec<LoadError>,
}

/// Reads the declarations in `files`, starts their servers (at once, each once per
/// process) and lists their tools.
pub(crate) fn load(files: &[PathBuf]) -> Loaded {
    let mut out = Loaded {
        tools: Vec::new(),
        errors: Vec::new(),
    };
    let mut decls = Vec::new();
    for path in files {
        let found = config::read(path);
        decls.extend(found.servers);
        out.errors.extend(found.errors);
    }
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
                    out.tools.push((tool, schema, decl.clone()));
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

/// For `tools check`: the tools of the servers declared in `files` (name and file) and
/// the problems, each naming its file.
pub fn check(files: &[PathBuf]) -> (Vec<(String, PathBuf)>, Vec<LoadError>) {
    let found = load(files);
    let tools = found
        .tools
        .iter()
        .map(|(t, _, d)| (crate::tool::Tool::spec(t).name.clone(), d.path.clone()))
        .collect();
    (tools, found.errors)
}

fn fail(path: &Path, server: &str, why: &str) -> LoadError {
    LoadError {
        path: path.to_path_buf(),
        line: None,
        message: format!("MCP server '{server}': {why}"),
    }
}
