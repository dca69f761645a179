//! Agent files: a YAML file naming the agent, its model, mode, instructions, tools,
//! permission overrides, iteration limit and workspace. Every error names the file, the
//! field and (where it can) the line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::engine::LimitConfig;
use toolgate_tool::folder::line_of;
use toolgate_tool::{Permission, ToolLibrary, Toolkit, ToolkitError};

/// The model used when neither the agent file nor `--model` names one.
pub const DEFAULT_MODEL: &str = "openai:gpt-4o-mini";

/// Model turns a run may take when the file sets no `max_iterations`.
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;

/// How the agent's model sees its tools.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// OpenAI `tools` in the request; calls come back as native `tool_calls`.
    #[default]
    Native,
    /// Tool instructions in the system prompt; calls parsed from the text, results
    /// returned in the next user message.
    Xml,
}

/// An agent, as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    /// `openai:NAME`, `anthropic:NAME` or `scripted:FILE`, when the file names one.
    pub model: Option<String>,
    /// The map form's settings of `model:` (temperature, max_tokens, ...); all unset
    /// for the string form.
    pub model_settings: toolgate_model::ModelSettings,
    /// The context budget (`context:`); the model's defaults when absent.
    pub context: Option<toolgate_model::context::ContextConfig>,
    /// Models tried in order when the primary keeps failing (`fallback:`).
    pub fallback: Vec<toolgate_model::ModelSpec>,
    pub mode: Mode,
    pub instructions: String,
    pub tools: Vec<String>,
    /// Knowledge bases searched through the `search_knowledge` tool (`knowledge:`).
    pub knowledge: Vec<String>,
    /// Permission words by tool (a tool given rules has its `otherwise` here, if any).
    pub permissions: HashMap<String, Permission>,
    /// Rules by tool, hooks around every call, and the deadline of its approvals.
    pub policy: toolgate_tool::policy::AgentPolicy,
    pub max_iterations: u32,
    /// The root for file tools (relative paths are taken from the file's folder).
    pub workspace: Option<PathBuf>,
    /// The file it came from, absolute.
    pub path: PathBuf,
    /// Concurrency limits for its calls (`global`, `per_category`, `queue`,
    /// `strategy`); the runner's when absent.
    pub limits: Option<LimitConfig>,
    /// What the agent does, for a parent that has it as a sub-agent.
    pub description: String,
    /// Other agents it may hand tasks to, each a tool (or behind `call_subagent`).
    pub subagents: crate::subagents::Subagents,
    /// How deep the tree of runs under a run of this agent may go (default 3).
    pub max_depth: u32,
    /// How calls written as text are read (`dialect:`; `auto` when absent): in xml
    /// mode always, in native mode when the model's answer holds no native calls.
    pub dialect: toolgate_parse::Dialect,
    /// Whether a native-mode answer's text is read for calls at all (`dialect: none`
    /// turns it off; xml mode always reads its text).
    pub text_calls: bool,
    /// The loop's guards against a model gone astray (`max_repeats:`, `on_truncated:`).
    pub guards: crate::guards::LoopGuards,
    /// Whether the model may, must, or must not call tools (`tool_choice:`): sent to
    /// the model in its server's form, and enforced by the loop.
    pub tool_choice: toolgate_model::ToolChoice,
    /// Its calls' priority under the `priority` strategy (`priority:`; 0 when absent):
    /// higher goes first. A run started with a priority of its own uses that instead.
    pub priority: i32,
    /// Limits on its tools' sandboxes (`sandbox:`): the stricter of each setting wins.
    pub sandbox: Option<toolgate_sandbox::Ceiling>,
    /// Who decides its calls (`approvers:` groups) and whether the person who started
    /// a run may approve its calls (`four_eyes:`).
    pub decision_rule: toolgate_protocol::identity::DecisionRule,
    /// How long an MCP client's CONFIRM call is held for a decision before it is denied
    /// (`mcp_hold:`; the gateway's `--approval-timeout` when absent).
    pub mcp_hold: Option<std::time::Duration>,
    /// Spend limits on its runs (`budget:`): per run, conversation, day or month, in
    /// tokens or dollars.
    pub budgets: Vec<toolgate_protocol::budget::Budget>,
}

