//! MCP server declarations in the tools folder: a YAML or JSON file holding
//! `mcp_server:` (one server, toolgate's form), and the `{"mcpServers": {...}}` file
//! desktop MCP clients write (`mcp.json`), read as it is. `${VAR}` in commands,
//! arguments, environment values, URLs and headers is the environment variable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use toolgate_tool::Credential;

use toolgate_sandbox::SandboxPolicy;
use toolgate_tool::{LoadError, Permission};

/// How toolgate reaches a server. Two declarations with the same name and the same
/// `Connect` share one running server in a process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Connect {
    /// A program speaking MCP on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One server declared in the tools folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    /// The prefix of its tools' names (`NAME__TOOL`).
    pub name: String,
    pub connect: Connect,
    /// The permission of its tools when `permissions` does not name them; `None`: from
    /// each tool's annotations.
    pub permission: Option<Permission>,
    /// By the server's own tool name.
    pub permissions: BTreeMap<String, Permission>,
    /// Seconds a call may take.
    pub timeout: Option<f64>,
    /// The sandbox a stdio server runs in (`None` for a server reached by URL).
    pub sandbox: Option<SandboxPolicy>,
    /// Values a stdio server's process gets in its environment, by variable name, from
    /// the caller's tenant (`${secret:NAME}`: the tenant's stored secret, else the
    /// shared one) or toolgate's environment (`${env:VAR}`): each tenant's process has
    /// its own.
    pub credentials: BTreeMap<String, Credential>,
    /// How its tools' failed calls are tried again (a dropped server is started again
    /// before the next try).
    pub retry: Option<toolgate_tool::RetryPolicy>,
    /// How long its read-only tools' results are kept.
    pub cache: Option<toolgate_tool::cache::CachePolicy>,
    /// A server reached by URL that requires a user's OAuth token (the MCP
    /// authorization spec): each call runs as the run's user, on a connection of
    /// theirs.
    pub oauth: Option<toolgate_tool::oauth::OAuthProvider>,
    /// Its tools as declared (`tools/list` entries), for a server that lists them only
    /// to a user with a token; the list a user's connection gets replaces them.
    pub tools: Option<Vec<Value>>,
    /// The file it is declared in.
    pub path: PathBuf,
}

/// A server as written, in either form (toolgate's keys; the desktop form's `type`
/// and `disabled` too).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawServer {
    /// The server's name: the prefix of its tools' names (`NAME__TOOL`).
    #[serde(default)]
    mcp_server: Option<String>,
    /// The program to start, speaking MCP on its stdin and stdout (not with `url`).
    #[serde(default)]
    command: Option<String>,
    /// The program's arguments.
    #[serde(default)]
    args: Vec<String>,
    /// The program's environment (built from nothing but these); `${VAR}` is toolgate's.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// The folder the program starts in, relative to this file.
    #[serde(default)]
    cwd: Option<PathBuf>,
    /// A streamable HTTP endpoint (not with `command`).
    #[serde(default)]
    url: Option<String>,
    /// HTTP headers sent to a `url` server; `${VAR}` is an environment variable.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// The permission of its tools that `permissions` does not name (unset: from each
    /// tool's annotations: read-only tools `auto`, the others `confirm`).
    #[serde(default)]
    permission: Option<Permission>,
    /// Permission words by the server's own tool name.
    #[serde(default)]
    permissions: BTreeMap<String, Permission>,
    /// How long a call may take.
    #[serde(default)]
    #[schemars(schema_with = "toolgate_tool::file_schema::duration")]
    timeout: Option<Value>,
    /// The sandbox a stdio server runs in (`off`, or its settings).
    #[serde(default)]
    #[schemars(schema_with = "toolgate_tool::file_schema::sandbox")]
    sandbox: Option<Value>,
    /// A stdio server's environment from each caller's tenant: `{VAR: "${secret:NAME}"}`
    /// (the tenant's secret, else the shared one) or `"${env:VAR}"`; each tenant's
    /// process gets its own values.
    #[serde(default)]
    #[schemars(schema_with = "toolgate_tool::file_schema::credentials")]
    credentials: BTreeMap<String, Value>,
    /// How its tools' failed calls are tried again: `{attempts, backoff, on: [timeout,
    /// connect], idempotent}`; a server that dropped is started again before the next
    /// try. Only read-only (or idempotent) tools are retried.
    #[serde(default)]
    retry: Option<toolgate_tool::retry::RawRetry>,
    /// How long a read-only tool's result (its `readOnlyHint`) is kept and given again
    /// for the same arguments: `{ttl: 10m, secret_arguments: false}`.
    #[serde(default)]
    cache: Option<toolgate_tool::cache::RawCache>,
    /// A `url` server that requires a user's token (the MCP authorization spec): `true`
    /// to discover everything, or the provider's settings (`name`, `client_id`,
    /// `client_secret`, `scopes`, `issuer`, `authorize_url`, `token_url`); each call runs
    /// as the run's user, who is asked to connect first.
    #[serde(default)]
    #[schemars(schema_with = "oauth_schema")]
    oauth: Option<Value>,
    /// The tools of an `oauth` server, as its `tools/list` gives them (`name`, and
    /// `description`, `inputSchema`, `annotations` when known): it lists them only to a
    /// user with a token. The list a user's connection gets replaces them.
    #[serde(default)]
    tools: Option<Vec<Value>>,
}

