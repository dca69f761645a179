//! The gate: for each resolved call, whether it runs now, waits for a person, waits
//! for the client's output, or is refused without asking: the caller's allow-list
//! (see [`Toolkit::limited`]), then the permission word, or the rules on its arguments
//! (see [`crate::policy`]), decide. Pure: no I/O.

use serde::{Deserialize, Serialize};

use crate::policy::Facts;
use crate::{Permission, Toolkit};
use toolgate_parse::ToolCall;

/// The gate's answer for one call, and the rule that gave it (`confirm_if: args.amount
/// > 1000`, `permission: never`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub gate: Gate,
    pub reason: Option<String>,
}

/// Who a call is for, as rules see it (`agent`, `user`, `tenant`; empty when unknown).
#[derive(Debug, Clone, Copy, Default)]
pub struct Who<'a> {
    pub agent: &'a str,
    pub user: &'a str,
    pub tenant: &'a str,
}

/// What happens to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Runs at once (AUTO, a standing approval, or a call that can only fail: an
    /// unknown tool or invalid arguments go back to the model as an error result).
    Run,
    /// CONFIRM: waits for a decision.
    Approval,
    /// Definition-only: waits for the client's output.
    Client,
    /// `never`: refused without asking.
    Refuse,
}

impl Gate {
    /// Decides for `call` in `toolkit`; `standing` lists the tools the conversation has
    /// approved for good.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolgate_tool::permission::Gate;
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
    /// # fn library(names: &[&str]) -> ToolLibrary {
    /// #     let mut library = ToolLibrary::default();
    /// #     for name in names {
    /// #         let spec = ToolSpec::new(name, "", Permission::Auto, json!({"type": "object"}));
    /// #         library.add(Arc::new(Noop(spec))).unwrap();
    /// #     }
    /// #     library
    /// # }
    /// let library = Arc::new(library(&["echo", "shell"]));
    /// let kit = library
    ///     .toolkit(&["echo".into(), "shell".into()], [("shell".to_string(), Permission::Confirm)].into())
    ///     .unwrap();
    /// let arguments = serde_json::json!({"command": "ls"}).as_object().unwrap().clone();
    /// let call = toolgate_parse::ToolCall { id: "c1".into(), name: "shell".into(), arguments };
    /// assert_eq!(Gate::decide(&kit, &call, &[]), Gate::Approval);
    /// assert_eq!(Gate::decide(&kit, &call, &["shell".to_string()]), Gate::Run);
    /// ```
    pub fn decide(toolkit: &Toolkit, call: &ToolCall, standing: &[String]) -> Gate {
        Gate::judge(toolkit, call, standing, &Who::default()).gate
    }

    /// [`Gate::decide`], with the rule that decided: the permission word, or the agent's
    /// or tool's rules on the arguments (deny_if, confirm_if, auto_if, otherwise).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolgate_tool::permission::{Gate, Who};
    /// use toolgate_tool::policy::{AgentPolicy, Rules};
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
    /// # fn library(names: &[&str]) -> ToolLibrary {
    /// #     let mut library = ToolLibrary::default();
    /// #     for name in names {
    /// #         let spec = ToolSpec::new(name, "", Permission::Auto, json!({"type": "object"}));
    /// #         library.add(Arc::new(Noop(spec))).unwrap();
    /// #     }
    /// #     library
    /// # }
    /// let rules = serde_json::json!({"auto_if": "args.path.startsWith('drafts/')", "otherwise": "confirm"});
    /// let rules = Rules::parse(rules.as_object().unwrap()).unwrap();
    /// let policy = AgentPolicy { rules: [("write_file".to_string(), rules)].into(), ..Default::default() };
    /// let kit = Arc::new(library(&["write_file"]))
    ///     .toolkit(&["write_file".into()], Default::default())
    ///     .unwrap()
    ///     .with_policy(Arc::new(policy));
    /// let call = |path: &str| toolgate_parse::ToolCall {
    ///     id: "c1".into(),
    ///     name: "write_file".into(),
    ///     arguments: serde_json::json!({"path": path, "content": "x"}).as_object().unwrap().clone(),
    /// };
    /// let v = Gate::judge(&kit, &call("drafts/a.md"), &[], &Who::default());
    /// assert_eq!((v.gate, v.reason.as_deref()), (Gate::Run, Some("auto_if: args.path.startsWith('drafts/')")));
    /// let v = Gate::judge(&kit, &call("notes/a.md"), &[], &Who::default());
    /// assert_eq!((v.gate, v.reason.as_deref()), (Gate::Approval, Some("otherwise: confirm")));
    /// ```
    pub fn judge(
        toolkit: &Toolkit,
        call: &ToolCall,
        standing: &[String],
        who: &Who<'_>,
    ) -> Verdict {
        let run = Verdict {
            gate: Gate::Run,
            reason: None,
        };
        let Ok(tool) = toolkit.resolve(&call.name) else {
            return run;
        };
        if !toolkit.allows(&call.name) {
            // The caller's (or its tenant's) allow-list: whatever the arguments.
            return Verdict {
                gate: Gate::Refuse,
                reason: Some(format!(
                    "allow-list: the caller of this run may not use '{}'",
                    call.name
                )),
            };
        }
        let Ok(args) = tool.check(call.arguments.clone()) else {
            // Nobody is asked about a call that cannot run; the model gets the errors.
            return run;
        };
        let facts = Facts {
            args: &args,
            tool: &call.name,
            agent: who.agent,
            user: who.user,
            tenant: who.tenant,
        };
        let ruling = toolkit.ruling(&call.name, &facts);
        let gate = match ruling.permission {
            Permission::Never => Gate::Refuse,
            _ if tool.definition_only() => Gate::Client,
            Permission::Confirm if !standing.iter().any(|t| t == &call.name) => Gate::Approval,
            Permission::Confirm | Permission::Auto => Gate::Run,
        };
        Verdict {
            gate,
            reason: (gate != Gate::Client).then_some(ruling.reason),
        }
    }
}