/// An agent file: the agent's name, model, mode, instructions, tools, permissions,
/// limits and sub-agents.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AgentFile")]
struct RawAgent {
    /// The agent's name: runs, records and metrics carry it.
    name: String,
    /// The model (default `openai:gpt-4o-mini`; `--model` overrides): a name, or a map
    /// with `name` and settings.
    #[serde(default)]
    #[schemars(schema_with = "toolgate_model::ModelSpec::file_schema")]
    model: Option<serde_json::Value>,
    /// Models tried in order when the primary keeps failing.
    #[serde(default)]
    #[schemars(schema_with = "fallback_schema")]
    fallback: Vec<serde_json::Value>,
    /// The context budget: the tokens a request may take, and what makes room.
    #[serde(default)]
    #[schemars(with = "Option<toolgate_model::context::ContextConfig>")]
    context: Option<serde_json::Value>,
    /// How the model sees its tools: `native` (tools in the request) or `xml`
    /// (instructions in the system prompt, calls read from the text).
    #[serde(default)]
    mode: Mode,
    /// The system prompt's instructions.
    #[serde(default)]
    instructions: Option<String>,
    /// A file holding the instructions, relative to the agent file (not with
    /// `instructions`).
    #[serde(default)]
    instructions_file: Option<PathBuf>,
    /// The tools of the library it may call, by name.
    #[serde(default)]
    tools: Vec<String>,
    /// Knowledge bases (of the run's tenant) it searches through the
    /// `search_knowledge` tool.
    #[serde(default)]
    knowledge: Vec<String>,
    /// Permission words or rules by tool, over the tools' own.
    #[serde(default)]
    #[schemars(schema_with = "permissions_schema")]
    permissions: serde_json::Map<String, serde_json::Value>,
    /// Programs or endpoints asked before each call and after each result.
    #[serde(default)]
    #[schemars(schema_with = "toolgate_tool::file_schema::hooks")]
    hooks: Option<serde_json::Value>,
    /// How long an approval may wait for a person.
    #[serde(default)]
    #[schemars(schema_with = "toolgate_tool::file_schema::duration")]
    approval_timeout: Option<serde_json::Value>,
    /// What an approval nobody decided in time becomes.
    #[serde(default)]
    #[schemars(schema_with = "toolgate_tool::file_schema::on_timeout")]
    on_timeout: Option<serde_json::Value>,
    /// Model turns a run may take (default 10).
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_iterations: Option<u32>,
    /// The root for file tools, relative to the agent file.
    #[serde(default)]
    workspace: Option<PathBuf>,
    /// Concurrency limits for its calls (the runner's when absent).
    #[serde(default)]
    limits: Option<LimitConfig>,
    /// What the agent does, for a parent that has it as a sub-agent.
    #[serde(default)]
    description: Option<String>,
    /// Other agents it may hand tasks to: a map (tool name -> agent file, or `{file,
    /// permission, max_depth}`) or a list of the same entries.
    #[serde(default)]
    #[schemars(schema_with = "crate::subagents::file_schema")]
    subagents: Option<serde_json::Value>,
    /// How deep the tree of runs under a run of this agent may go (default 3).
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_depth: Option<u32>,
    /// How calls written as text are read: a dialect name, `auto` (the default), or
    /// `none` (native mode only: the text is not read for calls).
    #[serde(default)]
    dialect: Option<String>,
    /// Its calls' priority under the `priority` strategy: higher goes first (default 0).
    #[serde(default)]
    priority: i32,
    /// Limits on its tools' sandboxes: the stricter of each setting wins.
    #[serde(default)]
    #[schemars(schema_with = "toolgate_tool::file_schema::sandbox_ceiling")]
    sandbox: Option<serde_json::Value>,
    /// Groups one of which decides its calls.
    #[serde(default)]
    approvers: Vec<String>,
    /// Whoever started a run may not decide its calls.
    #[serde(default)]
    four_eyes: bool,
    /// How long an MCP client's CONFIRM call is held for a decision before it is
    /// denied (the gateway's `--approval-timeout` when absent).
    #[serde(default)]
    #[schemars(schema_with = "toolgate_tool::file_schema::duration")]
    mcp_hold: Option<serde_json::Value>,
    /// How many times one identical call (same tool, same arguments) may run in a run
    /// (default 3; 0: no bound); a model that repeats itself more is told so instead.
    #[serde(default)]
    max_repeats: Option<u32>,
    /// What an answer cut by the model's output limit does: `continue` (the default)
    /// or `fail`.
    #[serde(default)]
    #[schemars(with = "Option<crate::guards::OnTruncated>")]
    on_truncated: Option<String>,
    /// Calls run from one answer (0, the default: no bound); the rest are told to wait.
    #[serde(default)]
    max_calls_per_turn: Option<u32>,
    /// Whether the model may, must, or must not call tools.
    #[serde(default)]
    #[schemars(schema_with = "toolgate_model::ToolChoice::file_schema")]
    tool_choice: Option<serde_json::Value>,
    /// Spend limits: one `{per, tokens | usd, on_limit}` or a list of them.
    #[serde(default)]
    #[schemars(schema_with = "crate::budget::file_schema")]
    budget: Option<serde_json::Value>,
}

