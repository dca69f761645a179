//! Anthropic's Messages API, native (`anthropic:MODEL`, `ANTHROPIC_API_KEY`,
//! `ANTHROPIC_BASE_URL`): the conversation as content blocks (`tool_use` in the
//! assistant's turn, `tool_result` in the user's, `thinking` blocks given back as they
//! came), the reply streamed as server-sent events and merged block by block (text
//! deltas passed on, `input_json_delta` fragments joined like OpenAI's argument
//! deltas), usage with the cache counts, and bounded retries with exponential backoff
//! on 429, 529 `overloaded`, 5xx, an `error` event and a stream cut short.

use std::time::Duration;

use serde_json::{Value, json};

use super::retry::{Failure, Retries};
use super::{
    Message, MessageRole, Model, ModelError, ModelReply, ModelRequest, ModelSettings, ReplySink,
};
use crate::OpenAiConfig;

/// The API key of Anthropic's Messages API.
pub const API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The base URL of the Anthropic server (default Anthropic's).
pub const BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";

/// The API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";

/// The server when neither `ANTHROPIC_BASE_URL` nor `base_url` names one.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// `max_tokens` (required by the API) when the agent sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// The thinking budget a `reasoning_effort` asks for (`none`: no thinking).
fn thinking_budget(effort: &str) -> Option<u32> {
    match effort {
        "minimal" => Some(1_024),
        "low" => Some(2_048),
        "medium" => Some(8_192),
        "high" => Some(16_384),
        "xhigh" => Some(32_000),
        _ => None,
    }
}

/// A model behind Anthropic's Messages API.
pub struct AnthropicModel {
    name: String,
    model: String,
    url: String,
    api_key: Option<String>,
    http: reqwest::Client,
    config: OpenAiConfig,
    settings: ModelSettings,
}

impl AnthropicModel {
    /// `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL` from the environment, unless the
    /// settings name their own; `config` gives the retries and timeouts.
    pub fn new(
        model: &str,
        mut config: OpenAiConfig,
        settings: ModelSettings,
    ) -> Result<Self, ModelError> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let api_key = match settings
            .api_key()
            .map_err(|e| ModelError::Config(e.to_string()))?
        {
            Some(k) => Some(k),
            None => var(API_KEY_ENV),
        };
        let base = settings.base_url.clone().or_else(|| var(BASE_URL_ENV));
        if api_key.is_none() && base.is_none() {
            return Err(ModelError::Config(format!(
                "anthropic:{model} needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for another server); set it, or use --model scripted:FILE"
            )));
        }
        if let Some(t) = settings.timeout {
            config.read_timeout = Duration::from_secs_f64(t);
        }
        let base = base.unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let base = base.trim_end_matches('/');
        // `ANTHROPIC_BASE_URL` names the host (as Anthropic's SDKs read it); a URL that
        // already ends in /v1 is taken as it is.
        let url = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        // The process's client for these timeouts: its TLS set-up and pool are shared.
        let http = super::openai::shared_client(config.connect_timeout, config.read_timeout)?;
        Ok(Self {
            name: format!("anthropic:{model}"),
            model: model.to_string(),
            url,
            api_key,
            http,
            config,
            settings,
        })
    }

    async fn attempt(&self, body: &Value, sink: &mut dyn ReplySink) -> Result<ModelReply, Failure> {
        let mut request = self
            .http
            .post(&self.url)
            .header("anthropic-version", API_VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        if let Some(key) = &self.api_key {
            request = request.header("x-api-key", key);
        }
        for (k, v) in &self.settings.headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let mut response = request
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| Failure::Retry(format!("the request failed: {e}")))?;
        let status = response.status().as_u16();
        if status != 200 {
            let text = response.text().await.unwrap_or_default();
            let message = format!("HTTP {status}: {}", error_message(&text));
            return Err(match status {
                429 | 408 | 529 | 500..=599 => Failure::Retry(message),
                _ if super::says_context_exceeded(&text) => Failure::TooLong(message),
                _ => Failure::Fatal(message),
            });
        }
        let mut stream = Reading::default();
        let mut events = SseLines::default();
        loop {
            let chunk = response
                .chunk()
                .await
                .map_err(|e| Failure::Retry(format!("the stream broke: {e}")))?;
            let Some(chunk) = chunk else { break };
            for (event, data) in events.push(&chunk) {
                stream.event(&event, &data, sink)?;
                if stream.stopped {
                    return Ok(stream.reply());
                }
            }
        }
        Err(Failure::Retry(
            "the stream ended before the model finished its answer".into(),
        ))
    }
}

