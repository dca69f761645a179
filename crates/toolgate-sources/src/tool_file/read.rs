//! Reading one tool file (`tools/*.yaml`, `*.yml`, `*.json`): parsing, checking, the list
//! form of parameters. Every key in a file is either used or refused: an unknown key, an
//! unknown or misspelt schema keyword, or a misspelt rule is an error; every JSON Schema
//! keyword is accepted (see `schema/tool_file.rs`). A broken file is reported with its
//! path, line and what is wrong.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::super::builtin;
use super::http;
use toolgate_tool::credentials::{self, Credential};
use toolgate_tool::file_schema;
use toolgate_tool::folder::{LoadError, ToolDef, line_of};
use toolgate_tool::list_form::{ListError, list_form};
use toolgate_tool::schema::{Schema, SchemaError};
use toolgate_tool::spec::{Entry, ToolSpec};
use toolgate_tool::user_file;

/// A tool file: one tool, its parameters, how it runs and who decides its calls.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ToolFile")]
pub(crate) struct RawTool {
    /// The tool's name, as the model calls it: letters, digits, `_`, `-` or `.`.
    name: String,
    /// What the tool does, for the model.
    #[serde(default)]
    description: String,
    /// Whether a call runs at once (`auto`, the default), waits for a person
    /// (`confirm`) or is refused (`never`); or rules over the arguments.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::permission")]
    permission: Option<Value>,
    /// Programs or endpoints asked before each call and after each result.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::hooks")]
    hooks: Option<Value>,
    /// How long an approval may wait for a person.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::duration")]
    approval_timeout: Option<Value>,
    /// What an approval nobody decided in time becomes.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::on_timeout")]
    on_timeout: Option<Value>,
    /// The arguments: a JSON Schema of type object, or a list of parameters.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::parameters")]
    parameters: Option<Value>,
    /// How the tool runs (default `{type: client}`: the client runs it and submits
    /// the output).
    #[serde(default)]
    #[schemars(with = "Option<Entry>")]
    entry: Option<Value>,
    /// The concurrency category its calls count against (`limits.per_category`).
    #[serde(default)]
    category: Option<String>,
    /// Seconds a call may run before it fails with a timeout (default 60).
    #[serde(default)]
    timeout: Option<f64>,
    /// Words to find and group tools by.
    #[serde(default)]
    tags: Vec<String>,
    /// The tool's version (a string or a number), shown and recorded.
    #[serde(default)]
    #[schemars(with = "Option<Version>")]
    version: Option<Value>,
    /// The tool only reads: its calls may run side by side and be retried.
    #[serde(default)]
    read_only: bool,
    /// The declared output: a JSON Schema, or a list of fields like `parameters`.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::parameters")]
    output: Option<Value>,
    /// Arguments the model never fills, filled from the environment or stored secrets.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::credentials")]
    credentials: BTreeMap<String, Value>,
    /// A successful output of this tool is the run's answer: the run ends without
    /// asking the model again.
    #[serde(default, rename = "final")]
    is_final: bool,
    /// Its calls are recorded and their results go to the model, but they are left out
    /// of event streams (`--json`, SSE) and the command line's output.
    #[serde(default)]
    hidden: bool,
    /// The sandbox of the programs it starts (`off`, or fs/read/write/network/limits).
    #[serde(default)]
    #[schemars(schema_with = "file_schema::sandbox")]
    sandbox: Option<Value>,
    /// How a failed call is tried again: `{attempts, backoff, on: [timeout, connect,
    /// 429, 5xx], idempotent}`; only read-only or idempotent tools are retried.
    #[serde(default)]
    retry: Option<toolgate_tool::retry::RawRetry>,
    /// How long a result is kept and given again for the same arguments: `{ttl: 10m,
    /// secret_arguments: false}`; read-only tools only.
    #[serde(default)]
    cache: Option<toolgate_tool::cache::RawCache>,
    /// Groups one of which decides its calls.
    #[serde(default)]
    approvers: Vec<String>,
    /// Whoever started a run may not decide its calls of this tool.
    #[serde(default)]
    four_eyes: bool,
    /// The name people see (the inbox, `/v1/tools`): a string or `{en_US: ..., ...}`.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::localized")]
    label: Option<Value>,
    /// A short text (an emoji) or an image file beside the tool file.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::icon")]
    icon: Option<Value>,
    /// Help for people deciding its calls: a string or `{en_US: ..., ...}`.
    #[serde(default)]
    #[schemars(schema_with = "file_schema::localized")]
    help: Option<Value>,
}