/// The schema of an MCP server's `oauth:`.
fn oauth_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The server requires a user's OAuth token: `true` (its authorization \
            server discovered from it, toolgate registered as a client), or settings.",
        "anyOf": [
            {"type": "boolean"},
            {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "name": {"type": "string", "description": "What users' tokens are stored under (default: the server's name)."},
                    "client_id": {"type": "string", "description": "A client registered by hand (default: toolgate registers itself, RFC 7591)."},
                    "client_secret": {"type": "string", "description": "`${secret:NAME}` or `${env:VAR}`."},
                    "scopes": {"type": "array", "items": {"type": "string"}, "description": "Default: those the server's resource metadata lists."},
                    "issuer": {"type": "string"},
                    "authorize_url": {"type": "string"},
                    "token_url": {"type": "string"},
                    "revoke_url": {"type": "string"}
                }
            }
        ]
    })
}

/// The JSON Schema of a file [`read`] takes: one server in toolgate's form
/// (`mcp_server:` and `command:` or `url:`), or a desktop client's `mcpServers` map.
pub fn file_schema() -> schemars::Schema {
    let mut root = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<RawServer>();
    let properties = root.remove("properties").unwrap_or_default();
    let defs = root.remove("definitions");
    let mut desktop = properties.clone();
    if let Some(map) = desktop.as_object_mut() {
        map.insert(
            "type".into(),
            serde_json::json!({
                "enum": ["stdio", "http", "streamable-http", "streamableHttp"],
                "description": "The transport (`sse`, the legacy one, is refused)."
            }),
        );
        map.insert(
            "disabled".into(),
            serde_json::json!({
                "type": "boolean", "description": "A disabled server is skipped."
            }),
        );
    }
    let servers = serde_json::json!({
        "type": "object",
        "description": "Servers by name, as desktop MCP clients write them (keys toolgate does \
            not use are let be).",
        "additionalProperties": {"type": "object", "properties": desktop}
    });
    let mut schema = serde_json::json!({
        "$schema": root.get("$schema"),
        "title": "McpServerFile",
        "description": "An MCP server declaration in the tools folder: one server in toolgate's \
            form, or a desktop client's `mcpServers` map (`mcp.json`).",
        "anyOf": [
            {
                "type": "object",
                "properties": properties,
                "required": ["mcp_server"],
                "oneOf": [{"required": ["command"]}, {"required": ["url"]}],
                "additionalProperties": false
            },
            {
                "type": "object",
                "properties": {"mcpServers": servers, "servers": servers},
                "anyOf": [{"required": ["mcpServers"]}, {"required": ["servers"]}]
            }
        ]
    });
    if let (Some(defs), Some(map)) = (defs, schema.as_object_mut()) {
        map.insert("definitions".into(), defs);
    }
    schemars::Schema::try_from(schema).unwrap_or_default()
}

/// A file in the tools folder that declares servers rather than a tool: `mcp.json`, or
/// a file whose top level holds `mcp_server` or `mcpServers`.
pub fn declares_servers(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| declares_servers_in(path, &text))
}