/// The `error.message` of an error body, or the body.
fn error_message(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            Some(format!(
                "{}: {}",
                e.get("type")?.as_str()?,
                e.get("message")?.as_str()?
            ))
        })
        .unwrap_or_else(|| text.chars().take(500).collect())
}

/// Splits a byte stream into server-sent events (`event:` and `data:` lines ended by
/// a blank line), across chunk boundaries.
#[derive(Default)]
struct SseLines {
    buf: Vec<u8>,
}

impl SseLines {
    fn push(&mut self, bytes: &[u8]) -> Vec<(String, String)> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            let text = String::from_utf8_lossy(&self.buf);
            let end = [
                text.find("\n\n").map(|i| (i, 2)),
                text.find("\r\n\r\n").map(|i| (i, 4)),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some((at, sep)) = end else { break };
            let block = text[..at].to_string();
            let consumed = text[..at + sep].len();
            drop(text);
            self.buf.drain(..consumed);
            let (mut event, mut data) = (String::new(), String::new());
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    event = e.trim().to_string();
                } else if let Some(d) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(d.strip_prefix(' ').unwrap_or(d));
                }
            }
            if !data.is_empty() || !event.is_empty() {
                out.push((event, data));
            }
        }
        out
    }
}

/// One content block as it streams.
enum Block {
    Text,
    ToolUse,
    Thinking { thinking: String, signature: String },
    Redacted(Value),
    Other,
}

/// An `error` event: retried when the server is busy or failing, too long when it
/// says the request passed the context window, else fatal.
fn stream_error(v: &Value) -> Failure {
    let kind = v
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message = format!(
        "the stream carried an error: {kind}: {}",
        v.pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or_default()
    );
    match kind {
        "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error" => {
            Failure::Retry(message)
        }
        _ if super::says_context_exceeded(&message) => Failure::TooLong(message),
        _ => Failure::Fatal(message),
    }
}

/// A reply as its events arrive.
#[derive(Default)]
struct Reading {
    reply: ModelReply,
    blocks: std::collections::BTreeMap<u64, Block>,
    stopped: bool,
}