/// `version:` as written: a string or a number.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code, reason = "a schema only: the field is read as JSON")]
enum Version {
    Text(String),
    Number(f64),
}

/// The JSON Schema of a tool file, as [`load_file`] reads it.
pub fn file_schema() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<RawTool>()
}

/// Reads one tool file: parses it, compiles its schema, checks its entry.
pub fn load_file(path: &Path) -> Result<ToolDef, LoadError> {
    let fail = |line: Option<usize>, message: String| LoadError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| fail(None, format!("cannot read: {e}")))?;
    load_text(path, &text)
}

/// A fault found after parsing: the keys leading to it, and the message.
type Fault = (Vec<String>, String);

/// `keys` owned, for a [`Fault`].
fn keyed(keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| k.to_string()).collect()
}

/// The file's text read as JSON (a `.json` file) or YAML; the error has the line.
fn parse_raw(path: &Path, text: &str) -> Result<RawTool, LoadError> {
    let fail = |line: Option<usize>, message: String| LoadError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let is_json = path.extension().and_then(|e| e.to_str()) == Some("json");
    let parsed = if is_json {
        user_file::from_json(text)
    } else {
        user_file::from_yaml(text)
    };
    parsed.map_err(|f| fail(f.line, f.message))
}

/// The tool's name, trimmed: letters, digits, `_`, `-` or `.`.
fn name_of(raw: &str) -> Result<String, Fault> {
    let name = raw.trim().to_string();
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if valid_name {
        Ok(name)
    } else {
        Err((
            keyed(&["name"]),
            format!("name '{name}' must be letters, digits, '_', '-' or '.'"),
        ))
    }
}

/// A list-form fault in `block` (`parameters`, `output`): the keys under it.
fn list_fault(block: &str, e: ListError) -> Fault {
    let mut keys = vec![block.to_string()];
    keys.extend(e.keys);
    (keys, format!("{block}: {}", e.message))
}

/// `parameters:` as a JSON Schema: none, the list form, or an object schema.
fn parameters_of(raw: Option<Value>) -> Result<Value, Fault> {
    match raw {
        None | Some(Value::Null) => Ok(json!({"type": "object", "properties": {}})),
        Some(Value::Array(list)) => {
            let mut schema = list_form(&list).map_err(|e| list_fault("parameters", e))?;
            // The list names every parameter: an argument it does not declare is refused.
            schema["additionalProperties"] = Value::Bool(false);
            Ok(schema)
        }
        Some(Value::Object(schema)) => {
            match schema.get("type") {
                None => {}
                Some(Value::String(t)) if t == "object" => {}
                Some(other) => {
                    return Err((
                        keyed(&["parameters", "type"]),
                        format!("parameters: type must be \"object\", not {other}"),
                    ));
                }
            }
            Ok(Value::Object(schema))
        }
        Some(_) => Err((
            keyed(&["parameters"]),
            "parameters must be a JSON Schema object or a list of parameters".to_string(),
        )),
    }
}

/// Credentials: the file's, and the parameters a person fills (`form: form`), which
/// leave the schema the model sees (stored secrets `TOOL.ARG`). A credential that is
/// also a parameter is refused.
fn credentials_of(
    name: &str,
    raw: &BTreeMap<String, Value>,
    parameters: &mut Value,
) -> Result<BTreeMap<String, Credential>, Fault> {
    let mut credentials = BTreeMap::new();
    for (arg, source) in raw {
        let source = Credential::parse(source).map_err(|m| {
            (
                keyed(&["credentials", arg]),
                format!("credentials: '{arg}': {m}"),
            )
        })?;
        credentials.insert(arg.clone(), source);
    }
    let form_params = credentials::take_form_params(parameters)
        .map_err(|m| (keyed(&["parameters", "form"]), format!("parameters: {m}")))?;
    for arg in form_params {
        credentials
            .entry(arg.clone())
            .or_insert_with(|| Credential::Secret(format!("{name}.{arg}")));
    }
    if let Some(arg) = credentials.keys().find(|a| {
        parameters
            .get("properties")
            .and_then(|p| p.get(a.as_str()))
            .is_some()
    }) {
        return Err((
            keyed(&["credentials", arg]),
            format!(
                "credentials: '{arg}' is also a parameter the model fills; take it out of parameters"
            ),
        ));
    }
    Ok(credentials)
}

