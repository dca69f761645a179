//! `Toolkit`, one agent's view of the tool library: the tools it was given, by name,
//! with its own permission overrides, its policy (rules, hooks, deadline), its
//! sandbox ceiling, and the allow-list of the caller it runs for (tools outside it are
//! not offered to the model, and the gate refuses their calls). A toolkit never
//! reaches a tool it was not given.

use std::collections::HashMap;
use std::sync::Arc;

use super::library::{LoadedTool, ToolLibrary};
use super::output::ToolError;
use super::spec::Permission;
use crate::policy::{AgentPolicy, Deadline, Facts, Hook, Ruling, rules::word};
use toolgate_parse::Schemas;
use toolgate_protocol::allow::Allow;

/// One agent's tools.
#[derive(Clone)]
pub struct Toolkit {
    library: Arc<ToolLibrary>,
    names: Vec<String>,
    overrides: HashMap<String, Permission>,
    /// The agent's rules, hooks and deadline.
    policy: Arc<AgentPolicy>,
    /// Tools whose sandbox the agent's made stricter, in place of the library's.
    confined: HashMap<String, Arc<LoadedTool>>,
    /// Tools the run's client declared (definition-only), after the agent's.
    client: HashMap<String, Arc<LoadedTool>>,
    /// The tools the run's caller may use (its key's or token's list met with its
    /// tenant's).
    allow: Allow,
}

impl Toolkit {
    /// The tools `names` of `library`, with the agent's `overrides`; no policy yet.
    pub(super) fn new(
        library: Arc<ToolLibrary>,
        names: Vec<String>,
        overrides: HashMap<String, Permission>,
    ) -> Toolkit {
        Toolkit {
            library,
            names,
            overrides,
            policy: Arc::default(),
            confined: HashMap::new(),
            client: HashMap::new(),
            allow: Allow::default(),
        }
    }

    /// The toolkit for a caller limited to `allow` (met with any limit it had): a tool
    /// outside it is not offered ([`Toolkit::tools`]), and the gate refuses its calls
    /// (it still resolves, so that the refusal is recorded as the policy's).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolgate_protocol::allow::Allow;
    /// use toolgate_tool::permission::{Gate, Who};
    /// use toolgate_tool::{Permission, ToolLibrary};
    /// # use serde_json::{Map, Value, json};
    /// # use toolgate_tool::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
    /// # struct Noop(ToolSpec);
    /// # #[async_trait::async_trait]
    /// # impl Tool for Noop {
    /// #     fn spec(&self) -> &ToolSpec { &self.0 }
    /// #     async fn call(&self, _: &ToolContext, _: Map<String, Value>) -> Result<ToolOutput, ToolError> {
    /// #         Ok(ToolOutput::text(""))
    /// #     }
    /// # }
    /// # let mut library = ToolLibrary::default();
    /// # for name in ["x", "y"] {
    /// #     let spec = ToolSpec::new(name, "", Permission::Auto, json!({"type": "object"}));
    /// #     library.add(Arc::new(Noop(spec))).unwrap();
    /// # }
    /// let kit = Arc::new(library)
    ///     .toolkit(&["x".into(), "y".into()], Default::default())
    ///     .unwrap()
    ///     .limited(&Allow { agents: None, tools: Some(vec!["x".into()]) });
    /// let offered: Vec<&str> = kit.tools().iter().map(|t| t.spec.name.as_str()).collect();
    /// assert_eq!(offered, ["x"]);
    /// let call = |name: &str| toolgate_parse::ToolCall { id: "c1".into(), name: name.into(), arguments: Map::new() };
    /// assert_eq!(Gate::judge(&kit, &call("x"), &[], &Who::default()).gate, Gate::Run);
    /// let refused = Gate::judge(&kit, &call("y"), &[], &Who::default());
    /// assert_eq!(refused.gate, Gate::Refuse);
    /// assert!(refused.reason.unwrap().starts_with("allow-list"));
    /// ```
    pub fn limited(mut self, allow: &Allow) -> Toolkit {
        self.allow = self.allow.meet(allow);
        self
    }

    /// Whether the run's caller may use tool `name`: the gate refuses a call of a tool
    /// it may not, and such a tool is not offered.
    pub fn allows(&self, name: &str) -> bool {
        self.allow.tool(name)
    }

    /// The toolkit with the client's own tools added after the agent's. A name the
    /// agent's toolkit has already is refused, naming it: a client tool never stands in
    /// for one toolgate runs.
    pub fn with_client_tools(
        mut self,
        tools: &[super::ClientTool],
    ) -> Result<Toolkit, ClientToolsError> {
        for tool in tools {
            if self.names.iter().any(|n| n == &tool.name) {
                return Err(ClientToolsError::DeclaredTwice {
                    name: tool.name.clone(),
                    names: self.names.join(", "),
                });
            }
            let loaded = tool.loaded()?;
            self.names.push(tool.name.clone());
            self.client.insert(tool.name.clone(), Arc::new(loaded));
        }
        Ok(self)
    }

    /// The toolkit with `ceiling` (an agent's `sandbox:`) over the sandbox of each tool
    /// that starts programs: for each setting, the stricter of the two.
    pub fn confined(mut self, ceiling: &toolgate_sandbox::Ceiling) -> Toolkit {
        for name in &self.names {
            let Some(tool) = self.library.get(name) else {
                continue;
            };
            let Some(policy) = &tool.spec.sandbox else {
                continue;
            };
            let met = policy.meet(ceiling);
            if met != *policy
                && let Some(stricter) = tool.with_sandbox(met)
            {
                self.confined.insert(name.clone(), Arc::new(stricter));
            }
        }
        self
    }