/// [`declares_servers`] for a file already read: `text` is its content.
pub fn declares_servers_in(path: &Path, text: &str) -> bool {
    if path.file_name().and_then(|n| n.to_str()) == Some("mcp.json") {
        return true;
    }
    // A cheap look before parsing: the key must be in the text.
    if !text.contains("mcp_server") && !text.contains("mcpServers") {
        return false;
    }
    parse_value(path, text).is_ok_and(|v| {
        v.as_object()
            .is_some_and(|o| o.contains_key("mcp_server") || o.contains_key("mcpServers"))
    })
}

fn parse_value(path: &Path, text: &str) -> Result<Value, LoadError> {
    let fail = |line: Option<usize>, message: String| LoadError {
        path: path.to_path_buf(),
        line,
        message,
    };
    if path.extension().and_then(|e| e.to_str()) == Some("json") {
        serde_json::from_str(text).map_err(|e| fail(Some(e.line()), e.to_string()))
    } else {
        serde_saphyr::from_str(text).map_err(|e| {
            let line = e.location().map(|l| l.line() as usize);
            fail(line, toolgate_tool::folder::first_line(&e.to_string()))
        })
    }
}

/// What one file declares: the servers that can be used, and one error per entry that
/// cannot (naming the entry, its line and why), so that one entry toolgate cannot take
/// never drops the others.
#[derive(Debug, Default)]
pub struct Read {
    pub servers: Vec<Declaration>,
    pub errors: Vec<LoadError>,
}

/// The servers declared in one file. A file that cannot be read or parsed is one error;
/// in a desktop `mcpServers` map each entry is taken or refused on its own.
pub fn read(path: &Path) -> Read {
    match read_file(path) {
        Ok(read) => read,
        Err(e) => Read {
            servers: Vec::new(),
            errors: vec![e],
        },
    }
}

fn read_file(path: &Path) -> Result<Read, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| LoadError {
        path: path.to_path_buf(),
        line: None,
        message: format!("cannot read: {e}"),
    })?;
    let value = parse_value(path, &text)?;
    let fail = |keys: &[&str], message: String| LoadError {
        path: path.to_path_buf(),
        line: toolgate_tool::folder::line_of(&text, keys),
        message,
    };
    let Some(top) = value.as_object() else {
        return Err(fail(&[], "an MCP server file must be a map".into()));
    };
    if let Some(servers) = top.get("mcpServers").or_else(|| top.get("servers")) {
        let Some(servers) = servers.as_object() else {
            return Err(fail(
                &["mcpServers"],
                "mcpServers must be a map of servers".into(),
            ));
        };
        let mut out = Read::default();
        for (name, raw) in servers {
            match desktop(path, name, raw) {
                Ok(Some(d)) => out.servers.push(d),
                Ok(None) => {}
                Err(m) => out.errors.push(fail(&[name], m)),
            }
        }
        return Ok(out);
    }
    let raw: RawServer = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
        // The field the deserializer was in, whatever the file's syntax.
        let key = e.path().to_string();
        fail(
            &[&key],
            format!("MCP server: field '{key}': {}", e.into_inner()),
        )
    })?;
    let name = raw.mcp_server.clone().unwrap_or_default();
    let d = declaration(path, &name, raw).map_err(|(key, m)| fail(&[key.as_str()], m))?;
    Ok(Read {
        servers: vec![d],
        errors: Vec::new(),
    })
}

/// One server of a desktop client's `mcpServers` map, or `None` when it is disabled.
/// Keys toolgate does not use (a client's own settings) are let be, so the file works
/// as it is.
fn desktop(path: &Path, name: &str, raw: &Value) -> Result<Option<Declaration>, String> {
    let Some(obj) = raw.as_object() else {
        return Err(format!("server '{name}' must be a map"));
    };
    if obj.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    if let Some(kind) = obj.get("type").and_then(Value::as_str) {
        match kind {
            "stdio" | "http" | "streamable-http" | "streamableHttp" => {}
            "sse" => {
                return Err(format!(
                    "MCP server '{name}': type 'sse' is the legacy HTTP+SSE transport, which \
                     toolgate's MCP client (rmcp 3) does not speak; give the server's \
                     streamable HTTP endpoint (type 'http', often its /mcp path) instead"
                ));
            }
            other => {
                return Err(format!(
                    "MCP server '{name}': transport type '{other}' is not supported (stdio, http)"
                ));
            }
        }
    }
    const KEYS: [&str; 13] = [
        "oauth",
        "tools",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "permission",
        "permissions",
        "timeout",
        "sandbox",
        "credentials",
    ];
    let used: serde_json::Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let raw: RawServer = serde_json::from_value(Value::Object(used))
        .map_err(|e| format!("MCP server '{name}': {e}"))?;
    declaration(path, name, raw)
        .map(Some)
        .map_err(|(_, m)| format!("MCP server '{name}': {m}"))
}