/// `output:` as a JSON Schema: none, the list form, or an object schema.
fn output_of(raw: Option<Value>) -> Result<Option<Value>, Fault> {
    match raw {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(list)) => list_form(&list)
            .map(Some)
            .map_err(|e| list_fault("output", e)),
        Some(v @ Value::Object(_)) => Ok(Some(v)),
        Some(_) => Err((
            keyed(&["output"]),
            "output must be a JSON Schema (type: object, properties: ...) or a list of fields"
                .to_string(),
        )),
    }
}

/// [`load_file`] for a file already read: `text` is its content.
pub(super) fn load_text(path: &Path, text: &str) -> Result<ToolDef, LoadError> {
    let fail = |line: Option<usize>, message: String| LoadError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let raw = parse_raw(path, text)?;
    // Errors found after parsing: point at the line of the key at fault.
    let fail_at = |keys: &[&str], message: String| {
        let line = line_of(text, keys);
        fail(line, message)
    };
    let fault = |(keys, m): Fault| {
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        fail_at(&keys, m)
    };
    let name = name_of(&raw.name).map_err(fault)?;
    let folder = path.parent().unwrap_or(Path::new("."));
    let (retry, cache, display) = service_keys(&raw, folder).map_err(fault)?;
    // A fault in a schema: the line of the deepest of its keys found in the file.
    let schema_fail = |block: &str, e: SchemaError| {
        let mut keys = vec![block];
        keys.extend(e.keys.iter().map(String::as_str));
        fail_at(&keys, format!("{block}: {}", e.message))
    };
    let mut parameters = parameters_of(raw.parameters).map_err(fault)?;
    let credentials = credentials_of(&name, &raw.credentials, &mut parameters).map_err(fault)?;
    if raw.timeout.is_some_and(|t| !(t > 0.0 && t.is_finite())) {
        return Err(fail_at(
            &["timeout"],
            "timeout must be a positive number of seconds".into(),
        ));
    }
    let schema = Schema::compile_file(&parameters).map_err(|e| schema_fail("parameters", e))?;
    let output = output_of(raw.output).map_err(fault)?;
    let output_schema = match &output {
        None => None,
        Some(v) => Some(Schema::compile_file(v).map_err(|e| schema_fail("output", e))?),
    };
    let entry = match raw.entry {
        None | Some(Value::Null) => Entry::Client,
        Some(v) => read_entry(v).map_err(|(key, m)| fail_at(&["entry", &key], m))?,
    };
    check_entry(&entry).map_err(|m| fail_at(&["entry"], m))?;
    let (permission, rules) = match &raw.permission {
        None | Some(Value::Null) => (None, None),
        Some(v) => toolgate_tool::policy::read_permission(v).map_err(|(k, m)| {
            let mut keys = vec!["permission".to_string()];
            keys.extend(k);
            fault((keys, format!("permission: {m}")))
        })?,
    };
    let (hooks, deadline) = toolgate_tool::policy::read_extras(
        raw.hooks.as_ref(),
        raw.approval_timeout.as_ref(),
        raw.on_timeout.as_ref(),
        folder,
    )
    .map_err(fault)?;
    let sandbox = sandbox_of(path, &entry, raw.sandbox.as_ref())
        .map_err(|(key, m)| fail_at(&["sandbox", &key], m))?;
    let spec = ToolSpec {
        name,
        description: raw.description,
        parameters,
        permission: permission.unwrap_or_default(),
        entry,
        category: raw.category,
        timeout: raw.timeout,
        tags: raw.tags,
        version: raw.version.map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        }),
        read_only: raw.read_only,
        output,
        credentials,
        is_final: raw.is_final,
        hidden: raw.hidden,
        sandbox,
        display,
    };
    let runner = super::runner(&spec).map_err(|m| fail_at(&["entry"], m))?;
    Ok(ToolDef {
        spec,
        schema,
        output: output_schema,
        path: path.to_path_buf(),
        policy: toolgate_tool::policy::Policy {
            rules,
            hooks,
            deadline,
            retry,
            cache,
        },
        rule: toolgate_protocol::identity::DecisionRule {
            approvers: raw.approvers,
            four_eyes: raw.four_eyes,
        },
        source: super::NAME,
        runner,
    })
}

/// `retry:`, `cache:` and the display keys (`label`, `icon`, `help`) read, or the key
/// at fault and why.
fn service_keys(
    raw: &RawTool,
    folder: &Path,
) -> Result<
    (
        Option<toolgate_tool::RetryPolicy>,
        Option<toolgate_tool::cache::CachePolicy>,
        toolgate_tool::display::Display,
    ),
    Fault,