/// `fallback:`: a list of models.
fn fallback_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let model = toolgate_model::ModelSpec::file_schema(generator);
    schemars::json_schema!({"type": "array", "items": model})
}

/// `permissions:`: tool -> a permission word or rules.
fn permissions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let permission = toolgate_tool::file_schema::permission(generator);
    schemars::json_schema!({"type": "object", "additionalProperties": permission})
}

/// The JSON Schema of an agent file, as [`Agent::load`] reads it.
pub fn file_schema() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<RawAgent>()
}

/// `mcp_hold:` as seconds (`4`) or a duration (`4s`, `1500ms`, `2m`), more than zero.
fn hold_duration(v: &serde_json::Value) -> Result<std::time::Duration, String> {
    let parsed = match v {
        serde_json::Value::Number(n) => n
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(std::time::Duration::from_secs_f64)
            .ok_or_else(|| format!("{n} is not a number of seconds")),
        serde_json::Value::String(s) => {
            toolgate_tool::policy::parse_duration(s).map_err(|e| e.to_string())
        }
        other => Err(format!("{other} is not a duration")),
    };
    match parsed {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("field 'mcp_hold' must be more than zero".into()),
        Err(m) => Err(format!("field 'mcp_hold': {m} (e.g. 4s, 1500ms, 2m)")),
    }
}

/// A broken agent file: which file, which line, what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct AgentError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
    pub kind: AgentErrorKind,
}

/// What kind of fault an agent file has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentErrorKind {
    /// The file cannot be read, or a field is wrong.
    Invalid,
    /// It lists tools the library does not have.
    UnknownTool,
}

/// Where an agent file's faults are reported: the file and its text.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    /// An `Invalid` fault at `line` of the file.
    fn fail(&self, line: Option<usize>, message: String) -> AgentError {
        agent_fault(self.path, line, message)
    }

    /// An `Invalid` fault at the line of the field `keys` names.
    fn at(&self, keys: &[&str], message: String) -> AgentError {
        self.fail(line_of(self.text, keys), message)
    }
}

/// An `Invalid` fault of the agent file at `path`.
fn agent_fault(path: &Path, line: Option<usize>, message: String) -> AgentError {
    AgentError {
        path: path.to_path_buf(),
        line,
        message,
        kind: AgentErrorKind::Invalid,
    }
}

/// Reads the file's text and parses it; a fault names the field and its line.
fn read_raw(path: &Path) -> Result<(String, RawAgent), AgentError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| agent_fault(path, None, format!("cannot read the agent file: {e}")))?;
    let raw: RawAgent = toolgate_tool::user_file::from_yaml(&text)
        .map_err(|fault| agent_fault(path, fault.line, fault.message))?;
    Ok((text, raw))
}

/// `instructions:` or the text of `instructions_file:` (read from `folder`), not both.
fn read_instructions(
    src: &Source<'_>,
    folder: &Path,
    inline: Option<String>,
    file: Option<PathBuf>,
) -> Result<String, AgentError> {
    Ok(match (inline, file) {
        (Some(_), Some(_)) => {
            return Err(src.at(
                &["instructions_file"],
                "give 'instructions' or 'instructions_file', not both".into(),
            ));
        }
        (Some(text), None) => text,
        (None, Some(file)) => {
            let file = folder.join(file);
            std::fs::read_to_string(&file).map_err(|e| {
                src.at(
                    &["instructions_file"],
                    format!(
                        "field 'instructions_file': cannot read {}: {e}",
                        file.display()
                    ),
                )
            })?
        }
        (None, None) => String::new(),
    })
}

/// A model spec of `model:` or `fallback:`, its name in the `PROVIDER:NAME` form.
fn model_spec(v: &serde_json::Value) -> Result<toolgate_model::ModelSpec, String> {
    toolgate_model::ModelSpec::from_value(v)
        .map_err(String::from)
        .and_then(|s| {
            check_model_spec(&s.name)
                .map_err(|e| e.to_string())
                .map(|()| s)
        })
}

