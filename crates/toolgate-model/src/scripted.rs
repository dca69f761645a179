//! The scripted model: canned replies from a YAML file, for offline use, demos and
//! tests. The reply given is the one after the conversation's last assistant message,
//! so a run resumed by another process goes on where it stopped.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{MessageRole, Model, ModelError, ModelReply, ModelRequest, ReplySink};
use toolgate_parse::NativeCalls;
use toolgate_protocol::Usage;

/// A scripted model's replies (`--model scripted:FILE`): given in order, one per model
/// turn.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ScriptedReplies")]
struct Script {
    /// The replies, in the order the model gives them.
    replies: Vec<Reply>,
}

/// One model reply.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Reply {
    /// The reply's text (calls written in it are read as in xml mode).
    #[serde(default)]
    content: String,
    /// Native tool calls.
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
    /// The tokens the reply reports using.
    #[serde(default)]
    usage: Option<ScriptedUsage>,
    /// `length` plays an answer cut by the output limit.
    #[serde(default)]
    finish_reason: Option<String>,
}

/// One native tool call of a reply.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    /// The call's id (one is made up when absent).
    #[serde(default)]
    id: Option<String>,
    /// The tool called.
    name: String,
    /// An object, or a JSON string as a server would send it.
    #[serde(default)]
    #[schemars(schema_with = "arguments_schema")]
    arguments: Option<Value>,
}

/// The tokens a reply reports.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScriptedUsage {
    /// Tokens of the prompt.
    #[serde(default)]
    prompt_tokens: u64,
    /// Tokens of the reply.
    #[serde(default)]
    completion_tokens: u64,
}

/// `arguments:`: an object, or a JSON string.
fn arguments_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["object", "string", "null"]})
}

/// Replies read from a file.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    name: String,
    path: PathBuf,
    replies: Vec<Reply>,
}

impl ScriptedModel {
    /// The JSON Schema of a replies file, as [`ScriptedModel::load`] reads it.
    pub fn file_schema() -> schemars::Schema {
        schemars::generate::SchemaSettings::draft07()
            .into_generator()
            .into_root_schema_for::<Script>()
    }

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
