//! Sub-agents in agent files: the `subagents:` field (a map whose keys are tools this
//! agent gets, or a list behind one routing tool, `call_subagent`), and the specs of
//! those tools. A sub-agent call runs as a child run (see `run::subagent`); the tool
//! here only describes it to the model and is never invoked by the engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use toolgate_tool::{Entry, Permission, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The routing tool of an agent that lists its sub-agents without naming each as a tool.
pub const ROUTER: &str = "call_subagent";

/// How deep a tree of runs may go when no agent file says (the top run is depth 0).
pub const DEFAULT_MAX_DEPTH: u32 = 3;

/// The tool category of sub-agent calls, for the concurrency limits.
pub const CATEGORY: &str = "subagent";

/// One sub-agent an agent may hand work to.
#[derive(Debug, Clone, PartialEq)]
pub struct Subagent {
    /// The tool the model calls (map form), or the name `agent_name` takes (list form).
    pub name: String,
    /// The sub-agent's agent file, absolute.
    pub file: PathBuf,
    pub permission: Permission,
    /// How many levels may run below this agent's run through this sub-agent (1: the
    /// child only); the agent's own bound applies too.
    pub max_depth: Option<u32>,
    /// The sub-agent's `description`, shown to the model.
    pub description: String,
}

/// The sub-agents of an agent file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Subagents {
    pub list: Vec<Subagent>,
    /// Listed without names: one `call_subagent(agent_name, task)` tool routes to them.
    pub routed: bool,
}

impl Subagents {
    /// The sub-agent a call goes to, when it is a sub-agent call: the tool's own, or
    /// the one `call_subagent` names (`Err`: a routing call naming none of them).
    pub fn target(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Option<Result<&Subagent, NoSubagent>> {
        if self.list.is_empty() {
            return None;
        }
        if self.routed {
            if tool != ROUTER {
                return None;
            }
            let wanted = args.get("agent_name").and_then(Value::as_str).unwrap_or("");
            return Some(
                self.list
                    .iter()
                    .find(|s| s.name == wanted)
                    .ok_or_else(|| NoSubagent {
                        wanted: wanted.to_string(),
                        names: self.names().join(", "),
                    }),
            );
        }
        self.list.iter().find(|s| s.name == tool).map(Ok)
    }

    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|s| s.name.clone()).collect()
    }

    /// The tools the model sees for these sub-agents.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        if self.list.is_empty() {
            return Vec::new();
        }
        if self.routed {
            let mut description = String::from(
                "Hands a task to a sub-agent and returns its final answer. The sub-agents:",
            );
            for s in &self.list {
                description.push_str(&format!("\n- {}: {}", s.name, about(s)));
            }
            let parameters = json!({
                "type": "object",
                "properties": {
                    "agent_name": {"type": "string", "enum": self.names(), "description": "The sub-agent to hand the task to."},
                    "task": {"type": "string", "description": "The task, with everything the sub-agent needs to know."}
                },
                "required": ["agent_name", "task"]
            });
            return vec![Arc::new(SubagentTool(spec(
                ROUTER,
                description,
                parameters,
                Permission::Auto,
            )))];
        }
        self.list
            .iter()
            .map(|s| {
                let parameters = json!({
                    "type": "object",
                    "properties": {
                        "task": {"type": "string", "description": "The task, with everything the sub-agent needs to know."}
                    },
                    "required": ["task"]
                });
                Arc::new(SubagentTool(spec(&s.name, about(s), parameters, s.permission)))
                    as Arc<dyn Tool>
            })
            .collect()
    }

    /// The tool names these sub-agents add to the agent's toolkit.
    pub fn tool_names(&self) -> Vec<String> {
        match (self.list.is_empty(), self.routed) {
            (true, _) => Vec::new(),
            (false, true) => vec![ROUTER.to_string()],
            (false, false) => self.names(),
        }
    }
}

fn about(s: &Subagent) -> String {
    if s.description.trim().is_empty() {
        format!(
            "Hands a task to the sub-agent '{}' and returns its final answer.",
            s.name
        )
    } else {
        s.description.trim().to_string()
    }
}

fn spec(name: &str, description: String, parameters: Value, permission: Permission) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description,
        parameters,
        permission,
        entry: Entry::Builtin {
            handler: "subagent".into(),
        },
        category: Some(CATEGORY.to_string()),
        timeout: None,
        tags: vec!["subagent".into()],
        version: None,
        read_only: false,
        output: None,
        credentials: Default::default(),
        is_final: false,
        hidden: false,
        sandbox: None,
        display: Default::default(),
    }
}

/// A sub-agent tool as the library holds it: the run loop carries its calls out as
/// child runs, so the engine never calls it.
struct SubagentTool(ToolSpec);

#[async_trait]
impl Tool for SubagentTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, _: &ToolContext, _: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Execution(format!(
            "'{}' hands work to a sub-agent; it runs only inside an agent run",
            self.0.name
        )))
    }
}