/// `s` with its variables filled; the error names `key`.
fn expand_at(key: &str, s: &str) -> Result<String, (String, String)> {
    expand(s).map_err(|e| (key.to_string(), format!("{key}: {e}")))
}

/// A server started as a program: its command, args, env and folder.
fn stdio_connect(path: &Path, command: &str, raw: &RawServer) -> Result<Connect, (String, String)> {
    if command.trim().is_empty() {
        return Err(("command".into(), "command must name a program".into()));
    }
    if !raw.headers.is_empty() {
        return Err(("headers".into(), "headers are for url servers".into()));
    }
    Ok(Connect::Stdio {
        command: expand_at("command", command)?,
        args: raw
            .args
            .iter()
            .map(|a| expand_at("args", a))
            .collect::<Result<_, _>>()?,
        env: raw
            .env
            .iter()
            .map(|(k, v)| expand_at("env", v).map(|v| (k.clone(), v)))
            .collect::<Result<_, _>>()?,
        cwd: raw
            .cwd
            .as_ref()
            .map(|c| path.parent().unwrap_or(Path::new(".")).join(c)),
    })
}

/// A server reached over streamable HTTP: its URL and headers.
fn http_connect(url: &str, raw: &RawServer) -> Result<Connect, (String, String)> {
    if !raw.args.is_empty() || !raw.env.is_empty() {
        return Err(("args".into(), "args and env are for command servers".into()));
    }
    let url = expand_at("url", url)?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err((
            "url".into(),
            format!("url '{url}' must start with http:// or https://"),
        ));
    }
    Ok(Connect::Http {
        url,
        headers: raw
            .headers
            .iter()
            .map(|(k, v)| expand_at("headers", v).map(|v| (k.clone(), v)))
            .collect::<Result<_, _>>()?,
    })
}

/// Checks a server as written; the error names the key at fault.
fn declaration(path: &Path, name: &str, raw: RawServer) -> Result<Declaration, (String, String)> {
    let fail = |key: &str, m: String| (key.to_string(), m);
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        || name.contains("__")
    {
        return Err(fail(
            "mcp_server",
            format!(
                "server name '{name}' must be letters, digits, '_' or '-' (no '__': it \
                 separates the server from the tool in SERVER__TOOL)"
            ),
        ));
    }
    let sandbox = match (&raw.command, &raw.sandbox) {
        (Some(_), None) => Some(SandboxPolicy::default()),
        (Some(_), Some(v)) => {
            let base = path.parent().unwrap_or(Path::new("."));
            Some(SandboxPolicy::parse(v, base).map_err(|(key, m)| fail(&key, m))?)
        }
        (None, Some(_)) => {
            return Err(fail(
                "sandbox",
                "sandbox is for command servers (a server reached by url runs elsewhere)".into(),
            ));
        }
        (None, None) => None,
    };
    let connect = match (&raw.command, &raw.url) {
        (Some(command), None) => stdio_connect(path, command, &raw)?,
        (None, Some(url)) => http_connect(url, &raw)?,
        (Some(_), Some(_)) => {
            return Err(fail(
                "url",
                "give command (stdio) or url (HTTP), not both".into(),
            ));
        }
        (None, None) => {
            return Err(fail(
                "mcp_server",
                "an MCP server needs command (stdio) or url (streamable HTTP)".into(),
            ));
        }
    };
    let timeout = match raw.timeout {
        None | Some(Value::Null) => None,
        Some(v) => Some(seconds(&v).ok_or_else(|| {
            fail(
                "timeout",
                format!("timeout must be seconds (30) or a duration (30s, 2m, 500ms), not {v}"),
            )
        })?),
    };
    let credentials = credentials_of(&raw.credentials, &connect)?;
    let retry = raw
        .retry
        .as_ref()
        .map(toolgate_tool::RetryPolicy::from_raw)
        .transpose()
        .map_err(|m| fail("retry", format!("retry: {m}")))?;
    let cache = toolgate_tool::cache::CachePolicy::read(raw.cache.as_ref())
        .map_err(|m| fail("cache", m))?;
    let oauth = oauth_of(name, raw.oauth.as_ref(), &connect)?;
    if raw.tools.is_some() && oauth.is_none() {
        return Err(fail(
            "tools",
            "tools are declared for a server that lists them only with a user's token \
             (oauth:); toolgate lists the others itself"
                .into(),
        ));
    }
    Ok(Declaration {
        retry,
        cache,
        oauth,
        tools: raw.tools,
        name: name.to_string(),
        connect,
        credentials,
        permission: raw.permission,
        permissions: raw.permissions,
        timeout,
        sandbox,
        path: path.to_path_buf(),
    })
}

