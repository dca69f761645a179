//! The `Tool` trait every runnable tool implements, and the context a call runs in.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::output::{Part, ToolError, ToolOutput};
use super::spec::{DEFAULT_TIMEOUT, ToolSpec};
use crate::protocol::Event;

/// Where and for whom a call runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The root that file tools are confined to (canonical).
    pub workspace: PathBuf,
    pub call_id: String,
    /// The timeout of a call whose tool does not set one.
    pub default_timeout: Duration,
    /// The tool's credentials, added to the arguments once they are checked.
    pub injected: serde_json::Map<String, serde_json::Value>,
    output: Option<UnboundedSender<Event>>,
}

impl ToolContext {
    pub fn new(workspace: PathBuf) -> Self {
        Self {
            workspace,
            call_id: String::new(),
            default_timeout: DEFAULT_TIMEOUT,
            injected: serde_json::Map::new(),
            output: None,
        }
    }

    /// Sends streamed output parts to `events`.
    pub fn with_output(mut self, events: UnboundedSender<Event>) -> Self {
        self.output = Some(events);
        self
    }

    /// Streams one part of the output before the call ends. A part is one event, so
    /// the parts of concurrent calls never interleave inside each other.
    pub fn emit(&self, part: Part) {
        if let Some(tx) = &self.output {
            // Nobody listening is not an error for the tool.
            let _ = tx.send(Event::ToolOutput {
                call_id: self.call_id.clone(),
                part,
            });
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
