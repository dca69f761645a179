//! The Responses API's wire types as toolgate speaks them: the request body of
//! `POST /v1/responses`, the response object and its output items (`message`,
//! `mcp_call`, `mcp_approval_request`, `function_call`), shaped as the official OpenAI
//! SDKs read them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// The `server_label` of every `mcp_call` and `mcp_approval_request`: the tools an
/// agent runs server-side appear as one MCP server.
pub const SERVER_LABEL: &str = "toolgate";

/// The prefix of a `model` that names an agent: `agent:NAME`.
pub const AGENT_PREFIX: &str = "agent:";

/// `POST /v1/responses`. Fields the Responses API has and toolgate does not use
/// (`temperature`, `store`, ...) are accepted and ignored: the agent file decides the
/// model and the tools toolgate runs.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct CreateResponse {
    /// `agent:NAME`: the agent (from the server's agents folder) that answers.
    #[schema(pattern = r"^agent:.*[^ \t\n\r\f\v]")]
    pub model: String,
    /// A user message as a string, or a list of input items: user messages (content a
    /// string or `input_text` parts), `mcp_approval_response`, `function_call_output`
    /// and `custom_tool_call_output`. A user message may also carry `input_image` parts
    /// (`image_url`: a base64 data URL or an https URL) and `input_file` parts
    /// (`file_data` in base64 with a plain `filename`, or `file_url`); the schema lists
    /// only the text forms, since most values of those fields are refused.
    #[serde(default)]
    #[schema(value_type = super::input_doc::InputDoc)]
    pub input: Option<Value>,
    /// Continues the run (and conversation) of this response.
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// Stream the response as server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Kept on the response object.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Refused: an agent's instructions come from its agent file.
    #[serde(default)]
    #[schema(value_type = Option<()>)]
    pub instructions: Option<Value>,
    /// `{"format": {"type": "json_schema", "name", "schema", "strict"?}}` (as
    /// `responses.parse` sends it), `json_object` or `text`: the model is asked for JSON
    /// matching the schema, and a final answer that does not match fails the response.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub text: Option<Value>,
    /// The client's own tools, each `{"type": "function", "name", "description",
    /// "parameters", "strict"}`: the model may call them after the agent's, and a call
    /// ends the response with a `function_call` item the client answers with a
    /// `function_call_output`; and custom tools, each `{"type": "custom", "name",
    /// "description", "format"}` (`format`: `{"type": "text"}`, the default, or
    /// `{"type": "grammar", "syntax": "lark" | "regex", "definition"}`), whose call is a
    /// `custom_tool_call` with the model's freeform `input`, answered with a
    /// `custom_tool_call_output`. Kept with the run; a later request in the chain that
    /// sends `tools` replaces them. Other tool types are refused.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Value>,
    /// `auto`, `required`, `none` or `{"type": "function", "name": TOOL}`: overrides the
    /// agent's `tool_choice` for a run this request starts.
    #[serde(default)]
    #[schema(value_type = Option<serde_json::Value>)]
    pub tool_choice: Option<Value>,
}

/// Where a response stands.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    ToSchema,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ResponseStatus {
    InProgress,
    /// The run completed, or paused: its output then ends with the
    /// `mcp_approval_request` and `function_call` items it waits for.
    Completed,
    /// The run stopped at its agent's `max_iterations`.
    Incomplete,
    Failed,
    Cancelled,
}

impl ResponseStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why a response failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponseError {
    /// `server_error`: the run failed (model unreachable, replies exhausted, the run
    /// taken over); `toolgate resume` or a new request continues it.
    pub code: String,
    pub message: String,
}

/// Why a response is incomplete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IncompleteDetails {
    /// `max_iterations`: the agent's limit of model turns was reached.
    pub reason: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct InputTokensDetails {
    pub cached_tokens: u64,
    pub cache_write_tokens: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: u64,
}

/// Tokens used by the model turns of this response (not of the whole run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponseUsage {
    pub input_tokens: u64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: u64,
}

/// Status of a `message` or `function_call` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Incomplete,
}

/// Status of an `mcp_call` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpCallStatus {
    InProgress,
    Completed,
    Failed,
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputContent {
    OutputText {
        text: String,
        /// `container_file_citation`s of the files the run's tools saved (on the last
        /// message; fetch one with `GET /v1/files/{file_id}/content`).
        #[schema(value_type = Vec<Object>)]
        annotations: Vec<Value>,
        /// Always empty.
        #[schema(value_type = Vec<Object>)]
        logprobs: Vec<Value>,
    },
}

impl OutputContent {
    pub fn text(text: impl Into<String>) -> Self {
        OutputContent::OutputText {
            text: text.into(),
            annotations: Vec::new(),
            logprobs: Vec::new(),
        }
    }
}

/// One part of a reasoning item's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningContent {
    ReasoningText { text: String },
}

/// Why an `mcp_call` failed: the tool's error, or the reason it did not run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpCallError {
    McpToolExecutionError {
        /// `[{"type": "text", "text": "..."}]`
        #[schema(value_type = Vec<Object>)]
        content: Vec<Value>,
    },
}

impl McpCallError {
    pub fn text(message: &str) -> Self {
        McpCallError::McpToolExecutionError {
            content: vec![serde_json::json!({"type": "text", "text": message})],
        }
    }
}