/// A `url` server's `oauth:` as a provider: named after the server unless it says, for
/// the server's URL as the protected resource (RFC 8707, RFC 9728).
fn oauth_of(
    server: &str,
    raw: Option<&Value>,
    connect: &Connect,
) -> Result<Option<toolgate_tool::oauth::OAuthProvider>, (String, String)> {
    let fail = |m: String| ("oauth".to_string(), format!("oauth: {m}"));
    let mut settings = match raw {
        None | Some(Value::Null) | Some(Value::Bool(false)) => return Ok(None),
        Some(Value::Bool(true)) => serde_json::Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(other) => return Err(fail(format!("true, or settings, not {other}"))),
    };
    let Connect::Http { url, .. } = connect else {
        return Err(fail(
            "is for a server reached by url (a command server gets credentials)".into(),
        ));
    };
    settings
        .entry("name")
        .or_insert_with(|| Value::String(server.to_string()));
    settings.insert("resource".into(), Value::String(url.clone()));
    let provider: toolgate_tool::oauth::OAuthProvider =
        serde_json::from_value(Value::Object(settings)).map_err(|e| fail(e.to_string()))?;
    provider.check().map_err(|e| ("oauth".to_string(), e))?;
    Ok(Some(provider))
}

/// A stdio server's `credentials:` read: variable names to where their values come
/// from.
fn credentials_of(
    raw: &BTreeMap<String, Value>,
    connect: &Connect,
) -> Result<BTreeMap<String, Credential>, (String, String)> {
    if raw.is_empty() {
        return Ok(BTreeMap::new());
    }
    if matches!(connect, Connect::Http { .. }) {
        return Err((
            "credentials".into(),
            "credentials are a command server's environment; a server reached by url takes \
             ${env:VAR} in its headers"
                .into(),
        ));
    }
    raw.iter()
        .map(|(var, v)| {
            let valid = !var.is_empty()
                && !var.starts_with(|c: char| c.is_ascii_digit())
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err((
                    "credentials".into(),
                    format!("credentials: '{var}' is not an environment variable name"),
                ));
            }
            Credential::parse(v)
                .map(|c| (var.clone(), c))
                .map_err(|e| ("credentials".into(), format!("credentials: {var}: {e}")))
        })
        .collect()
}

/// `template` with its variables filled from the environment (see
/// [`toolgate_tool::vars`]).
pub fn expand(template: &str) -> Result<String, toolgate_tool::vars::VarError> {
    toolgate_tool::vars::expand(template)
}