> {
    let retry = retry_of(raw.retry.as_ref()).map_err(|m| (vec!["retry".to_string()], m))?;
    let cache =
        cache_of(raw.cache.as_ref(), raw.read_only).map_err(|m| (vec!["cache".to_string()], m))?;
    let display = toolgate_tool::display::Display::read(
        raw.label.as_ref(),
        raw.icon.as_ref(),
        raw.help.as_ref(),
        &[folder],
    )
    .map_err(|(key, m)| (vec![key], m))?;
    Ok((retry, cache, display))
}

/// `cache:` read, or why it is wrong: only a read-only tool's results are kept.
fn cache_of(
    raw: Option<&toolgate_tool::cache::RawCache>,
    read_only: bool,
) -> Result<Option<toolgate_tool::cache::CachePolicy>, String> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    if !read_only {
        return Err(
            "cache: only a read-only tool's results are kept (write `read_only: true` \
            if a call changes nothing)"
                .into(),
        );
    }
    toolgate_tool::cache::CachePolicy::read(Some(raw))
}

/// `retry:` read, or why it is wrong.
fn retry_of(
    raw: Option<&toolgate_tool::retry::RawRetry>,
) -> Result<Option<toolgate_tool::RetryPolicy>, String> {
    raw.map(toolgate_tool::RetryPolicy::from_raw)
        .transpose()
        .map_err(|m| format!("retry: {m}"))
}

/// The sandbox of a tool that starts programs (its `sandbox:`, or the default); none
/// for the others, which may not have a `sandbox:`.
fn sandbox_of(
    path: &Path,
    entry: &Entry,
    written: Option<&Value>,
) -> Result<Option<toolgate_sandbox::SandboxPolicy>, (String, String)> {
    let starts_programs = matches!(entry, Entry::Command { .. })
        || matches!(entry, Entry::Builtin { handler } if handler == "shell");
    match written {
        None if starts_programs => Ok(Some(toolgate_sandbox::SandboxPolicy::default())),
        None => Ok(None),
        Some(_) if !starts_programs => Err((
            "sandbox".into(),
            "sandbox: only tools that start programs (command, the shell built-in) have one".into(),
        )),
        Some(v) => {
            let base = path.parent().unwrap_or(Path::new("."));
            toolgate_sandbox::SandboxPolicy::parse(v, base).map(Some)
        }
    }
}

/// `entry:` as written: its settings (an unknown one refused, for every type), or the
/// key at fault and why.
fn read_entry(v: Value) -> Result<Entry, (String, String)> {
    if let Some(map) = v.as_object()
        && map.get("type").and_then(Value::as_str) == Some("client")
        && let Some(extra) = map.keys().find(|k| *k != "type")
    {
        return Err((
            extra.clone(),
            format!("entry: unknown field `{extra}`: a client tool takes no settings besides type"),
        ));
    }
    if let Some(kind) = v.get("type").and_then(Value::as_str)
        && !Entry::FILE_TYPES.contains(&kind)
    {
        return Err(("type".into(), not_a_file_type(kind)));
    }
    serde_json::from_value(v).map_err(|e| {
        let message = e.to_string();
        // serde names the field at fault in backticks: `shell`.
        let key = message.split('`').nth(1).unwrap_or_default().to_string();
        (key, format!("entry: {message}"))
    })
}

/// Why a tool file cannot have entry type `kind`.
fn not_a_file_type(kind: &str) -> String {
    match kind {
        "mcp" => {
            "entry: an MCP server's tools come from a file declaring the server (mcp_server: NAME, \
             command: ... or url: ...), not from a tool file"
                .into()
        }
        "openapi" | "dify" => {
            "entry: OpenAPI and Dify tools come from an `openapi:` file or a Dify provider".into()
        }
        other => format!(
            "entry: unknown variant `{other}`, expected one of `{}`",
            Entry::FILE_TYPES.join("`, `")
        ),
    }
}

/// Entry settings that can be checked before any call.
fn check_entry(entry: &Entry) -> Result<(), String> {
    match entry {
        Entry::Builtin { handler } if !builtin::HANDLERS.contains(&handler.as_str()) => {
            Err(format!(
                "entry: there is no built-in handler '{handler}' (there are: {})",
                builtin::HANDLERS.join(", ")
            ))
        }
        Entry::Command { command, .. } if command.trim().is_empty() => {
            Err("entry: command must name a program".into())
        }
        Entry::Http { .. } => http::check_entry(entry).map_err(String::from),
        Entry::Workflow(w) => w.check().map_err(|m| format!("entry: {m}")),
        Entry::Source(b) => Err(not_a_file_type(&b.source)),
        _ => Ok(()),
    }
}