/// One item of a response's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// What the model thought before it wrote what follows (`<think>`, `[THINK]`,
    /// Harmony's analysis channel, a server's `reasoning_content`), as it thought it.
    Reasoning {
        /// `rs_` + the response id's suffix + a counter.
        id: String,
        /// Always empty: toolgate writes no summaries.
        #[schema(value_type = Vec<Object>)]
        summary: Vec<Value>,
        content: Vec<ReasoningContent>,
        status: ItemStatus,
    },
    /// The model's text.
    Message {
        id: String,
        /// Always `assistant`.
        role: String,
        status: ItemStatus,
        content: Vec<OutputContent>,
    },
    /// A call toolgate ran server-side (AUTO, or approved), or refused without asking.
    McpCall {
        /// `mcp_` + the call id.
        id: String,
        server_label: String,
        name: String,
        /// The arguments as a JSON string (secret parameters redacted).
        arguments: String,
        #[serde(default)]
        output: Option<String>,
        #[serde(default)]
        error: Option<McpCallError>,
        status: McpCallStatus,
        /// The `mcp_approval_request` this call ran after, when it needed one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval_request_id: Option<String>,
    },
    /// A CONFIRM call waiting for a person: answer with an `mcp_approval_response`
    /// whose `approval_request_id` is this id.
    McpApprovalRequest {
        /// `mcpr_` + the call id.
        id: String,
        server_label: String,
        name: String,
        arguments: String,
    },
    /// A definition-only (client) tool: answer with a `function_call_output` for this
    /// `call_id`.
    FunctionCall {
        /// `fc_` + the call id.
        id: String,
        call_id: String,
        name: String,
        arguments: String,
        status: ItemStatus,
    },
    /// A custom (freeform) client tool: answer with a `custom_tool_call_output` for
    /// this `call_id`.
    CustomToolCall {
        /// `ctc_` + the call id.
        id: String,
        call_id: String,
        name: String,
        /// The model's freeform input.
        input: String,
    },
}

impl OutputItem {
    pub fn id(&self) -> &str {
        match self {
            OutputItem::Message { id, .. }
            | OutputItem::Reasoning { id, .. }
            | OutputItem::McpCall { id, .. }
            | OutputItem::McpApprovalRequest { id, .. }
            | OutputItem::FunctionCall { id, .. }
            | OutputItem::CustomToolCall { id, .. } => id,
        }
    }
}

/// The response object: `POST /v1/responses` (unstreamed, or in the `response.*`
/// stream events) and `GET /v1/responses/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponseObject {
    /// `resp_...`
    pub id: String,
    /// Always `response`.
    pub object: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds, once completed.
    pub completed_at: Option<i64>,
    pub status: ResponseStatus,
    /// As requested: `agent:NAME`.
    pub model: String,
    pub output: Vec<OutputItem>,
    pub usage: Option<ResponseUsage>,
    pub error: Option<ResponseError>,
    pub incomplete_details: Option<IncompleteDetails>,
    pub previous_response_id: Option<String>,
    /// Always null: the agent file holds the instructions.
    #[schema(value_type = Option<String>)]
    pub instructions: Option<Value>,
    /// The request's metadata, plus `toolgate_run_id` and `toolgate_conversation_id`.
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    pub parallel_tool_calls: bool,
    /// The tool choice of the run: `auto`, `required`, `none` or the tool's name.
    pub tool_choice: String,
    /// The agent's tools: one `mcp` entry for those toolgate runs, a `function` entry
    /// per client tool.
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<Value>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_output_tokens: Option<u64>,
    /// `{"format": {"type": "text"}}`
    #[schema(value_type = Object)]
    pub text: Value,
    /// Always `disabled`.
    pub truncation: String,
    /// Always true: every response is kept.
    pub store: bool,
    pub background: bool,
    /// Always null (no access programs); the official Node SDK's type requires it.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub access_programs: Option<Value>,
}

impl ResponseObject {
    /// A response just begun: in progress, no output yet.
    pub fn begin(id: &str, model: &str, created_at: i64, previous: Option<&str>) -> Self {
        Self {
            id: id.to_string(),
            object: "response".into(),
            created_at,
            completed_at: None,
            status: ResponseStatus::InProgress,
            model: model.to_string(),
            output: Vec::new(),
            usage: None,
            error: None,
            incomplete_details: None,
            previous_response_id: previous.map(str::to_string),
            instructions: None,
            metadata: Map::new(),
            parallel_tool_calls: true,
            tool_choice: "auto".into(),
            tools: Vec::new(),
            temperature: None,
            top_p: None,
            max_output_tokens: None,
            text: super::structured::plain(),
            truncation: "disabled".into(),
            store: true,
            background: false,
            access_programs: None,
        }
    }
}

/// A new response id.
pub fn new_response_id() -> String {
    format!("resp_{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use strum::VariantArray;

    use super::ResponseStatus;

    /// A status's name (stored with the response, and in events) is its serde name.
    #[test]
    fn each_status_is_named_as_serde_names_it() {
        for status in ResponseStatus::VARIANTS {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        let names: Vec<&str> = ResponseStatus::VARIANTS
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "in_progress",
                "completed",
                "incomplete",
                "failed",
                "cancelled"
            ]
        );
    }
}
