//! OpenAI-compatible chat completions through async-openai: streamed, text deltas
//! passed on as they arrive, tool-call deltas merged by index, token usage read from
//! the last chunk, and bounded retries with exponential backoff on 429, 5xx, timeouts
//! and dropped streams.

use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::retry::{Failure, Retries};
use super::{
    Message, MessageRole, Model, ModelError, ModelReply, ModelRequest, ModelSettings, ReplySink,
    ToolChoice,
};
use toolgate_protocol::Usage;

/// How to reach the server and how hard to try.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    pub api_key: Option<String>,
    /// For any OpenAI-compatible server, e.g. `http://localhost:8000/v1`.
    pub base_url: Option<String>,
    /// Tries per request, the first included.
    pub attempts: u32,
    /// The wait before the second try; doubled for each later one.
    pub backoff: Duration,
    pub connect_timeout: Duration,
    /// The longest silence while a reply streams.
    pub read_timeout: Duration,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            api_key: None,
            base_url: None,
            attempts: 4,
            backoff: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(120),
        }
    }
}

/// The API key of OpenAI-compatible servers.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// The base URL of the OpenAI-compatible server (default OpenAI's).
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
/// How many times a model request is tried (default 3).
pub const ATTEMPTS_ENV: &str = "TOOLGATE_MODEL_ATTEMPTS";
/// The wait before the first retry of a model request, in milliseconds (doubled each time).
pub const BACKOFF_ENV: &str = "TOOLGATE_MODEL_BACKOFF_MS";

impl OpenAiConfig {
    /// `OPENAI_API_KEY`, `OPENAI_BASE_URL`; `TOOLGATE_MODEL_ATTEMPTS` and
    /// `TOOLGATE_MODEL_BACKOFF_MS` tune the retries.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let mut config = Self {
            api_key: var(API_KEY_ENV),
            base_url: var(BASE_URL_ENV),
            ..Self::default()
        };
        if let Some(n) = var(ATTEMPTS_ENV).and_then(|v| v.parse().ok()) {
            config.attempts = n;
        }
        if let Some(ms) = var(BACKOFF_ENV).and_then(|v| v.parse().ok()) {
            config.backoff = Duration::from_millis(ms);
        }
        config
    }
}

