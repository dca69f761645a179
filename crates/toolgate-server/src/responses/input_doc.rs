//! The shapes `input::parse_input` accepts, as OpenAPI schemas: a client (or a
//! property-based tester) reads from the document exactly what the endpoint takes. For
//! the document only; the handler reads the input as JSON and refuses the rest itself.
#![allow(dead_code)]

use serde::Serialize;
use utoipa::ToSchema;

/// `input`: the user's message as text, or a list of input items.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum InputDoc {
    Text(InputText),
    /// At least one (the document says so: `minItems`).
    Items(Vec<InputItemDoc>),
}

/// The user's message: not blank.
#[derive(Serialize, ToSchema)]
#[schema(pattern = r"[^ \t\n\r\f\v]")]
pub struct InputText(String);

/// One input item: a user message, an answer to an `mcp_approval_request`, or a client
/// tool's output.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum InputItemDoc {
    Message(MessageDoc),
    ApprovalResponse(ApprovalResponseDoc),
    FunctionCallOutput(FunctionCallOutputDoc),
    CustomToolCallOutput(CustomToolCallOutputDoc),
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    Message,
}

/// Only user messages: instructions come from the agent file, earlier turns from
/// `previous_response_id`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UserRole {
    User,
}

/// A user message.
#[derive(Serialize, ToSchema)]
pub struct MessageDoc {
    #[serde(rename = "type")]
    pub kind: Option<MessageType>,
    pub role: UserRole,
    pub content: MessageContentDoc,
}

/// A message's text, whole or in text parts.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum MessageContentDoc {
    Text(String),
    Parts(Vec<TextPartDoc>),
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextPartType {
    InputText,
    Text,
    OutputText,
}

#[derive(Serialize, ToSchema)]
pub struct TextPartDoc {
    #[serde(rename = "type")]
    pub kind: TextPartType,
    pub text: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalResponseType {
    McpApprovalResponse,
}

/// Approves or denies the call of an `mcp_approval_request` (its `id`).
#[derive(Serialize, ToSchema)]
pub struct ApprovalResponseDoc {
    #[serde(rename = "type")]
    pub kind: ApprovalResponseType,
    #[schema(min_length = 1)]
    pub approval_request_id: String,
    pub approve: bool,
    pub reason: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FunctionCallOutputType {
    FunctionCallOutput,
}

/// The output of a client tool's `function_call` (its `call_id`).
#[derive(Serialize, ToSchema)]
pub struct FunctionCallOutputDoc {
    #[serde(rename = "type")]
    pub kind: FunctionCallOutputType,
    #[schema(min_length = 1)]
    pub call_id: String,
    pub output: OutputDoc,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CustomToolCallOutputType {
    CustomToolCallOutput,
}

/// The output of a custom tool's `custom_tool_call` (its `call_id`).
#[derive(Serialize, ToSchema)]
pub struct CustomToolCallOutputDoc {
    #[serde(rename = "type")]
    pub kind: CustomToolCallOutputType,
    #[schema(min_length = 1)]
    pub call_id: String,
    pub output: OutputDoc,
}

/// A tool output: text, or parts each with a `text`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum OutputDoc {
    Text(String),
    Parts(Vec<OutputPartDoc>),
}

#[derive(Serialize, ToSchema)]
pub struct OutputPartDoc {
    pub text: String,
}