impl Reading {
    fn event(&mut self, event: &str, data: &str, sink: &mut dyn ReplySink) -> Result<(), Failure> {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| Failure::Retry(format!("an event that is not JSON ({e}): {data}")))?;
        let kind = if event.is_empty() {
            v.get("type").and_then(Value::as_str).unwrap_or_default()
        } else {
            event
        };
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                self.reply.usage.model_calls = 1;
                if let Some(u) = v.pointer("/message/usage") {
                    self.usage(u);
                }
            }
            "content_block_start" => self.block_start(&v, index, sink),
            "content_block_delta" => self.block_delta(&v, index, sink),
            "content_block_stop" => match self.blocks.get(&index) {
                Some(Block::Thinking {
                    thinking,
                    signature,
                }) => self.reply.reasoning.push(
                    json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                ),
                Some(Block::Redacted(b)) => self.reply.reasoning.push(b.clone()),
                _ => {}
            },
            "message_delta" => {
                if let Some(u) = v.get("usage") {
                    self.usage(u);
                }
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.reply.truncated = reason == "max_tokens";
                }
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(stream_error(&v)),
            _ => {} // ping, and event types added later
        }
        Ok(())
    }

    /// `content_block_start`: a text, tool-use or thinking block opens at `index`.
    fn block_start(&mut self, v: &Value, index: u64, sink: &mut dyn ReplySink) {
        let b = v.get("content_block").cloned().unwrap_or(Value::Null);
        let block = match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = b
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.text(t, sink);
                }
                Block::Text
            }
            Some("tool_use") => {
                self.reply.native.delta(
                    index,
                    b.get("id").and_then(Value::as_str),
                    b.get("name").and_then(Value::as_str),
                    None,
                    index as usize,
                );
                Block::ToolUse
            }
            Some("thinking") => {
                let thinking = str_of(&b, "thinking");
                if !thinking.is_empty() {
                    sink.reasoning(&thinking);
                }
                Block::Thinking {
                    thinking,
                    signature: str_of(&b, "signature"),
                }
            }
            Some("redacted_thinking") => Block::Redacted(b),
            _ => Block::Other,
        };
        self.blocks.insert(index, block);
    }

    /// `content_block_delta`: more text, call arguments, thinking or signature for the
    /// block at `index`.
    fn block_delta(&mut self, v: &Value, index: u64, sink: &mut dyn ReplySink) {
        let d = v.get("delta").cloned().unwrap_or(Value::Null);
        match (
            d.get("type").and_then(Value::as_str),
            self.blocks.get_mut(&index),
        ) {
            (Some("text_delta"), _) => {
                let t = str_of(&d, "text");
                self.text(&t, sink);
            }
            (Some("input_json_delta"), Some(Block::ToolUse)) => {
                let part = str_of(&d, "partial_json");
                self.reply
                    .native
                    .delta(index, None, None, Some(&part), index as usize);
            }
            (Some("thinking_delta"), Some(Block::Thinking { thinking, .. })) => {
                let piece = str_of(&d, "thinking");
                thinking.push_str(&piece);
                if !piece.is_empty() {
                    sink.reasoning(&piece);
                }
            }
            (Some("signature_delta"), Some(Block::Thinking { signature, .. })) => {
                signature.push_str(&str_of(&d, "signature"));
            }
            _ => {}
        }
    }

    fn text(&mut self, t: &str, sink: &mut dyn ReplySink) {
        if !t.is_empty() {
            self.reply.content.push_str(t);
            sink.text(t);
        }
    }

    /// Usage fields as they come (`message_start` has the input, `message_delta` the
    /// output so far).
    fn usage(&mut self, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        let usage = &mut self.reply.usage;
        if let Some(i) = n("input_tokens") {
            usage.prompt_tokens = i;
        }
        if let Some(o) = n("output_tokens") {
            usage.completion_tokens = o;
        }
        if let Some(c) = n("cache_read_input_tokens") {
            usage.cache_read_tokens = c;
        }
        if let Some(c) = n("cache_creation_input_tokens") {
            usage.cache_creation_tokens = c;
        }
        usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    }

    fn reply(self) -> ModelReply {
        self.reply
    }
}

