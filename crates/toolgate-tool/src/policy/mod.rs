//! Approval that fits the risk: a tool's policy beyond its permission word. Rules on
//! the arguments (CEL, compiled at load), guardrail hooks around each call, and the
//! deadline of its approvals, as an agent file and a tool file write them. The gate
//! ([`crate::permission`]) reads the rules; the loop runs the hooks and the deadlines.

pub mod deadline;
pub mod hooks;
pub mod rules;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

pub use deadline::{Deadline, OnTimeout, parse_duration};
pub use hooks::{Before, BeforeAnswer, Hook, HookError, HookRequest, Hooks};
pub use rules::{Facts, Rule, Rules, Ruling};

use crate::Permission;

/// A tool's own policy, from its tool file (the default every agent starts from).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    pub rules: Option<Rules>,
    pub hooks: Hooks,
    pub deadline: Option<Deadline>,
    /// How its calls are tried again (`retry:` in its tool file or source file).
    pub retry: Option<crate::retry::RetryPolicy>,
    /// How long its results are kept (`cache:`; read-only tools only).
    pub cache: Option<crate::cache::CachePolicy>,
}

/// An agent's policy, from its file: rules by tool (an agent's entry for a tool
/// replaces the tool file's), hooks around every call, and a deadline for every
/// approval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentPolicy {
    pub rules: HashMap<String, Rules>,
    pub hooks: Hooks,
    pub deadline: Option<Deadline>,
}

/// A fault in a file's policy: the keys leading to it (below the entry read), and what
/// is wrong.
pub type KeyError = (Vec<String>, String);

/// A permission as written: a word (`auto`, `confirm`, `never`) or a map of rules.
/// Returns the word (the rules' `otherwise`, if any) and the rules. An error names the
/// key at fault below the entry.
pub fn read_permission(value: &Value) -> Result<(Option<Permission>, Option<Rules>), KeyError> {
    match value {
        Value::String(_) => serde_json::from_value(value.clone())
            .map(|p| (Some(p), None))
            .map_err(|_| {
                (
                    vec![],
                    format!(
                        "{value} is not auto, confirm, never or a map of rules ({})",
                        rules::KEYS.join(", ")
                    ),
                )
            }),
        Value::Object(map) => {
            let rules = Rules::parse(map).map_err(|(k, m)| (vec![k], m))?;
            Ok((rules.otherwise, Some(rules)))
        }
        other => Err((
            vec![],
            format!("{other} is not auto, confirm, never or a map of rules"),
        )),
    }
}

/// Reads the policy keys a tool file or an agent file may hold besides `permission`:
/// `hooks`, `approval_timeout`, `on_timeout`. An error names the keys at fault.
pub fn read_extras(
    hooks: Option<&Value>,
    approval_timeout: Option<&Value>,
    on_timeout: Option<&Value>,
    folder: &Path,
) -> Result<(Hooks, Option<Deadline>), KeyError> {
    let hooks = match hooks {
        None | Some(Value::Null) => Hooks::default(),
        Some(v) => Hooks::parse(v, folder).map_err(|(k, m)| {
            let mut keys = vec!["hooks".to_string()];
            keys.extend(k);
            (keys, m)
        })?,
    };
    let deadline =
        Deadline::read(approval_timeout, on_timeout).map_err(|(k, m)| (vec![k.to_string()], m))?;
    Ok((hooks, deadline))
}
