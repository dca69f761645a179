//! The spans of a run, named and attributed by the OpenTelemetry GenAI semantic
//! conventions: a drive is `invoke_agent {agent}`, a model request `chat {model}`, a
//! tool call `execute_tool {tool}` (`gen_ai.operation.name`, `gen_ai.tool.name`,
//! `gen_ai.tool.call.id`, `gen_ai.usage.input_tokens`, ...). Their `tracing` names
//! (`run`, `turn`, `model_call`, `call`) are what the logs show. Argument and result
//! values are recorded only with `--trace-content`, and then as the records hold them
//! (secrets masked).

use std::fmt;

use tracing::Span;
use tracing::field::Empty;

use toolgate_protocol::Usage;

/// What each attribute of the spans below means, for the reference (a span attribute
/// missing here fails the reference's generation).
pub const ATTRIBUTES: &[(&str, &str)] = &[
    ("run_id", "The run's id (logs)."),
    ("agent", "The agent's name (logs)."),
    ("call_id", "The call's id (logs)."),
    ("tool", "The tool's name (logs)."),
    (
        "otel.name",
        "The exported span name: `invoke_agent AGENT`, `chat MODEL`, `execute_tool TOOL`.",
    ),
    (
        "otel.kind",
        "The exported span kind (`client` for a model request).",
    ),
    (
        "otel.status_code",
        "`error` when the drive, request or call failed.",
    ),
    (
        "gen_ai.operation.name",
        "`invoke_agent`, `chat` or `execute_tool`.",
    ),
    (
        "gen_ai.provider.name",
        "`openai`, `toolgate.scripted`, or `toolgate` for other models.",
    ),
    ("gen_ai.agent.name", "The agent's name."),
    ("gen_ai.conversation.id", "The run's conversation."),
    (
        "gen_ai.request.model",
        "The model's name, without its provider.",
    ),
    (
        "gen_ai.usage.input_tokens",
        "Prompt tokens the model reported.",
    ),
    (
        "gen_ai.usage.output_tokens",
        "Answer tokens the model reported.",
    ),
    ("gen_ai.tool.name", "The tool's name."),
    ("gen_ai.tool.call.id", "The call's id."),
    ("gen_ai.tool.type", "`function`."),
    (
        "gen_ai.tool.call.arguments",
        "The call's arguments as recorded (secrets masked); with `--trace-content` only.",
    ),
    (
        "gen_ai.tool.call.result",
        "The call's result as recorded (secrets masked); with `--trace-content` only.",
    ),
    ("error.type", "The kind of error when the span failed."),
];

/// `{operation} {name}`: a GenAI span's name.
struct OpName<'a>(&'static str, &'a str);

impl fmt::Display for OpName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.0, self.1)
    }
}

/// `gen_ai.provider.name` for a model name.
pub fn provider(model: &str) -> &'static str {
    match model.split_once(':') {
        Some(("openai", _)) => "openai",
        Some(("scripted", _)) => "toolgate.scripted",
        _ => "toolgate",
    }
}

/// The span of one drive of a run (`invoke_agent`).
pub fn run_span(run_id: &str, agent: &str, conversation_id: &str, model: &str) -> Span {
    let request_model = super::model_name(model);
    tracing::info_span!(
        "run",
        run_id = %run_id,
        agent = %agent,
        otel.name = %OpName("invoke_agent", agent),
        otel.status_code = Empty,
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.provider.name" = provider(model),
        "gen_ai.agent.name" = %agent,
        "gen_ai.conversation.id" = %conversation_id,
        "gen_ai.request.model" = %request_model,
        "error.type" = Empty,
    )
}

/// Marks a span failed, with the kind of error (`error.type`).
pub fn failed(span: &Span, kind: &str) {
    span.record("otel.status_code", "error");
    span.record("error.type", kind);
}

/// The span of one model request (`chat`).
pub fn model_span(model: &str) -> Span {
    let request_model = super::model_name(model);
    tracing::info_span!(
        "model_call",
        otel.name = %OpName("chat", request_model),
        otel.kind = "client",
        otel.status_code = Empty,
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = provider(model),
        "gen_ai.request.model" = %request_model,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "error.type" = Empty,
    )
}

/// What a model request used, or why it failed.
pub fn model_done(span: &Span, outcome: Result<&Usage, &str>) {
    match outcome {
        Ok(u) => {
            // As integers: a u64 would be exported as text.
            let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            span.record("gen_ai.usage.input_tokens", int(u.prompt_tokens));
            span.record("gen_ai.usage.output_tokens", int(u.completion_tokens));
        }
        Err(kind) => failed(span, kind),
    }
}

/// The span of one tool call (`execute_tool`), a child of `parent`.
pub fn tool_span(parent: &Span, call_id: &str, tool: &str) -> Span {
    tracing::info_span!(
        parent: parent,
        "call",
        call_id = %call_id,
        tool = %tool,
        otel.name = %OpName("execute_tool", tool),
        otel.status_code = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = %tool,
        "gen_ai.tool.call.id" = %call_id,
        "gen_ai.tool.type" = "function",
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
    )
}

/// How a tool call ended; with `--trace-content`, its arguments and result as
/// recorded (secret values already masked there).
pub fn tool_done(
    span: &Span,
    error_kind: Option<&str>,
    arguments: &serde_json::Value,
    result: Option<&str>,
) {
    if span.is_disabled() {
        return;
    }
    if let Some(kind) = error_kind {
        failed(span, kind);
    }
    if super::propagate::trace_content() {
        span.record("gen_ai.tool.call.arguments", arguments.to_string());
        if let Some(r) = result {
            span.record("gen_ai.tool.call.result", r);
        }
    }
}
