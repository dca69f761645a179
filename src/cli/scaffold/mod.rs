//! `toolgate tools new NAME --kind KIND`: a working, commented tool of each kind
//! (command, http, openapi, mcp, dify) written into the tools folder from the templates
//! beside this file, never over an existing file; it says how to try it.

use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::Failure;

/// What `tools new` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// A program run with the arguments as JSON on stdin (python3 inline).
    Command,
    /// One HTTP request per call.
    Http,
    /// An OpenAPI document whose operations become tools.
    Openapi,
    /// An MCP server on stdio (a python3 one beside it).
    Mcp,
    /// A Dify plugin folder: manifest, provider, one tool.
    Dify,
}

/// Where a template's text comes from, and where it goes under the tools folder.
struct Template {
    text: &'static str,
    /// `{{name}}` is the tool's name.
    path: &'static str,
}

const COMMAND: &[Template] = &[Template {
    text: include_str!("command.yaml"),
    path: "{{name}}.yaml",
}];
const HTTP: &[Template] = &[Template {
    text: include_str!("http.yaml"),
    path: "{{name}}.yaml",
}];
const OPENAPI: &[Template] = &[Template {
    text: include_str!("openapi.yaml"),
    path: "{{name}}.yaml",
}];
const MCP: &[Template] = &[
    Template {
        text: include_str!("mcp.yaml"),
        path: "{{name}}.yaml",
    },
    Template {
        text: include_str!("mcp_server.py"),
        path: "{{name}}/server.py",
    },
];
const DIFY: &[Template] = &[
    Template {
        text: include_str!("dify_manifest.yaml"),
        path: "{{name}}/manifest.yaml",
    },
    Template {
        text: include_str!("dify_provider.yaml"),
        path: "{{name}}/provider/{{name}}.yaml",
    },
    Template {
        text: include_str!("dify_provider.py"),
        path: "{{name}}/provider/{{name}}.py",
    },
    Template {
        text: include_str!("dify_tool.yaml"),
        path: "{{name}}/tools/echo.yaml",
    },
    Template {
        text: include_str!("dify_tool.py"),
        path: "{{name}}/tools/echo.py",
    },
    Template {
        text: include_str!("dify_icon.svg"),
        path: "{{name}}/_assets/icon.svg",
    },
];

/// The URL an http or OpenAPI tool calls when `--url` is not given (an echo service).
pub const DEFAULT_URL: &str = "https://httpbin.org";

/// Writes the tool; returns the files written and the command that tries it.
pub fn write(
    dir: &Path,
    name: &str,
    kind: Kind,
    url: Option<&str>,
) -> Result<(Vec<PathBuf>, String), Failure> {
    check_name(name)?;
    let templates = match kind {
        Kind::Command => COMMAND,
        Kind::Http => HTTP,
        Kind::Openapi => OPENAPI,
        Kind::Mcp => MCP,
        Kind::Dify => DIFY,
    };
    let values = Values::new(name, kind, url)?;
    let planned: Vec<(PathBuf, String)> = templates
        .iter()
        .map(|t| (dir.join(values.fill(t.path)), values.fill(t.text)))
        .collect();
    if let Some((taken, _)) = planned.iter().find(|(p, _)| p.exists()) {
        return Err(Failure::bad_input(format!(
            "{} is already there: nothing was written (remove it or choose another name)",
            taken.display()
        )));
    }
    if matches!(kind, Kind::Dify | Kind::Mcp) && dir.join(name).exists() {
        return Err(Failure::bad_input(format!(
            "{} is already there: nothing was written",
            dir.join(name).display()
        )));
    }
    for (path, text) in &planned {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Failure::other(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(path, text)
            .map_err(|e| Failure::other(format!("{}: {e}", path.display())))?;
    }
    let try_it = try_command(name, kind);
    Ok((planned.into_iter().map(|(p, _)| p).collect(), try_it))
}

/// The `tools call` that tries a new tool, as its file's comment says.
fn try_command(name: &str, kind: Kind) -> String {
    match kind {
        Kind::Command => format!("toolgate tools call {name} --args '{{\"text\": \"hello\"}}'"),
        Kind::Http => format!("toolgate tools call {name} --args '{{\"query\": \"hello\"}}'"),
        Kind::Openapi => format!("toolgate tools call {name}__echo --args '{{\"q\": \"hello\"}}'"),
        Kind::Mcp | Kind::Dify => {
            format!("toolgate tools call {name}__echo --args '{{\"text\": \"hello\"}}'")
        }
    }
}

/// A tool name: a letter, then letters, digits and `_` (it prefixes the tools of a
/// source, `NAME__TOOL`, and names files).
fn check_name(name: &str) -> Result<(), Failure> {
    let mut chars = name.chars();
    let first = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let ok = first
        && name.len() <= 48
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.contains("__");
    if ok {
        Ok(())
    } else {
        Err(Failure::bad_input(format!(
            "'{name}' is not a tool name: a letter, then letters, digits or single '_' \
             (at most 48)"
        )))
    }
}

/// What the templates' `{{...}}` become.
struct Values {
    name: String,
    label: String,
    upper: String,
    url: String,
    allow_hosts: String,
}

impl Values {
    fn new(name: &str, kind: Kind, url: Option<&str>) -> Result<Values, Failure> {
        let base = url.unwrap_or(DEFAULT_URL).trim_end_matches('/');
        let parsed = url::Url::parse(base)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| {
                Failure::bad_input(format!("--url {base}: not an http(s) URL with a host"))
            })?;
        let allow_hosts = match (kind, local_host(&parsed)) {
            (Kind::Http, Some(host)) => format!(
                "  allow_hosts: [\"{host}\"]   # a local service: the network rule refuses \
                 loopback and private addresses otherwise\n"
            ),
            (Kind::Openapi, Some(host)) => format!("allow_hosts: [\"{host}\"]\n"),
            _ => String::new(),
        };
        let label = name
            .split('_')
            .filter(|w| !w.is_empty())
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_uppercase().chain(c).collect::<String>())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(" ");
        let url = match kind {
            Kind::Http => format!("{base}/get"),
            _ => base.to_string(),
        };
        Ok(Values {
            name: name.to_string(),
            label,
            upper: name.to_ascii_uppercase(),
            url,
            allow_hosts,
        })
    }

    fn fill(&self, text: &str) -> String {
        text.replace("{{name}}", &self.name)
            .replace("{{label}}", &self.label)
            .replace("{{upper}}", &self.upper)
            .replace("{{url}}", &self.url)
            .replace("{{allow_hosts}}", &self.allow_hosts)
    }
}

/// `host[:port]` when the URL points at this machine or a private network.
fn local_host(url: &url::Url) -> Option<String> {
    let host = url.host_str()?;
    let local = match url.host()? {
        url::Host::Domain(d) => d == "localhost",
        url::Host::Ipv4(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    local.then(|| match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}
