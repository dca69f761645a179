//! Models: the `Model` trait the loop asks, the conversation messages it sends, the
//! standard implementations (OpenAI-compatible servers, Anthropic, scripted replies from
//! a file) and the [`Providers`] that make them from a name like `openai:gpt-4o-mini` or
//! `scripted:replies.yaml`, where a program registers providers of its own.

mod anthropic;
pub mod context;
mod fallback;
mod openai;
pub mod prices;
mod providers;
mod retry;
mod scripted;
mod settings;
mod tool_choice;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The environment variables the model providers read.
pub mod env {
    pub use super::anthropic::{
        API_KEY_ENV as ANTHROPIC_API_KEY, BASE_URL_ENV as ANTHROPIC_BASE_URL,
    };
    pub use super::openai::{
        API_KEY_ENV as OPENAI_API_KEY, ATTEMPTS_ENV as MODEL_ATTEMPTS,
        BACKOFF_ENV as MODEL_BACKOFF_MS, BASE_URL_ENV as OPENAI_BASE_URL,
    };
}
pub use anthropic::AnthropicModel;
pub use fallback::FallbackModel;
pub use openai::{OpenAiConfig, OpenAiModel};
pub use providers::{ModelProvider, Providers};
pub use scripted::ScriptedModel;
pub use settings::{ModelSettings, ModelSpec, REASONING_EFFORTS, SettingsError};
pub use tool_choice::{ToolChoice, ToolChoiceError};
pub use toolgate_protocol::image::{self, ImagePart};

use toolgate_parse::{NativeCalls, ToolCall};
use toolgate_protocol::Usage;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    User,
    Assistant,
    /// A tool's result (native mode).
    Tool,
}

/// One message of a conversation (the system prompt is not one: it is built from the
/// agent for every request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: MessageRole,
    pub content: String,
    /// The calls of an assistant message, with the ids the results answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A compaction message: the range of the history it stands for (it is sent as a
    /// user message in place of that range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<crate::context::Compaction>,
    /// The prompt tokens of the request this message answered (an assistant message or
    /// a compaction), as counted before it was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// The provider's reasoning blocks of an assistant message (Anthropic `thinking`
    /// and `redacted_thinking`, with their signatures), given back unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Value>,
    /// What the model thought, read from its answer (`<think>`, `[THINK]`, Harmony's
    /// analysis channel, a server's `reasoning_content`, Anthropic thinking), block by
    /// block: recorded beside the message and shown, never sent back by itself (a text
    /// answer goes back as written, and its template keeps or drops its reasoning).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<toolgate_parse::Reasoning>,
    /// Images for the model: a tool message's (its result's image parts), or a user
    /// message's (xml mode's results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImagePart>,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: MessageRole::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            compaction: None,
            prompt_tokens: None,
            reasoning: Vec::new(),
            thinking: Vec::new(),
            images: Vec::new(),
        }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            role: MessageRole::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
            compaction: None,
            prompt_tokens: None,
            reasoning: Vec::new(),
            thinking: Vec::new(),
            images: Vec::new(),
        }
    }

    /// This message, with the reasoning blocks its answer came with.
    pub fn with_reasoning(mut self, reasoning: Vec<Value>) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// This message, with what the model thought while writing it.
    pub fn with_thinking(mut self, thinking: Vec<toolgate_parse::Reasoning>) -> Self {
        self.thinking = thinking;
        self
    }

    /// This message, recording the prompt size of the request it answered.
    pub fn with_prompt_tokens(mut self, tokens: u64) -> Self {
        self.prompt_tokens = Some(tokens);
        self
    }

    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: MessageRole::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            compaction: None,
            prompt_tokens: None,
            reasoning: Vec::new(),
            thinking: Vec::new(),
            images: Vec::new(),
        }
    }
}

/// What the loop asks a model.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    /// OpenAI `tools` entries (native mode); empty in xml mode.
    pub tools: &'a [Value],
    /// OpenAI's `response_format` (`json_schema`, `json_object`) the client asked for;
    /// models without it are asked in the message instead.
    pub response_format: Option<&'a Value>,
    /// Whether the model may, must, or must not call tools (native mode; auto when
    /// absent).
    pub tool_choice: Option<&'a ToolChoice>,
}

/// A model's whole answer.
#[derive(Debug, Default)]
pub struct ModelReply {
    pub content: String,
    /// Native tool calls, merged from their deltas.
    pub native: NativeCalls,
    pub usage: Usage,
    /// Reasoning blocks to keep in the history (Anthropic `thinking`).
    pub reasoning: Vec<Value>,
    /// The answer was cut by the model's output limit (`finish_reason: length`,
    /// Anthropic's `stop_reason: max_tokens`): it is not whole.
    pub truncated: bool,
}

/// Where a model reports as it answers.
pub trait ReplySink: Send {
    /// A piece of the answer's text.
    fn text(&mut self, delta: &str);
    /// A piece of the answer's reasoning the server sent apart from its text
    /// (`reasoning_content`, Anthropic `thinking`).
    fn reasoning(&mut self, _delta: &str) {}
    /// The request failed and is tried again after `wait`: text sent so far is void.
    fn retrying(&mut self, attempt: u32, wait: Duration, error: &str);
}

/// Why a model gave no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The model name, its file or its settings are wrong (bad input).
    #[error("{0}")]
    Config(String),
    /// The server could not be reached, or kept failing, through every attempt.
    #[error("the model server failed {attempts} time(s); last error: {last}")]
    Unavailable { attempts: u32, last: String },
    /// The server refused the request (not worth retrying).
    #[error("the model server refused the request: {0}")]
    Rejected(String),
    /// A scripted model has no reply left.
    #[error("{0}")]
    Exhausted(String),
    /// The request was longer than the model's context window.
    #[error("the request is too long for the model's context window: {0}")]
    ContextExceeded(String),
}

/// Whether a refusal's text says the request passed the model's context window (the
/// wording of OpenAI, Anthropic, vLLM and llama.cpp servers).
pub fn says_context_exceeded(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "prompt is too long",
        "maximum context",
        "too many tokens",
        "exceeds the available context size",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// A model: given the conversation, it answers, streaming text to `sink`.
#[async_trait::async_trait]
pub trait Model: Send + Sync {
    /// The name it was made from (`openai:gpt-4o-mini`, `scripted:/path/replies.yaml`).
    fn name(&self) -> &str;
    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError>;
}