/// The HTTP client for these timeouts, made once per process: every run's model shares
/// its TLS set-up and its pool of connections (a client per run costs more than a
/// short run, and a handshake per run).
pub(super) fn shared_client(
    connect: Duration,
    read: Duration,
) -> Result<reqwest::Client, ModelError> {
    static CLIENTS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<(Duration, Duration), reqwest::Client>>,
    > = std::sync::OnceLock::new();
    let mut clients = CLIENTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(c) = clients.get(&(connect, read)) {
        return Ok(c.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(connect)
        .read_timeout(read)
        .build()
        .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
    clients.insert((connect, read), client.clone());
    Ok(client)
}

/// A model on an OpenAI-compatible server.
pub struct OpenAiModel {
    name: String,
    model: String,
    client: Client<OpenAIConfig>,
    config: OpenAiConfig,
    settings: ModelSettings,
}

impl OpenAiModel {
    /// A model on the server `config` names, with the agent's `settings` (its own
    /// base URL, key variable and timeout take precedence over `config`'s).
    pub fn new(
        model: &str,
        mut config: OpenAiConfig,
        settings: ModelSettings,
    ) -> Result<Self, ModelError> {
        if let Some(url) = &settings.base_url {
            config.base_url = Some(url.clone());
        }
        if let Some(key) = settings
            .api_key()
            .map_err(|e| ModelError::Config(e.to_string()))?
        {
            config.api_key = Some(key);
        }
        if let Some(t) = settings.timeout {
            config.read_timeout = Duration::from_secs_f64(t);
        }
        if config.api_key.is_none() && config.base_url.is_none() {
            return Err(ModelError::Config(format!(
                "openai:{model} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local server); set it, or use --model scripted:FILE"
            )));
        }
        let mut openai =
            OpenAIConfig::new().with_api_key(config.api_key.clone().unwrap_or_default());
        if let Some(base) = &config.base_url {
            openai = openai.with_api_base(base.trim_end_matches('/'));
        }
        for (k, v) in &settings.headers {
            openai = openai
                .with_header(
                    reqwest::header::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| ModelError::Config(format!("model header '{k}': {e}")))?,
                    v.clone(),
                )
                .map_err(|e| ModelError::Config(format!("model header '{k}': {e}")))?;
        }
        let http = shared_client(config.connect_timeout, config.read_timeout)?;
        Ok(Self {
            name: format!("openai:{model}"),
            model: model.to_string(),
            // async-openai retries on its own by default; the retries here are ours
            // (bounded, reported as events), so the transport is the plain one.
            // `build`, not `with_config`: that one makes a client of its own first.
            client: Client::build(http.clone(), openai)
                .with_http_service(ReqwestService::new(http)),
            config,
            settings,
        })
    }

    async fn attempt(&self, body: &Value, sink: &mut dyn ReplySink) -> Result<ModelReply, Failure> {
        let mut stream = self
            .client
            .chat()
            .create_stream_byot::<Value, Value>(body.clone())
            .await
            .map_err(classify)?;
        let mut reply = ModelReply {
            usage: Usage {
                model_calls: 1,
                ..Usage::default()
            },
            ..ModelReply::default()
        };
        let mut offset = 0;
        let mut finished = false;
        while let Some(item) = stream.next().await {
            let chunk = item.map_err(classify)?;
            if let Some(error) = chunk.get("error") {
                return Err(Failure::Retry(format!(
                    "the stream carried an error: {error}"
                )));
            }
            if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
                let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
                reply.usage.prompt_tokens = n("prompt_tokens");
                reply.usage.completion_tokens = n("completion_tokens");
                reply.usage.total_tokens = n("total_tokens");
            }
            let choices = chunk.get("choices").and_then(Value::as_array);
            for choice in choices.into_iter().flatten() {
                if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
                    finished = true;
                    reply.truncated = reason == "length";
                }
                let Some(delta) = choice.get("delta") else {
                    continue;
                };
                if let Some(text) = delta.get("content").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    reply.content.push_str(text);
                    sink.text(text);
                }
                if let Some(thought) = toolgate_parse::native_reasoning(delta) {
                    sink.reasoning(thought);
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for (i, call) in calls.iter().enumerate() {
                        reply.native.delta_json(i, call, offset);
                    }
                }
            }
            offset += 1;
        }
        if !finished {
            // The connection dropped mid-answer: what came is not the whole answer.
            return Err(Failure::Retry(
                "the stream ended before the model finished its answer".into(),
            ));
        }
        Ok(reply)
    }
}

/// Whether an error is worth another try.
fn classify(e: OpenAIError) -> Failure {
    match &e {
        OpenAIError::ApiError(api) => {
            let status = api.status_code.as_u16();
            if status == 429 || status == 408 || status >= 500 {
                Failure::Retry(e.to_string())
            } else {
                Failure::Fatal(e.to_string())
            }
        }
        OpenAIError::Reqwest(r) => match r.status() {
            Some(s) if s.is_client_error() && s.as_u16() != 429 && s.as_u16() != 408 => {
                Failure::Fatal(e.to_string())
            }
            _ => Failure::Retry(e.to_string()),
        },
        OpenAIError::StreamError(_) | OpenAIError::JSONDeserialize(..) => {
            Failure::Retry(e.to_string())
        }
        _ => Failure::Fatal(e.to_string()),
    }
}