/// The models: `model:`, `context:` and `fallback:`.
type Models = (
    Option<toolgate_model::ModelSpec>,
    Option<toolgate_model::context::ContextConfig>,
    Vec<toolgate_model::ModelSpec>,
);

/// Reads `model:`, `context:` and `fallback:`.
fn read_models(src: &Source<'_>, raw: &RawAgent) -> Result<Models, AgentError> {
    let spec = match &raw.model {
        Some(v) => {
            Some(model_spec(v).map_err(|m| src.at(&["model"], format!("field 'model': {m}")))?)
        }
        None => None,
    };
    let context = match &raw.context {
        Some(v) => {
            let c: toolgate_model::context::ContextConfig = serde_json::from_value(v.clone())
                .map_err(|e| src.at(&["context"], format!("field 'context': {e}")))?;
            c.check()
                .map_err(|m| src.at(&["context"], format!("field 'context': {m}")))?;
            Some(c)
        }
        None => None,
    };
    let mut fallback = Vec::with_capacity(raw.fallback.len());
    for (i, v) in raw.fallback.iter().enumerate() {
        let s = model_spec(v).map_err(|m| {
            src.at(
                &["fallback"],
                format!("field 'fallback', entry {}: {m}", i + 1),
            )
        })?;
        fallback.push(s);
    }
    Ok((spec, context, fallback))
}