/// A routing call naming none of the agent's sub-agents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("there is no sub-agent '{wanted}'; call_subagent takes one of: {names}")]
pub struct NoSubagent {
    /// The name the call gave.
    pub wanted: String,
    /// The sub-agents' names, joined with `, `.
    pub names: String,
}

/// A broken `subagents:` field; each message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubagentsError {
    /// Neither a map nor a list.
    #[error("field 'subagents': expected a map (tool name -> agent file) or a list of agent files")]
    Shape,
    /// One entry is wrong (`at`: `'name'` or `an entry`).
    #[error("field 'subagents': {at}: {problem}")]
    Entry { at: String, problem: String },
    /// Two entries have the same name.
    #[error("field 'subagents': '{name}' is listed twice")]
    Twice { name: String },
}

/// The JSON Schema of what [`parse`] reads.
pub fn file_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let permission = generator.subschema_for::<Permission>();
    let entry = schemars::json_schema!({
        "anyOf": [
            {"type": "string", "description": "The sub-agent's file, relative to this one."},
            {
                "type": "object",
                "properties": {
                    "file": {"type": "string", "description": "The sub-agent's file, relative to this one."},
                    "permission": permission,
                    "max_depth": {"type": "integer", "minimum": 1}
                },
                "required": ["file"],
                "additionalProperties": false
            }
        ]
    });
    schemars::json_schema!({
        "anyOf": [
            {"type": "object", "additionalProperties": entry, "description": "Tool name -> sub-agent."},
            {"type": "array", "items": entry, "description": "Sub-agents behind `call_subagent`."},
            {"type": "null"}
        ]
    })
}

/// Reads the `subagents:` field of the agent file in `folder`: a map (tool name ->
/// file, or `{file, permission, max_depth}`) or a list of the same entries. Each
/// sub-agent file is read for its name and description only, so that agents naming
/// each other load without end.
pub fn parse(value: &Value, folder: &Path) -> Result<Subagents, SubagentsError> {
    let mut out = Subagents::default();
    let entries: Vec<(Option<String>, &Value)> = match value {
        Value::Null => return Ok(out),
        Value::Object(map) => map.iter().map(|(k, v)| (Some(k.clone()), v)).collect(),
        Value::Array(list) => {
            out.routed = true;
            list.iter().map(|v| (None, v)).collect()
        }
        _ => return Err(SubagentsError::Shape),
    };
    for (key, entry) in entries {
        let at = key
            .clone()
            .map(|k| format!("'{k}'"))
            .unwrap_or_else(|| "an entry".into());
        let fault = |problem: String| SubagentsError::Entry {
            at: at.clone(),
            problem,
        };
        let (file, permission, max_depth) = read_entry(entry).map_err(fault)?;
        let path = std::path::absolute(folder.join(&file)).unwrap_or_else(|_| folder.join(&file));
        let (name, description) = peek(&path).map_err(fault)?;
        let name = key.unwrap_or(name);
        if out.list.iter().any(|s| s.name == name) {
            return Err(SubagentsError::Twice { name });
        }
        out.list.push(Subagent {
            name,
            file: path,
            permission,
            max_depth,
            description,
        });
    }
    Ok(out)
}

/// One entry of `subagents:`: its file, permission and `max_depth`; `Err` says what is
/// wrong with it.
fn read_entry(entry: &Value) -> Result<(String, Permission, Option<u32>), String> {
    Ok(match entry {
        Value::String(f) => (f.clone(), Permission::Auto, None),
        Value::Object(o) => {
            if let Some(bad) = o
                .keys()
                .find(|k| !["file", "permission", "max_depth"].contains(&k.as_str()))
            {
                return Err(format!(
                    "unknown field '{bad}' (file, permission, max_depth)"
                ));
            }
            let file = o
                .get("file")
                .and_then(Value::as_str)
                .ok_or_else(|| "'file' (the agent file) is missing".to_string())?;
            let permission = match o.get("permission") {
                None => Permission::Auto,
                Some(p) => serde_json::from_value(p.clone())
                    .map_err(|_| "permission must be auto, confirm or never".to_string())?,
            };
            let max_depth = match o.get("max_depth") {
                None => None,
                Some(d) => match d.as_u64() {
                    Some(n) if n >= 1 => Some(n as u32),
                    _ => {
                        return Err("max_depth must be a whole number of at least 1".into());
                    }
                },
            };
            (file.to_string(), permission, max_depth)
        }
        _ => {
            return Err("expected an agent file or {file, permission, max_depth}".into());
        }
    })
}

/// An agent file's name and description, without reading anything it names.
fn peek(path: &Path) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: Value = serde_saphyr::from_str(&text).map_err(|e| {
        format!(
            "{}: {}",
            path.display(),
            toolgate_tool::folder::first_line(&e.to_string())
        )
    })?;
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();
    if name.is_empty() {
        return Err(format!("{}: field 'name' is missing", path.display()));
    }
    let description = value
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Ok((name, description))
}