    /// The library's tool `name`, or the agent's stricter version of it.
    fn get(&self, name: &str) -> Option<&Arc<LoadedTool>> {
        self.confined
            .get(name)
            .or_else(|| self.client.get(name))
            .or_else(|| self.library.get(name))
    }

    /// The tool `name`, if this toolkit has it; otherwise an error for the model that
    /// names the tools it does have.
    pub fn resolve(&self, name: &str) -> Result<&Arc<LoadedTool>, ToolError> {
        if self.names.iter().any(|n| n == name)
            && let Some(t) = self.get(name)
        {
            return Ok(t);
        }
        Err(ToolError::NotFound {
            name: name.to_string(),
            available: self
                .names
                .iter()
                .filter(|n| self.allows(n))
                .cloned()
                .collect(),
        })
    }

    /// The permission for `name` in this toolkit: the agent's override, else the
    /// tool's; `Never` for a tool the toolkit was not given.
    pub fn permission(&self, name: &str) -> Permission {
        if !self.names.iter().any(|n| n == name) {
            return Permission::Never;
        }
        self.overrides
            .get(name)
            .copied()
            .or_else(|| self.get(name).map(|t| t.spec.permission))
            .unwrap_or(Permission::Never)
    }

    /// This toolkit with the agent's rules, hooks and deadline.
    pub fn with_policy(mut self, policy: Arc<AgentPolicy>) -> Toolkit {
        self.policy = policy;
        self
    }

    /// What the policy says about one call of `name` (its arguments in `facts`): the
    /// agent's word or rules for the tool, else the tool file's rules, else its word;
    /// and which of them said it.
    pub fn ruling(&self, name: &str, facts: &Facts<'_>) -> Ruling {
        let Some(tool) = self.resolve(name).ok() else {
            return Ruling {
                permission: Permission::Never,
                reason: format!("'{name}' is not one of this agent's tools"),
            };
        };
        let said = |permission: Permission| Ruling {
            permission,
            reason: format!("permission: {}", word(permission)),
        };
        if let Some(p) = self.overrides.get(name)
            && !self.policy.rules.contains_key(name)
        {
            return said(*p);
        }
        match self.policy.rules.get(name).or(tool.policy.rules.as_ref()) {
            Some(rules) => rules.decide(facts, tool.spec.permission),
            None => said(tool.spec.permission),
        }
    }

    /// The hooks a call of `name` goes through, the tool's first, then the agent's:
    /// `before_call` ones (`after: false`) or `after_result` ones.
    pub fn hooks(&self, name: &str, after: bool) -> Vec<&Hook> {
        fn pick(h: &crate::policy::Hooks, after: bool) -> Option<&Hook> {
            if after {
                h.after_result.as_ref()
            } else {
                h.before_call.as_ref()
            }
        }
        let tool = self.get(name).and_then(|t| pick(&t.policy.hooks, after));
        let agent = pick(&self.policy.hooks, after);
        tool.into_iter().chain(agent).collect()
    }

    /// The approval deadline for a call of `name`: the shorter of the agent's and the
    /// tool's.
    pub fn deadline(&self, name: &str) -> Option<Deadline> {
        let tool = self.get(name).and_then(|t| t.policy.deadline);
        Deadline::stricter(self.policy.deadline, tool)
    }

    /// A short fingerprint of everything that decides about `name` (its word, rules and
    /// hooks, the agent's and the tool's): a standing approval holds while it is the
    /// same.
    pub fn fingerprint(&self, name: &str) -> String {
        use sha2::Digest;
        let mut text = format!("in={};", self.names.iter().any(|n| n == name));
        if let Some(p) = self.overrides.get(name) {
            text.push_str(&format!("agent={};", word(*p)));
        }
        if let Some(r) = self.policy.rules.get(name) {
            text.push_str(&format!("agent_rules={};", r.describe()));
        }
        text.push_str(&format!("agent_hooks={};", self.policy.hooks.describe()));
        if let Some(t) = self.get(name) {
            text.push_str(&format!("tool={};", word(t.spec.permission)));
            if let Some(r) = &t.policy.rules {
                text.push_str(&format!("tool_rules={};", r.describe()));
            }
            text.push_str(&format!("tool_hooks={};", t.policy.hooks.describe()));
            text.push_str(&format!("client={};", t.definition_only()));
        }
        let digest = sha2::Sha256::digest(text.as_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// The tools offered, in the order the agent lists them: those the caller may use.
    pub fn tools(&self) -> Vec<&Arc<LoadedTool>> {
        self.names
            .iter()
            .filter(|n| self.allows(n))
            .filter_map(|n| self.get(n))
            .collect()
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Name -> parameter schema, for the parser.
    pub fn schemas(&self) -> Schemas {
        self.tools()
            .into_iter()
            .map(|t| (t.spec.name.clone(), t.schema.coercion_schema().clone()))
            .collect()
    }
}

/// Why a toolkit could not be made from a list of names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolkitError {
    /// Names the library does not have (the message lists the ones it has).
    #[error("{0}")]
    UnknownTools(String),
    /// A permission override for a tool that is not in the list.
    #[error("{0}")]
    StrayPermission(String),
}

/// Why a client's tools cannot be added to a toolkit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientToolsError {
    /// A client tool with the name of one of the agent's tools (`names`: the agent's).
    #[error(
        "tool '{name}' is declared twice: the agent has a tool of that name (its tools: {names})"
    )]
    DeclaredTwice { name: String, names: String },
    /// A client tool that cannot be used.
    #[error(transparent)]
    Client(#[from] super::client::ClientToolError),
}

impl From<ClientToolsError> for String {
    fn from(e: ClientToolsError) -> String {
        e.to_string()
    }
}
