//! The gate: for each resolved call, whether it runs now, waits for a person, waits
//! for the client's output, or is refused without asking.

use serde::{Deserialize, Serialize};

use crate::parse::ToolCall;
use crate::tool::{Permission, Toolkit};

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
    /// use toolgate::permission::Gate;
    /// use toolgate::tool::{Permission, ToolLibrary};
    /// let library = Arc::new(ToolLibrary::builtin());
    /// let kit = library
    ///     .toolkit(&["echo".into(), "shell".into()], [("shell".to_string(), Permission::Confirm)].into())
    ///     .unwrap();
    /// let call = toolgate::engine::call("c1", "shell", serde_json::json!({"command": "ls"}).as_object().unwrap().clone());
    /// assert_eq!(Gate::decide(&kit, &call, &[]), Gate::Approval);
    /// assert_eq!(Gate::decide(&kit, &call, &["shell".to_string()]), Gate::Run);
    /// ```
    pub fn decide(toolkit: &Toolkit, call: &ToolCall, standing: &[String]) -> Gate {
        let Ok(tool) = toolkit.resolve(&call.name) else {
            return Gate::Run;
        };
        if tool.check(call.arguments.clone()).is_err() {
            // Nobody is asked about a call that cannot run; the model gets the errors.
            return Gate::Run;
        }
        match toolkit.permission(&call.name) {
            Permission::Never => Gate::Refuse,
            _ if tool.definition_only() => Gate::Client,
            Permission::Confirm if !standing.iter().any(|t| t == &call.name) => Gate::Approval,
            Permission::Confirm | Permission::Auto => Gate::Run,
        }
    }
}