/// `30`, `"30"`, `"30s"`, `"2m"`, `"500ms"` as seconds (positive).
fn seconds(v: &Value) -> Option<f64> {
    let secs = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => {
            let s = s.trim();
            let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
                (n, 0.001)
            } else if let Some(n) = s.strip_suffix('s') {
                (n, 1.0)
            } else if let Some(n) = s.strip_suffix('m') {
                (n, 60.0)
            } else if let Some(n) = s.strip_suffix('h') {
                (n, 3600.0)
            } else {
                (s, 1.0)
            };
            num.trim().parse::<f64>().ok()? * scale
        }
        _ => return None,
    };
    (secs > 0.0 && secs.is_finite()).then_some(secs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn the_yaml_form_reads_with_expansion() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY of the test: a variable only this test reads.
        let home = std::env::var("HOME").unwrap_or_default();
        let p = write(
            dir.path(),
            "time.yaml",
            "mcp_server: time\ncommand: python3\nargs: [-m, mcp_server_time]\nenv: {H: '${HOME}'}\n\
             permission: confirm\npermissions: {get_current_time: auto}\ntimeout: 30s\n",
        );
        assert!(declares_servers(&p));
        let d = read(&p).servers.remove(0);
        assert_eq!(d.name, "time");
        assert_eq!(d.timeout, Some(30.0));
        assert_eq!(d.permission, Some(Permission::Confirm));
        assert_eq!(d.permissions["get_current_time"], Permission::Auto);
        let Connect::Stdio { env, args, .. } = d.connect else {
            panic!("stdio")
        };
        assert_eq!(env["H"], home);
        assert_eq!(args, ["-m", "mcp_server_time"]);
    }

    #[test]
    fn the_desktop_form_reads_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "mcp.json",
            r#"{"mcpServers": {
                "everything": {"command": "npx", "args": ["-y", "x"], "autoApprove": []},
                "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"A": "b"}},
                "off": {"command": "x", "disabled": true}
            }}"#,
        );
        let all = read(&p).servers;
        let names: Vec<&str> = all.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["everything", "remote"]);
        assert!(matches!(all[1].connect, Connect::Http { .. }));
    }

    #[test]
    fn mistakes_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "bad.yaml", "mcp_server: t\ncomand: x\n");
        let e = read(&p).errors.remove(0);
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.message.contains("comand"), "{e}");
        let p = write(
            dir.path(),
            "both.yaml",
            "mcp_server: t\ncommand: x\nurl: http://h/\n",
        );
        assert!(read(&p).errors[0].message.contains("not both"));
        let p = write(
            dir.path(),
            "t.yaml",
            "mcp_server: t\ncommand: x\ntimeout: soon\n",
        );
        assert_eq!(read(&p).errors[0].line, Some(3));
        let p = write(dir.path(), "tool.yaml", "name: mcp_server_thing\n");
        assert!(!declares_servers(&p));
    }

    #[test]
    fn each_desktop_entry_is_taken_or_refused_on_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::env::var("HOME").unwrap_or_default();
        let p = write(
            dir.path(),
            "mcp.json",
            r#"{"mcpServers": {
                "good": {"command": "x", "env": {"H": "${env:HOME}"}},
                "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                "unset": {"command": "x", "args": ["${TOOLGATE_TEST_SURELY_UNSET_31}"]},
                "asks": {"command": "x", "env": {"K": "${input:api-key}"}},
                "also_good": {"url": "http://127.0.0.1:9/mcp"}
            }}"#,
        );
        let read = read(&p);
        let names: Vec<&str> = read.servers.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["good", "also_good"]);
        let Connect::Stdio { env, .. } = &read.servers[0].connect else {
            panic!("stdio")
        };
        assert_eq!(env["H"], home);
        assert_eq!(read.errors.len(), 3, "{:?}", read.errors);
        for (e, (name, why)) in read.errors.iter().zip([
            ("legacy", "legacy HTTP+SSE"),
            ("unset", "TOOLGATE_TEST_SURELY_UNSET_31 is not set"),
            ("asks", "${input:api-key}"),
        ]) {
            assert!(e.message.contains(&format!("'{name}'")), "{e}");
            assert!(e.message.contains(why), "{e}");
            assert!(e.line.is_some(), "{e}");
        }
    }

    #[test]
    fn an_oauth_server_is_a_url_server_with_its_provider() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "notes.yaml",
            "mcp_server: notes\nurl: http://127.0.0.1:9/mcp\noauth: true\ntools: [{name: whoami}]\n",
        );
        let d = read(&p).servers.remove(0);
        let provider = d.oauth.unwrap();
        assert_eq!(provider.name, "notes");
        assert_eq!(provider.resource.as_deref(), Some("http://127.0.0.1:9/mcp"));
        assert!(provider.registers());
        assert_eq!(d.tools.unwrap().len(), 1);
        for (text, why) in [
            (
                "mcp_server: t\ncommand: x\noauth: true\n",
                "server reached by url",
            ),
            (
                "mcp_server: t\nurl: http://h/mcp\ntools: [{name: a}]\n",
                "(oauth:)",
            ),
            (
                "mcp_server: t\nurl: http://h/mcp\noauth: {client_secret: x}\n",
                "needs its client_id",
            ),
            (
                "mcp_server: t\nurl: http://h/mcp\noauth: {scope: x}\n",
                "scope",
            ),
        ] {
            let p = write(dir.path(), "bad.yaml", text);
            let e = read(&p).errors.remove(0);
            assert!(e.message.contains(why), "{text}: {e}");
            assert!(e.line.is_some(), "{e}");
        }
    }
}
