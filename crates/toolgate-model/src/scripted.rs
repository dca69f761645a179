//! The scripted model: canned replies from a YAML file, for offline use, demos and
//! tests. The reply given is the one after the conversation's last assistant message,
//! so a run resumed by another process goes on where it stopped.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{MessageRole, Model, ModelError, ModelReply, ModelRequest, ReplySink};
use toolgate_parse::NativeCalls;
use toolgate_protocol::Usage;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    replies: Vec<Reply>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    usage: Option<ScriptedUsage>,
    /// `length` plays an answer cut by the output limit.
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    /// An object, or a JSON string as a server would send it.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// Replies read from a file.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    name: String,
    path: PathBuf,
    replies: Vec<Reply>,
}

impl ScriptedModel {
    /// Reads a replies file: `replies:` a list of `content` and optional `tool_calls`.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ModelError::Config(format!(
                "scripted model {}: cannot read: {e}",
                path.display()
            ))
        })?;
        let script: Script = serde_saphyr::from_str(&text).map_err(|e| {
            let line = e
                .location()
                .map(|l| format!(":{}", l.line()))
                .unwrap_or_default();
            ModelError::Config(format!(
                "scripted model {}{line}: {}",
                path.display(),
                toolgate_protocol::error_line::first_line(&e.to_string())
            ))
        })?;
        Ok(Self {
            name: format!("scripted:{}", path.display()),
            path,
            replies: script.replies,
        })
    }
}

#[async_trait::async_trait]
impl Model for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        let index = request
            .messages
            .iter()
            .filter(|m| m.role == MessageRole::Assistant)
            .count();
        let reply = self.replies.get(index).ok_or_else(|| {
            ModelError::Exhausted(format!(
                "the scripted model {} has {} repl{}, and reply {} was asked for; add replies to the file and resume the run",
                self.path.display(),
                self.replies.len(),
                if self.replies.len() == 1 { "y" } else { "ies" },
                index + 1
            ))
        })?;
        if !reply.content.is_empty() {
            sink.text(&reply.content);
        }
        let mut native = NativeCalls::default();
        for (i, call) in reply.tool_calls.iter().enumerate() {
            let arguments = match &call.arguments {
                None => Value::Object(Map::new()).to_string(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            native.delta(
                i as u64,
                call.id.as_deref(),
                Some(&call.name),
                Some(&arguments),
                0,
            );
        }
        let mut usage = Usage {
            model_calls: 1,
            ..Usage::default()
        };
        if let Some(u) = reply.usage {
            usage.prompt_tokens = u.prompt_tokens;
            usage.completion_tokens = u.completion_tokens;
            usage.total_tokens = u.prompt_tokens + u.completion_tokens;
        }
        Ok(ModelReply {
            reasoning: Vec::new(),
            content: reply.content.clone(),
            native,
            usage,
            truncated: reply.finish_reason.as_deref() == Some("length"),
        })
    }
}
