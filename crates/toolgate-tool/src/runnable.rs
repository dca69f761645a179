//! The `Tool` trait every runnable tool implements, and the context a call runs in.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::output::{Part, ToolError, ToolOutput};
use super::spec::{DEFAULT_TIMEOUT, ToolSpec};
use toolgate_protocol::Event;

/// For whom a call runs: the run's tenant, the identity that started it, the run and
/// its conversation. Command tools get them as `TOOLGATE_TENANT`, `TOOLGATE_USER`,
/// `TOOLGATE_RUN_ID` and `TOOLGATE_CONVERSATION_ID`; HTTP and OpenAPI tools can put
/// them in headers as `${context:tenant}`, `${context:user}`, `${context:run_id}`,
/// `${context:conversation_id}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunContext {
    pub tenant: Option<String>,
    pub user: Option<String>,
    pub run_id: Option<String>,
    pub conversation_id: Option<String>,
}

impl RunContext {
    /// The names `${context:NAME}` takes.
    pub const NAMES: [&'static str; 4] = ["tenant", "user", "run_id", "conversation_id"];

    /// The value of `${context:name}`: `None` when the name is unknown, `Some("")`
    /// when the run has none (a call outside a run, a run nobody named started).
    pub fn get(&self, name: &str) -> Option<&str> {
        let v = match name {
            "tenant" => &self.tenant,
            "user" => &self.user,
            "run_id" => &self.run_id,
            "conversation_id" => &self.conversation_id,
            _ => return None,
        };
        Some(v.as_deref().unwrap_or(""))
    }

    /// The environment variables a command tool gets (those the run has).
    pub fn env(&self) -> Vec<(&'static str, &str)> {
        [
            ("TOOLGATE_TENANT", &self.tenant),
            ("TOOLGATE_USER", &self.user),
            ("TOOLGATE_RUN_ID", &self.run_id),
            ("TOOLGATE_CONVERSATION_ID", &self.conversation_id),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }
}

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
    /// For whom it runs.
    pub run: Arc<RunContext>,
    output: Option<UnboundedSender<Event>>,
    /// Values shown as `[secret]` in streamed parts: the call's secret arguments and
    /// credentials.
    masks: Arc<Vec<String>>,
    /// What the tool noted about its peer's answer (an HTTP status, a connection that
    /// failed), read by the engine to decide whether to try again.
    noted: Arc<std::sync::Mutex<Option<crate::retry::Noted>>>,
    /// Where a tool that acts for a user through OAuth gets the user's token.
    pub user_tokens: Option<Arc<dyn crate::oauth::UserTokens>>,
}

impl ToolContext {
    pub fn new(workspace: PathBuf) -> Self {
        Self {
            workspace,
            call_id: String::new(),
            default_timeout: DEFAULT_TIMEOUT,
            injected: serde_json::Map::new(),
            run: Arc::default(),
            output: None,
            masks: Arc::default(),
            noted: Arc::default(),
            user_tokens: None,
        }
    }

    /// Notes what the peer answered (the last note of a try wins), for the retry policy.
    pub fn note(&self, noted: crate::retry::Noted) {
        if let Ok(mut slot) = self.noted.lock() {
            *slot = Some(noted);
        }
    }

    /// The HTTP status the tool noted last, left for the engine to take.
    pub fn noted_status(&self) -> Option<u16> {
        match self.noted.lock().ok()?.as_ref()? {
            crate::retry::Noted::Status { status, .. } => Some(*status),
            crate::retry::Noted::Connect => None,
        }
    }

    /// Takes what the tool noted since the last take.
    pub fn take_noted(&self) -> Option<crate::retry::Noted> {
        self.noted.lock().ok().and_then(|mut slot| slot.take())
    }

    /// Sends streamed output parts to `events`.
    pub fn with_output(mut self, events: UnboundedSender<Event>) -> Self {
        self.output = Some(events);
        self
    }

    /// Shows each of `values` as `[secret]` in the parts this call streams.
    pub fn with_masks(mut self, values: Vec<String>) -> Self {
        let mut values = values;
        values.retain(|v| !v.is_empty());
        self.masks = Arc::new(values);
        self
    }

    /// Whether anyone listens to streamed parts (a tool may skip the work otherwise).
    pub fn streams(&self) -> bool {
        self.output.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Streams one part of the output before the call ends. A part is one event, so
    /// the parts of concurrent calls never interleave inside each other. Secret values
    /// of the call are shown as `[secret]`.
    pub fn emit(&self, part: Part) {
        if let Some(tx) = &self.output {
            let part = if self.masks.is_empty() {
                part
            } else {
                masked(part, &self.masks)
            };
            // Nobody listening is not an error for the tool.
            let _ = tx.send(Event::ToolOutput {
                call_id: self.call_id.clone(),
                part,
            });
        }
    }
}

/// `part` with each of `values` in its strings shown as `[secret]`.
fn masked(part: Part, values: &[String]) -> Part {
    let text = |s: String| crate::secrets::mask_values(&s, values).into_owned();
    fn walk(v: &mut Value, values: &[String]) {
        match v {
            Value::String(s) => {
                if let std::borrow::Cow::Owned(m) = crate::secrets::mask_values(s, values) {
                    *s = m;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, values)),
            Value::Object(o) => o.values_mut().for_each(|x| walk(x, values)),
            _ => {}
        }
    }
    match part {
        Part::Text { text: t } => Part::Text { text: text(t) },
        Part::Json { mut json } => {
            walk(&mut json, values);
            Part::Json { json }
        }
        Part::Image { mime, url, data } => Part::Image {
            mime,
            url: url.map(text),
            data,
        },
        Part::Link { url, title } => Part::Link {
            url: text(url),
            title: title.map(text),
        },
        Part::File {
            path,
            mime,
            id,
            name,
            bytes,
        } => Part::File {
            path: text(path),
            mime,
            id,
            name,
            bytes,
        },
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

    /// The same tool with its programs started in `policy`'s sandbox (an agent's
    /// stricter one); `None` for a tool that starts no program.
    fn with_sandbox(&self, policy: toolgate_sandbox::SandboxPolicy) -> Option<Arc<dyn Tool>> {
        let _ = policy;
        None
    }

    /// Whether [`Tool::validate`] has a check to run.
    fn checks_credentials(&self) -> bool {
        false
    }

    /// The OAuth provider whose per-user token its calls carry (an `http` tool's
    /// `oauth:`, an OpenAPI `oauth2` scheme, a remote MCP server's authorization); `None`
    /// for a tool that does not act for the run's user.
    fn user_oauth(&self) -> Option<crate::oauth::OAuthProvider> {
        None
    }

    /// The credentials its check uses, by argument name; `None`: all of the tool's.
    fn credentials_checked(&self) -> Option<Vec<String>> {
        None
    }

    /// Checks `credentials` (the tool's own, by argument name) with the upstream,
    /// without doing the tool's work: `None` (most tools) when it has no way to.
    async fn validate(
        &self,
        _ctx: &ToolContext,
        _credentials: Map<String, Value>,
    ) -> Option<Result<crate::Verdict, ToolError>> {
        None
    }

    /// What makes the tool ready to take a call (an MCP server started at its first
    /// call), awaited before the call's timeout starts counting; `None` (most tools):
    /// always ready.
    fn ready(
        &self,
        _ctx: &ToolContext,
    ) -> Option<futures_util::future::BoxFuture<'_, Result<(), ToolError>>> {
        None
    }
}