/// The chat.completions request for `request`, with the agent's sampling settings.
pub(crate) fn request_body(
    model: &str,
    request: &ModelRequest<'_>,
    settings: &ModelSettings,
) -> Value {
    let native = !request.tools.is_empty();
    // The custom tools offered: their calls go back to the model as custom calls.
    let custom: Vec<&str> = request
        .tools
        .iter()
        .filter_map(|t| t.get("custom")?.get("name")?.as_str())
        .collect();
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    // Images from tool results go in a user message right after the results (a tool
    // message carries text only).
    let mut pending: Vec<(&str, &super::ImagePart)> = Vec::new();
    for m in request.messages {
        if m.role != MessageRole::Tool && !pending.is_empty() {
            messages.push(images_message(std::mem::take(&mut pending)));
        }
        if m.role == MessageRole::Tool {
            let id = m.tool_call_id.as_deref().unwrap_or("a call");
            pending.extend(m.images.iter().map(|i| (id, i)));
        }
        messages.push(message_json(m, native, &custom));
    }
    if !pending.is_empty() {
        messages.push(images_message(pending));
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if native {
        body["tools"] = Value::Array(request.tools.to_vec());
        let choice = match request.tool_choice {
            // A custom tool is chosen in its own form.
            Some(ToolChoice::Tool(name)) if custom.contains(&name.as_str()) => {
                Some(json!({"type": "custom", "custom": {"name": name}}))
            }
            other => other.and_then(|c| c.openai()),
        };
        if let Some(choice) = choice {
            body["tool_choice"] = choice;
        }
    }
    if let Some(format) = request.response_format {
        body["response_format"] = format.clone();
    }
    if let Some(t) = settings.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(p) = settings.top_p {
        body["top_p"] = json!(p);
    }
    if let Some(n) = settings.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if let Some(e) = &settings.reasoning_effort {
        body["reasoning_effort"] = json!(e);
    }
    body
}

/// The user message that shows the images of the tool results before it.
fn images_message(images: Vec<(&str, &super::ImagePart)>) -> Value {
    let mut content =
        vec![json!({"type": "text", "text": "Images returned by the tool calls above:"})];
    for (call, image) in images {
        content.push(json!({"type": "text", "text": format!("From {call}:")}));
        content.push(json!({"type": "image_url", "image_url": {"url": image.data_url()}}));
    }
    json!({"role": "user", "content": content})
}

fn message_json(m: &Message, native: bool, custom: &[&str]) -> Value {
    match m.role {
        MessageRole::User if !m.images.is_empty() => {
            let mut content = vec![json!({"type": "text", "text": m.content})];
            content.extend(
                m.images
                    .iter()
                    .map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})),
            );
            json!({"role": "user", "content": content})
        }
        MessageRole::User => json!({"role": "user", "content": m.content}),
        MessageRole::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id,
            "content": m.content,
        }),
        MessageRole::Assistant if native && !m.tool_calls.is_empty() => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    if custom.contains(&c.name.as_str()) {
                        let input = c.arguments.get("input").and_then(Value::as_str);
                        return json!({
                            "id": c.id,
                            "type": "custom",
                            "custom": {"name": c.name, "input": input.unwrap_or_default()},
                        });
                    }
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": Value::Object(c.arguments.clone()).to_string(),
                        },
                    })
                })
                .collect();
            let content = if m.content.is_empty() {
                Value::Null
            } else {
                Value::String(m.content.clone())
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        MessageRole::Assistant => json!({"role": "assistant", "content": m.content}),
    }
}

#[async_trait::async_trait]
impl Model for OpenAiModel {
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
                Err(Failure::Fatal(message)) if super::says_context_exceeded(&message) => {
                    Failure::TooLong(message)
                }
                Err(failure) => failure,
            };
            if let Some(error) = retries.after(failure, sink).await {
                return Err(error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A custom tool's call goes back as a custom call with its input, and choosing it
    /// is said in its own form; a function keeps the function forms.
    #[test]
    fn custom_tools_keep_their_own_forms() {
        let call = toolgate_parse::ToolCall {
            id: "c1".into(),
            name: "run_sql".into(),
            arguments: serde_json::Map::from_iter([("input".to_string(), json!("SELECT 1"))]),
        };
        let messages = [
            Message::user("count"),
            Message::assistant("", vec![call]),
            Message::tool("c1", "1"),
        ];
        let tools = [
            json!({"type": "custom", "custom": {"name": "run_sql", "format": {"type": "text"}}}),
            json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}),
        ];
        let choice = ToolChoice::Tool("run_sql".into());
        let req = ModelRequest {
            system: "",
            messages: &messages,
            tools: &tools,
            response_format: None,
            tool_choice: Some(&choice),
        };
        let body = request_body("m", &req, &ModelSettings::default());
        assert_eq!(
            body["messages"][1]["tool_calls"][0],
            json!({"id": "c1", "type": "custom", "custom": {"name": "run_sql", "input": "SELECT 1"}})
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "custom", "custom": {"name": "run_sql"}})
        );
        let choice = ToolChoice::Tool("f".into());
        let req = ModelRequest {
            tool_choice: Some(&choice),
            ..req
        };
        let body = request_body("m", &req, &ModelSettings::default());
        assert_eq!(body["tool_choice"]["type"], "function");
    }
}