fn str_of(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The Messages API request for `request`, with the agent's settings.
pub(crate) fn request_body(
    model: &str,
    request: &ModelRequest<'_>,
    settings: &ModelSettings,
) -> Value {
    let native = !request.tools.is_empty();
    let mut messages: Vec<Value> = Vec::with_capacity(request.messages.len());
    for m in request.messages {
        let (role, blocks) = blocks_of(m, native);
        // Results and a following user message go in one user turn, as the API wants.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let budget = settings
        .reasoning_effort
        .as_deref()
        .and_then(thinking_budget);
    let max_tokens = match (settings.max_tokens, budget) {
        (Some(m), Some(b)) => m.max(b + 1_024),
        (Some(m), None) => m,
        (None, Some(b)) => b + DEFAULT_MAX_TOKENS,
        (None, None) => DEFAULT_MAX_TOKENS,
    };
    let mut body = json!({
        "model": model,
        "max_tokens": max_tokens,
        "messages": messages,
        "stream": true,
    });
    if !request.system.is_empty() {
        body["system"] = json!(request.system);
    }
    if native {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                if let Some(custom) = t.get("custom") {
                    return custom_tool(custom);
                }
                let f = t.get("function").unwrap_or(t);
                json!({
                    "name": f.get("name").cloned().unwrap_or(Value::Null),
                    "description": f.get("description").cloned().unwrap_or(json!("")),
                    "input_schema": f.get("parameters").cloned().unwrap_or(json!({"type": "object"})),
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if let Some(choice) = request.tool_choice.and_then(|c| c.anthropic()) {
            body["tool_choice"] = choice;
        }
    }
    if let Some(t) = settings.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(p) = settings.top_p {
        body["top_p"] = json!(p);
    }
    if let Some(b) = budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": b});
    }
    body
}

/// A message's role and content blocks.
fn blocks_of(m: &Message, native: bool) -> (&'static str, Vec<Value>) {
    match m.role {
        MessageRole::User => {
            let mut blocks = vec![json!({"type": "text", "text": non_empty(&m.content)})];
            blocks.extend(m.images.iter().map(image_block));
            ("user", blocks)
        }
        MessageRole::Tool if !m.images.is_empty() => {
            // Images go inside the tool_result, after its text.
            let mut content = vec![json!({"type": "text", "text": non_empty(&m.content)})];
            content.extend(m.images.iter().map(image_block));
            (
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": content}),
                ],
            )
        }
        MessageRole::Tool => (
            "user",
            vec![json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": non_empty(&m.content),
            })],
        ),
        MessageRole::Assistant => {
            // Thinking blocks go back first and unchanged, as the API requires.
            let mut blocks: Vec<Value> = m.reasoning.clone();
            if !m.content.is_empty() {
                blocks.push(json!({"type": "text", "text": m.content}));
            }
            if native {
                for c in &m.tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": Value::Object(c.arguments.clone()),
                    }));
                }
            }
            if blocks.is_empty() {
                blocks.push(json!({"type": "text", "text": "(no text)"}));
            }
            ("assistant", blocks)
        }
    }
}

/// An image content block.
fn image_block(i: &super::ImagePart) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.data}})
}

/// The API refuses empty text blocks.
fn non_empty(text: &str) -> &str {
    if text.is_empty() { "(empty)" } else { text }
}

#[async_trait::async_trait]
impl Model for AnthropicModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        let body = request_body(&self.model, &request, &self.settings);
        let mut retries = Retries::new(self.config.attempts, self.config.backoff);
        loop {
            let failure = match self.attempt(&body, sink).await {
                Ok(reply) => return Ok(reply),
                Err(failure) => failure,
            };
            if let Some(error) = retries.after(failure, sink).await {
                return Err(error);
            }
        }
    }
}

/// A custom tool (freeform input) as an Anthropic tool: one string, `input`, with the
/// format's grammar told in its description.
fn custom_tool(custom: &Value) -> Value {
    let mut about = String::from("The tool's freeform input");
    if let Some(definition) = custom["format"]["definition"].as_str() {
        let syntax = custom["format"]["syntax"].as_str().unwrap_or("grammar");
        about.push_str(&format!(", matching this {syntax} grammar: {definition}"));
    }
    json!({
        "name": custom.get("name").cloned().unwrap_or(Value::Null),
        "description": custom.get("description").cloned().unwrap_or(json!("")),
        "input_schema": {"type": "object", "properties": {"input": {"type": "string", "description": about}},
            "required": ["input"]},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_are_joined() {
        let mut s = SseLines::default();
        assert!(s.push(b"event: ping\nda").is_empty());
        let got = s.push(b"ta: {\"type\":\"ping\"}\n\nevent: message_stop\r\ndata: {}\r\n\r\n");
        assert_eq!(
            got,
            vec![
                ("ping".to_string(), "{\"type\":\"ping\"}".to_string()),
                ("message_stop".to_string(), "{}".to_string())
            ]
        );
    }

    #[test]
    fn results_and_a_following_user_message_share_one_user_turn() {
        let messages = [
            Message::user("hi"),
            Message::assistant("", Vec::new()),
            Message::tool("c1", "r1"),
            Message::tool("c2", "r2"),
            Message::user("note"),
        ];
        let req = ModelRequest {
            system: "",
            messages: &messages,
            tools: &[
                json!({"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}),
            ],
            response_format: None,
            tool_choice: None,
        };
        let body = request_body("m", &req, &ModelSettings::default());
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["role"].as_str())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            body["messages"][2]["content"].as_array().map(Vec::len),
            Some(3)
        );
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert!(body.get("system").is_none());
    }
}
