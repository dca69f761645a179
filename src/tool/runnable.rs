//! The `Tool` trait every runnable tool implements, and the context a call runs in.

use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::output::{ToolError, ToolOutput};
use super::spec::ToolSpec;

/// Where and for whom a call runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The root that file tools are confined to (canonical).
    pub workspace: PathBuf,
    pub call_id: String,
}

impl ToolContext {
    pub fn new(workspace: PathBuf) -> Self {
        Self {
            workspace,
            call_id: String::new(),
        }
    }
}

/// A tool toolgate can run. Arguments arrive validated against the spec's schema,
/// defaults filled in.
#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError>;
}