/// Reads `subagents:` and checks the tool names: none listed twice, no sub-agent named
/// like a tool, `max_depth` at least 1, permissions only for listed tools.
fn read_tools(
    src: &Source<'_>,
    raw: &RawAgent,
    folder: &Path,
) -> Result<crate::subagents::Subagents, AgentError> {
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = raw.tools.iter().find(|t| !seen.insert(t.as_str())) {
        return Err(src.at(
            &["tools"],
            format!("field 'tools': '{dup}' is listed twice"),
        ));
    }
    let subagents = match &raw.subagents {
        Some(v) => {
            crate::subagents::parse(v, folder).map_err(|e| src.at(&["subagents"], e.to_string()))?
        }
        None => Default::default(),
    };
    let sub_tools = subagents.tool_names();
    if let Some(clash) = sub_tools.iter().find(|t| raw.tools.contains(t)) {
        return Err(src.at(
            &["subagents"],
            format!(
                "field 'subagents': '{clash}' is also in 'tools'; a sub-agent's name must be its own"
            ),
        ));
    }
    if raw.max_depth == Some(0) {
        return Err(src.at(
            &["max_depth"],
            "field 'max_depth' must be at least 1".into(),
        ));
    }
    if let Some(bad) = raw
        .permissions
        .keys()
        .find(|k| !raw.tools.contains(k) && !sub_tools.contains(k))
    {
        return Err(src.at(
            &["permissions"],
            format!(
                "field 'permissions': '{bad}' is not in the agent's 'tools' ({})",
                raw.tools
                    .iter()
                    .chain(&sub_tools)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(subagents)
}

/// Permission words and rules by tool.
type Permissions = (
    HashMap<String, Permission>,
    HashMap<String, toolgate_tool::policy::Rules>,
);

/// Reads `permissions:`: a word, rules, or both, for each tool.
fn read_permissions(src: &Source<'_>, raw: &RawAgent) -> Result<Permissions, AgentError> {
    let mut permissions = HashMap::new();
    let mut rules = HashMap::new();
    for (tool, value) in &raw.permissions {
        let (word, tool_rules) =
            toolgate_tool::policy::read_permission(value).map_err(|(k, m)| {
                let mut keys = vec!["permissions", tool.as_str()];
                keys.extend(k.iter().map(String::as_str));
                src.at(&keys, format!("field 'permissions': '{tool}': {m}"))
            })?;
        if let Some(word) = word {
            permissions.insert(tool.clone(), word);
        }
        if let Some(r) = tool_rules {
            rules.insert(tool.clone(), r);
        }
    }
    Ok((permissions, rules))
}

/// The agent's policy: rules by tool, its hooks and the deadline of its approvals.
fn read_policy(
    src: &Source<'_>,
    raw: &RawAgent,
    folder: &Path,
    rules: HashMap<String, toolgate_tool::policy::Rules>,
) -> Result<toolgate_tool::policy::AgentPolicy, AgentError> {
    let (hooks, deadline) = toolgate_tool::policy::read_extras(
        raw.hooks.as_ref(),
        raw.approval_timeout.as_ref(),
        raw.on_timeout.as_ref(),
        folder,
    )
    .map_err(|(k, m)| {
        let keys: Vec<&str> = k.iter().map(String::as_str).collect();
        src.at(
            &keys,
            format!("field '{}': {m}", k.first().map_or("hooks", String::as_str)),
        )
    })?;
    Ok(toolgate_tool::policy::AgentPolicy {
        rules,
        hooks,
        deadline,
    })
}

/// The settings of how it runs: `dialect:`, `sandbox:` and `mcp_hold:`.
type Settings = (
    toolgate_parse::Dialect,
    Option<toolgate_sandbox::Ceiling>,
    Option<std::time::Duration>,
);

/// Reads `dialect:`, `sandbox:` and `mcp_hold:`.
fn read_settings(src: &Source<'_>, raw: &RawAgent, folder: &Path) -> Result<Settings, AgentError> {
    let dialect = match raw.dialect.as_deref() {
        // `none` reads no calls from a native answer's text; xml mode cannot do without.
        Some("none") if raw.mode == Mode::Xml => {
            return Err(src.at(
                &["dialect"],
                "field 'dialect': 'none' is for mode: native (xml mode reads its calls from text)"
                    .into(),
            ));
        }
        Some(d) if d != "none" => d
            .parse()
            .map_err(|m: String| src.at(&["dialect"], format!("field 'dialect': {m}, or none")))?,
        _ => toolgate_parse::Dialect::Auto,
    };
    let sandbox = match &raw.sandbox {
        Some(v) => Some(
            toolgate_sandbox::Ceiling::parse(v, folder)
                .map_err(|(key, m)| src.at(&["sandbox", &key], format!("field 'sandbox': {m}")))?,
        ),
        None => None,
    };
    let mcp_hold = match &raw.mcp_hold {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(hold_duration(v).map_err(|m| src.at(&["mcp_hold"], m))?),
    };
    Ok((dialect, sandbox, mcp_hold))
}

/// A scripted model's file, found next to the agent file (in `folder`).
fn beside(folder: &Path, m: String) -> String {
    match m.split_once(':') {
        Some(("scripted", file)) if Path::new(file).is_relative() => {
            format!("scripted:{}", folder.join(file).display())
        }
        _ => m,
    }
}

impl Agent {
    /// Reads and checks an agent file.
    pub fn load(path: &Path) -> Result<Agent, AgentError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let (text, mut raw) = read_raw(&path)?;
        let src = Source {
            path: &path,
            text: &text,
        };
        let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if raw.name.trim().is_empty() {
            return Err(src.at(&["name"], "field 'name' is empty".into()));
        }
        let instructions = read_instructions(
            &src,
            &folder,
            raw.instructions.take(),
            raw.instructions_file.take(),
        )?;
        if raw.max_iterations == Some(0) {
            return Err(src.at(
                &["max_iterations"],
                "field 'max_iterations' must be at least 1".into(),
            ));
        }
        let (spec, context, mut fallback) = read_models(&src, &raw)?;
        let subagents = read_tools(&src, &raw, &folder)?;
        let (permissions, rules) = read_permissions(&src, &raw)?;
        let policy = read_policy(&src, &raw, &folder, rules)?;
        let (dialect, sandbox, mcp_hold) = read_settings(&src, &raw, &folder)?;
        let mut guards =
            crate::guards::LoopGuards::read(raw.max_repeats, raw.on_truncated.as_deref())
                .map_err(|(key, m)| src.at(&[key], m))?;
        guards.max_calls_per_turn = raw.max_calls_per_turn.unwrap_or(0);
        let tool_choice = match &raw.tool_choice {
            None => toolgate_model::ToolChoice::Auto,
            Some(v) => toolgate_model::ToolChoice::read(v)
                .map_err(|e| src.at(&["tool_choice"], format!("field 'tool_choice': {e}")))?,
        };
        let budgets = crate::budget::read(raw.budget.as_ref())
            .map_err(|m| src.at(&["budget"], format!("field 'budget': {m}")))?;
        let (model, model_settings) = match spec {
            Some(s) => (Some(beside(&folder, s.name)), s.settings),
            None => (None, Default::default()),
        };
        for f in &mut fallback {
            f.name = beside(&folder, std::mem::take(&mut f.name));
        }
        Ok(Agent {
            name: raw.name,
            model,
            model_settings,
            context,
            fallback,
            mode: raw.mode,
            instructions,
            tools: raw.tools,
            knowledge: raw.knowledge,
            permissions,
            policy,
            max_iterations: raw.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
            workspace: raw.workspace.map(|w| folder.join(w)),
            path,
            limits: raw.limits,
            description: raw.description.unwrap_or_default(),
            subagents,
            max_depth: raw.max_depth.unwrap_or(crate::subagents::DEFAULT_MAX_DEPTH),
            dialect,
            text_calls: raw.dialect.as_deref() != Some("none"),
            guards,
            tool_choice,
            priority: raw.priority,
            sandbox,
            decision_rule: toolgate_protocol::identity::DecisionRule {
                approvers: raw.approvers,
                four_eyes: raw.four_eyes,
            },
            mcp_hold,
            budgets,
        })
    }

    /// The agent's view of `library`; an unknown tool name is an error on the `tools`
    /// field.
    pub fn toolkit(&self, library: &Arc<ToolLibrary>) -> Result<Toolkit, AgentError> {
        self.toolkit_with(library, Vec::new())
    }

    /// [`Agent::toolkit`] with `more` tools of the program's own (the runner's
    /// `search_knowledge`, which needs its store), each given to the agent.
    pub fn toolkit_with(
        &self,
        library: &Arc<ToolLibrary>,
        more: Vec<Arc<dyn toolgate_tool::Tool>>,
    ) -> Result<Toolkit, AgentError> {
        let mut extra = self.subagents.tools();
        let mut extra_names = self.subagents.tool_names();
        for tool in more {
            extra_names.push(tool.spec().name.clone());
            extra.push(tool);
        }
        // `read_result` pages through cut results: offered with a `context:` budget, or
        // when the agent lists it.
        let read_result = crate::run::READ_RESULT;
        if (self.context.is_some() || self.tools.iter().any(|t| t == read_result))
            && library.get(read_result).is_none()
        {
            extra.push(crate::run::read_result_tool());
            if !self.tools.iter().any(|t| t == read_result) {
                extra_names.push(read_result.to_string());
            }
        }
        let (library, names) = if extra.is_empty() {
            (Arc::clone(library), self.tools.clone())
        } else {
            let extended = library.extended(extra).map_err(|e| AgentError {
                path: self.path.clone(),
                line: None,
                message: e.to_string(),
                kind: AgentErrorKind::Invalid,
            })?;
            let mut names = self.tools.clone();
            names.extend(extra_names);
            (Arc::new(extended), names)
        };
        library
            .toolkit(&names, self.permissions.clone())
            .map(|kit| kit.with_policy(Arc::new(self.policy.clone())))
            .map(|kit| match &self.sandbox {
                Some(ceiling) => kit.confined(ceiling),
                None => kit,
            })
            .map_err(|e| AgentError {
                line: std::fs::read_to_string(&self.path)
                    .ok()
                    .and_then(|t| line_of(&t, &["tools"])),
                path: self.path.clone(),
                kind: match e {
                    ToolkitError::UnknownTools(_) => AgentErrorKind::UnknownTool,
                    ToolkitError::StrayPermission(_) => AgentErrorKind::Invalid,
                },
                message: format!("field 'tools': {e}"),
            })
    }
}

/// A model spec as shown outside the process (run objects, events, the API): a
/// `scripted:` file by its name only, never the folders of the host it sits on.
pub fn shown_model(spec: &str) -> String {
    match spec.strip_prefix("scripted:") {
        Some(path) => format!(
            "scripted:{}",
            std::path::Path::new(path)
                .file_name()
                .map_or_else(|| path.into(), |n| n.to_string_lossy())
        ),
        None => spec.to_string(),
    }
}

/// Checks the form of a model name: `PROVIDER:NAME` (`openai:NAME`, `anthropic:NAME`,
/// `scripted:FILE`, or a provider the program registered; whether the provider is
/// there is checked when a run starts, against the runner's [`Providers`]).
///
/// [`Providers`]: toolgate_model::Providers
pub fn check_model_spec(spec: &str) -> Result<(), ModelSpecError> {
    let provider = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    match spec.split_once(':') {
        Some((p, rest)) if provider(p) && !rest.trim().is_empty() => Ok(()),
        _ => Err(ModelSpecError {
            spec: spec.to_string(),
        }),
    }
}

/// A model name not in the `PROVIDER:NAME` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{spec}' is not a model; use openai:NAME (for example {DEFAULT_MODEL}), anthropic:NAME or scripted:FILE"
)]
pub struct ModelSpecError {
    /// The name as given.
    pub spec: String,
}
