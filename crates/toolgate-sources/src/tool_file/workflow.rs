//! A workflow tool outside a run: its steps go through the gate of the run that calls
//! it (the runtime plays them as a child run), so a call that reaches the tool itself
//! (`toolgate tools call`) is told where it runs.

use async_trait::async_trait;
use serde_json::{Map, Value};

use toolgate_tool::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// A workflow tool's definition, runnable only by a run.
pub(crate) struct WorkflowTool(pub ToolSpec);

#[async_trait]
impl Tool for WorkflowTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        _args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Rejected(format!(
            "'{}' is a workflow: its steps run inside a run, each through the agent's gate; \
             list it in an agent's tools and start a run (toolgate run), or call it through the MCP gateway",
            self.0.name
        )))
    }
}
