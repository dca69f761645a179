//! From a run's events to a response: the output items in the order things happen
//! (model text -> `message`, a call run server-side -> `mcp_call`, a CONFIRM call ->
//! `mcp_approval_request`, a client tool -> `function_call`), and the Responses stream
//! events announcing them, numbered, in the sequence the OpenAI SDKs' stream helpers
//! accept. Pure: the caller feeds events and call records, and sends what comes back.
//!
//! An `mcp_call` is finished from its call record (committed with the step that ran
//! it), not from the `tool.finished` event: the record holds the output, and the
//! arguments with secret parameters redacted.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::input::{APPROVAL_PREFIX, FUNCTION_CALL_PREFIX, MCP_CALL_PREFIX};
use super::wire::{
    IncompleteDetails, InputTokensDetails, ItemStatus, McpCallError, McpCallStatus, OutputContent,
    OutputItem, OutputTokensDetails, ResponseError, ResponseObject, ResponseStatus, ResponseUsage,
    SERVER_LABEL,
};
use crate::protocol::{
    CallStatus, Event, ItemKind, RequiredItem, RunEvent, RunObject, RunStatus, Usage,
};
use crate::store::CallRecord;

/// One stream event: a JSON object with its `type` and `sequence_number`.
pub type StreamEvent = Value;

/// How the run's part in a response ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    pub status: ResponseStatus,
    pub error: Option<ResponseError>,
    pub incomplete: Option<IncompleteDetails>,
    pub usage: ResponseUsage,
    /// What the run still waits for (a paused run): listed in the output if no event
    /// announced them.
    pub waiting: Vec<RequiredItem>,
    /// Unix seconds.
    pub at: i64,
}

/// The ending of a response from the run object after the drive (if it could be read)
/// and the error the drive ended with (if any). `before` is the run's usage when the
/// response began.
pub fn ending(run: Option<&RunObject>, error: Option<&str>, before: Usage, at: i64) -> Ending {
    let usage = run
        .map(|r| usage_between(before, r.usage))
        .unwrap_or_default();
    let failed = |message: String| Ending {
        status: ResponseStatus::Failed,
        error: Some(ResponseError {
            code: "server_error".into(),
            message,
        }),
        incomplete: None,
        usage,
        waiting: Vec::new(),
        at,
    };
    if let Some(message) = error {
        return failed(message.to_string());
    }
    let Some(run) = run else {
        return failed("the run could not be read after it stopped".into());
    };
    let plain = |status| Ending {
        status,
        error: None,
        incomplete: None,
        usage,
        waiting: Vec::new(),
        at,
    };
    match run.status {
        RunStatus::Completed => plain(ResponseStatus::Completed),
        RunStatus::RequiresAction => Ending {
            waiting: run
                .required_action
                .as_ref()
                .map(|r| r.items.clone())
                .unwrap_or_default(),
            ..plain(ResponseStatus::Completed)
        },
        RunStatus::Incomplete => Ending {
            incomplete: Some(IncompleteDetails {
                reason: "max_iterations".into(),
            }),
            ..plain(ResponseStatus::Incomplete)
        },
        RunStatus::Cancelled => plain(ResponseStatus::Cancelled),
        RunStatus::Failed => failed(
            run.last_error
                .clone()
                .unwrap_or_else(|| "the run failed".into()),
        ),
        RunStatus::InProgress => failed(format!(
            "run {} stopped while in progress; toolgate resume {} continues it",
            run.id, run.id
        )),
    }
}

/// The tokens used between two readings of a run's usage.
pub fn usage_between(before: Usage, after: Usage) -> ResponseUsage {
    let input = after.prompt_tokens.saturating_sub(before.prompt_tokens);
    let output = after
        .completion_tokens
        .saturating_sub(before.completion_tokens);
    ResponseUsage {
        input_tokens: input,
        input_tokens_details: InputTokensDetails::default(),
        output_tokens: output,
        output_tokens_details: OutputTokensDetails::default(),
        total_tokens: input + output,
    }
}

/// Builds one response from the events of the drive it covers.
pub struct Translator {
    response: ResponseObject,
    seq: u64,
    /// The message being streamed, by output index.
    open: Option<usize>,
    /// Whitespace at the end of the open message, held until more text follows.
    held: String,
    messages: usize,
    /// The output index of each call's `mcp_call`.
    calls: HashMap<String, usize>,
    /// Calls whose `mcp_call` waits for its record, in order.
    awaiting: Vec<String>,
    /// What the model was told about calls resolved without running, in case their
    /// record never comes.
    told: HashMap<String, String>,
    /// Calls the client answers (in this request or an earlier one): true for approval
    /// items.
    answered: HashMap<String, bool>,
}

impl Translator {
    /// A translator for `response` (its output empty); `answered` holds the calls the
    /// client answers (true: approval items), which get no item of their own when
    /// resolved, and whose `mcp_call`, when they run, names their approval request.
    pub fn new(response: ResponseObject, answered: HashMap<String, bool>) -> Self {
        Self {
            response,
            seq: 0,
            open: None,
            held: String::new(),
            messages: 0,
            calls: HashMap::new(),
            awaiting: Vec::new(),
            told: HashMap::new(),
            answered,
        }
    }

    /// The response as built so far.
    pub fn response(&self) -> &ResponseObject {
        &self.response
    }

    pub fn response_mut(&mut self) -> &mut ResponseObject {
        &mut self.response
    }

    /// Calls whose `mcp_call` waits for its record.
    pub fn awaiting(&self) -> &[String] {
        &self.awaiting
    }

    fn emit(&mut self, out: &mut Vec<StreamEvent>, kind: &str, body: Value) {
        let mut event = json!({"type": kind, "sequence_number": self.seq});
        if let (Some(e), Value::Object(fields)) = (event.as_object_mut(), body) {
            e.extend(fields);
        }
        self.seq += 1;
        out.push(event);
    }

    fn item_json(&self, index: usize) -> Value {
        serde_json::to_value(&self.response.output[index]).unwrap_or(Value::Null)
    }

    fn push_item(&mut self, out: &mut Vec<StreamEvent>, item: OutputItem) -> usize {
        let index = self.response.output.len();
        self.response.output.push(item);
        let item = self.item_json(index);
        self.emit(
            out,
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        index
    }

    fn item_done(&mut self, out: &mut Vec<StreamEvent>, index: usize) {
        let item = self.item_json(index);
        self.emit(
            out,
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }

    /// `response.created` and `response.in_progress`.
    pub fn start(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        let response = serde_json::to_value(&self.response).unwrap_or(Value::Null);
        self.emit(&mut out, "response.created", json!({"response": response}));
        self.emit(
            &mut out,
            "response.in_progress",
            json!({"response": response}),
        );
        out
    }

    /// One run event.
    pub fn event(&mut self, event: &RunEvent) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        match event {
            RunEvent::TextDelta { text, .. } => self.text(&mut out, text),
            RunEvent::ModelRetry { .. } => {
                // The model starts its answer again: what was shown of it stays, cut short.
                self.close_message(&mut out, ItemStatus::Incomplete);
            }
            RunEvent::ApprovalRequested { item, .. } => {
                self.close_message(&mut out, ItemStatus::Completed);
                self.waiting_item(&mut out, item);
            }
            RunEvent::Tool {
                event: Event::ToolStarted { call_id, tool, .. },
                ..
            } => {
                self.close_message(&mut out, ItemStatus::Completed);
                self.mcp_call(&mut out, call_id, tool);
            }
            RunEvent::Tool {
                event: Event::ToolFinished { call_id, tool, .. },
                ..
            } => {
                // Calls that could not start (unknown tool, invalid arguments) have no
                // tool.started.
                self.close_message(&mut out, ItemStatus::Completed);
                self.mcp_call(&mut out, call_id, tool);
                if !self.awaiting.contains(call_id) {
                    self.awaiting.push(call_id.clone());
                }
            }
            RunEvent::ToolResolved {
                call_id,
                tool,
                output,
                ..
            } => {
                self.close_message(&mut out, ItemStatus::Completed);
                // A call the client answered is its own doing: no item.
                if !self.answered.contains_key(call_id) {
                    self.mcp_call(&mut out, call_id, tool);
                    self.told.insert(call_id.clone(), output.clone());
                    if !self.awaiting.contains(call_id) {
                        self.awaiting.push(call_id.clone());
                    }
                }
            }
            RunEvent::ToolCallParsed { .. }
            | RunEvent::RunRequiresAction { .. }
            | RunEvent::RunCompleted { .. }
            | RunEvent::RunIncomplete { .. }
            | RunEvent::RunFailed { .. }
            | RunEvent::RunCancelled { .. } => {
                self.close_message(&mut out, ItemStatus::Completed);
            }
            RunEvent::RunStarted { .. }
            | RunEvent::ParseProblem { .. }
            | RunEvent::Tool {
                event: Event::ToolOutput { .. },
                ..
            } => {}
        }
        out
    }

    fn text(&mut self, out: &mut Vec<StreamEvent>, delta: &str) {
        let index = match self.open {
            Some(index) => index,
            None => {
                if delta.trim().is_empty() {
                    // Whitespace between calls is no message.
                    return;
                }
                let suffix = self.response.id.trim_start_matches("resp_").to_string();
                let id = format!("msg_{suffix}_{}", self.messages);
                self.messages += 1;
                let index = self.push_item(
                    out,
                    OutputItem::Message {
                        id: id.clone(),
                        role: "assistant".into(),
                        status: ItemStatus::InProgress,
                        content: Vec::new(),
                    },
                );
                let part = OutputContent::text("");
                if let OutputItem::Message { content, .. } = &mut self.response.output[index] {
                    content.push(part.clone());
                }
                self.emit(
                    out,
                    "response.content_part.added",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
                );
                self.open = Some(index);
                index
            }
        };
        let mut text = std::mem::take(&mut self.held);
        text.push_str(if self.message_text(index).is_empty() {
            delta.trim_start()
        } else {
            delta
        });
        let kept = text.trim_end().len();
        self.held = text[kept..].to_string();
        text.truncate(kept);
        if text.is_empty() {
            return;
        }
        if let OutputItem::Message { content, .. } = &mut self.response.output[index]
            && let Some(OutputContent::OutputText { text: all, .. }) = content.first_mut()
        {
            all.push_str(&text);
        }
        let id = self.response.output[index].id().to_string();
        self.emit(
            out,
            "response.output_text.delta",
            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": text, "logprobs": []}),
        );
    }

    fn message_text(&self, index: usize) -> &str {
        match &self.response.output[index] {
            OutputItem::Message { content, .. } => match content.first() {
                Some(OutputContent::OutputText { text, .. }) => text,
                None => "",
            },
            _ => "",
        }
    }

    fn close_message(&mut self, out: &mut Vec<StreamEvent>, status: ItemStatus) {
        let Some(index) = self.open.take() else {
            return;
        };
        self.held.clear();
        let text = self.message_text(index).to_string();
        let id = self.response.output[index].id().to_string();
        self.emit(
            out,
            "response.output_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
        );
        self.emit(
            out,
            "response.content_part.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": OutputContent::text(text)}),
        );
        if let OutputItem::Message { status: s, .. } = &mut self.response.output[index] {
            *s = status;
        }
        self.item_done(out, index);
    }

    /// An item a paused run waits for: `mcp_approval_request` or `function_call`.
    fn waiting_item(&mut self, out: &mut Vec<StreamEvent>, item: &RequiredItem) {
        let arguments = item.arguments.to_string();
        match item.kind {
            ItemKind::Approval => {
                let index = self.push_item(
                    out,
                    OutputItem::McpApprovalRequest {
                        id: format!("{APPROVAL_PREFIX}{}", item.call_id),
                        server_label: SERVER_LABEL.into(),
                        name: item.tool.clone(),
                        arguments,
                    },
                );
                self.item_done(out, index);
            }
            ItemKind::SubmitToolOutput => {
                let id = format!("{FUNCTION_CALL_PREFIX}{}", item.call_id);
                let index = self.push_item(
                    out,
                    OutputItem::FunctionCall {
                        id: id.clone(),
                        call_id: item.call_id.clone(),
                        name: item.tool.clone(),
                        arguments: String::new(),
                        status: ItemStatus::InProgress,
                    },
                );
                self.emit(
                    out,
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": index, "delta": arguments}),
                );
                self.emit(
                    out,
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": index, "name": item.tool, "arguments": arguments}),
                );
                if let OutputItem::FunctionCall {
                    arguments: a,
                    status,
                    ..
                } = &mut self.response.output[index]
                {
                    *a = arguments;
                    *status = ItemStatus::Completed;
                }
                self.item_done(out, index);
            }
        }
    }

    /// The `mcp_call` of a call, added (in progress) unless it is there already.
    fn mcp_call(&mut self, out: &mut Vec<StreamEvent>, call_id: &str, tool: &str) {
        if self.calls.contains_key(call_id) {
            return;
        }
        let id = format!("{MCP_CALL_PREFIX}{call_id}");
        let approval = (self.answered.get(call_id) == Some(&true))
            .then(|| format!("{APPROVAL_PREFIX}{call_id}"));
        let index = self.push_item(
            out,
            OutputItem::McpCall {
                id: id.clone(),
                server_label: SERVER_LABEL.into(),
                name: tool.to_string(),
                arguments: String::new(),
                output: None,
                error: None,
                status: McpCallStatus::InProgress,
                approval_request_id: approval,
            },
        );
        self.calls.insert(call_id.to_string(), index);
        self.emit(
            out,
            "response.mcp_call.in_progress",
            json!({"item_id": id, "output_index": index}),
        );
    }

    /// A call's committed record: its `mcp_call` gets arguments, output or error, and
    /// is done. Records of calls that are not awaited are ignored.
    pub fn record(&mut self, record: &CallRecord) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        let Some(pos) = self.awaiting.iter().position(|c| c == &record.call_id) else {
            return out;
        };
        self.awaiting.remove(pos);
        let ok = record.status == CallStatus::Succeeded;
        let message = record
            .error_message
            .clone()
            .or_else(|| (!ok).then(|| record.result.clone()).flatten())
            .unwrap_or_else(|| format!("the call ended as {}", record.status.as_str()));
        self.finish_call(
            &mut out,
            &record.call_id,
            record.arguments.to_string(),
            record.result.clone(),
            (!ok).then_some(message),
        );
        out
    }

    /// A call whose record never came (the run stopped before saving it).
    fn unrecorded(&mut self, out: &mut Vec<StreamEvent>, call_id: &str) {
        let message = self.told.get(call_id).cloned().unwrap_or_else(|| {
            "the run stopped before this call's result was saved; its outcome is unknown"
                .to_string()
        });
        self.finish_call(out, call_id, "{}".into(), None, Some(message));
    }

    fn finish_call(
        &mut self,
        out: &mut Vec<StreamEvent>,
        call_id: &str,
        args: String,
        result: Option<String>,
        failure: Option<String>,
    ) {
        let Some(&index) = self.calls.get(call_id) else {
            return;
        };
        let id = self.response.output[index].id().to_string();
        self.emit(
            out,
            "response.mcp_call_arguments.delta",
            json!({"item_id": id, "output_index": index, "delta": args}),
        );
        self.emit(
            out,
            "response.mcp_call_arguments.done",
            json!({"item_id": id, "output_index": index, "arguments": args}),
        );
        let failed = failure.is_some();
        if let OutputItem::McpCall {
            arguments,
            output,
            error,
            status,
            ..
        } = &mut self.response.output[index]
        {
            *arguments = args;
            *output = result;
            *error = failure.as_deref().map(McpCallError::text);
            *status = if failed {
                McpCallStatus::Failed
            } else {
                McpCallStatus::Completed
            };
        }
        let kind = if failed {
            "response.mcp_call.failed"
        } else {
            "response.mcp_call.completed"
        };
        self.emit(out, kind, json!({"item_id": id, "output_index": index}));
        self.item_done(out, index);
    }

    /// Ends the response: open items closed, the items a paused run waits for listed,
    /// the status, usage and error set, and the last event (`response.completed`,
    /// `response.incomplete`, or `response.failed` for a failed or cancelled run).
    pub fn finish(&mut self, ending: Ending) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        self.close_message(&mut out, ItemStatus::Completed);
        for call_id in std::mem::take(&mut self.awaiting) {
            self.unrecorded(&mut out, &call_id);
        }
        for item in &ending.waiting {
            let shown = self.response.output.iter().any(|o| match o {
                OutputItem::McpApprovalRequest { id, .. } => {
                    id.strip_prefix(APPROVAL_PREFIX) == Some(item.call_id.as_str())
                }
                OutputItem::FunctionCall { call_id, .. } => call_id == &item.call_id,
                _ => false,
            });
            if !shown {
                self.waiting_item(&mut out, item);
            }
        }
        let r = &mut self.response;
        r.status = ending.status;
        r.error = ending.error;
        r.incomplete_details = ending.incomplete;
        r.usage = Some(ending.usage);
        r.completed_at = (ending.status == ResponseStatus::Completed).then_some(ending.at);
        let kind = match ending.status {
            ResponseStatus::Completed => "response.completed",
            ResponseStatus::Incomplete => "response.incomplete",
            ResponseStatus::Failed | ResponseStatus::Cancelled | ResponseStatus::InProgress => {
                "response.failed"
            }
        };
        let response = serde_json::to_value(&self.response).unwrap_or(Value::Null);
        self.emit(&mut out, kind, json!({"response": response}));
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::protocol::CallerKind;

    const RUN: &str = "run_1";

    fn translator(answered: &[(&str, bool)]) -> Translator {
        let response = ResponseObject::begin("resp_abc", "agent:assistant", 100, None);
        let answered = answered.iter().map(|(c, a)| (c.to_string(), *a)).collect();
        Translator::new(response, answered)
    }

    fn text(t: &str) -> RunEvent {
        RunEvent::TextDelta {
            run_id: RUN.into(),
            text: t.into(),
        }
    }

    fn started(call: &str, tool: &str) -> RunEvent {
        RunEvent::Tool {
            run_id: RUN.into(),
            event: Event::ToolStarted {
                call_id: call.into(),
                tool: tool.into(),
                conversation_id: "conv".into(),
            },
        }
    }

    fn finished(call: &str, tool: &str, status: CallStatus) -> RunEvent {
        RunEvent::Tool {
            run_id: RUN.into(),
            event: Event::ToolFinished {
                call_id: call.into(),
                tool: tool.into(),
                status,
                duration_ms: 1.0,
                error_kind: None,
            },
        }
    }

    fn requested(call: &str, tool: &str, kind: ItemKind) -> RunEvent {
        RunEvent::ApprovalRequested {
            run_id: RUN.into(),
            item: item(call, tool, kind),
        }
    }

    fn item(call: &str, tool: &str, kind: ItemKind) -> RequiredItem {
        RequiredItem {
            call_id: call.into(),
            kind,
            tool: tool.into(),
            arguments: json!({"a": 1}),
        }
    }

    fn record(call: &str, tool: &str, status: CallStatus, result: &str) -> CallRecord {
        let mut r = CallRecord {
            call_id: call.into(),
            run_id: Some(RUN.into()),
            conversation_id: "conv".into(),
            agent: None,
            caller: CallerKind::Agent,
            tool: tool.into(),
            arguments: json!({"expression": "2+3*4", "key": "[secret]"}),
            result: None,
            result_size: 0,
            status,
            error_kind: None,
            error_message: None,
            started_at: 0,
            duration_ms: 1.0,
        };
        if status == CallStatus::Succeeded {
            r.set_result(result);
        } else {
            r.error_message = Some(result.into());
        }
        r
    }

    fn done(status: ResponseStatus, waiting: Vec<RequiredItem>) -> Ending {
        Ending {
            status,
            error: None,
            incomplete: None,
            usage: ResponseUsage::default(),
            waiting,
            at: 200,
        }
    }

    fn types(events: &[StreamEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect()
    }

    /// Feeds events; returns every stream event produced, start and finish included.
    fn run(
        t: &mut Translator,
        events: &[RunEvent],
        records: &[CallRecord],
        end: Ending,
    ) -> Vec<StreamEvent> {
        let mut out = t.start();
        for e in events {
            let is_tool = matches!(e, RunEvent::Tool { .. });
            if !is_tool {
                for r in records {
                    out.extend(t.record(r));
                }
            }
            out.extend(t.event(e));
        }
        for r in records {
            out.extend(t.record(r));
        }
        out.extend(t.finish(end));
        out
    }

    #[test]
    fn text_streams_as_one_message_with_the_full_event_sequence() {
        let mut t = translator(&[]);
        let events = run(
            &mut t,
            &[
                text("\n Hel"),
                text("lo "),
                text("world\n"),
                RunEvent::RunCompleted { run_id: RUN.into() },
            ],
            &[],
            done(ResponseStatus::Completed, vec![]),
        );
        assert_eq!(
            types(&events),
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let seqs: Vec<u64> = events
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
        // Leading and trailing whitespace never shows; the deltas add up to the text.
        let deltas: String = events
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, "Hello world");
        assert_eq!(events[7]["text"], "Hello world");
        let delta = &events[4];
        assert_eq!(delta["item_id"], "msg_abc_0");
        assert_eq!(
            (
                delta["output_index"].as_u64(),
                delta["content_index"].as_u64()
            ),
            (Some(0), Some(0))
        );
        assert_eq!(delta["logprobs"], json!([]));
        let last = &events[10]["response"];
        assert_eq!(last["status"], "completed");
        assert_eq!(last["completed_at"], 200);
        assert_eq!(
            last["output"],
            json!([{"type": "message", "id": "msg_abc_0", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "Hello world", "annotations": [], "logprobs": []}]}])
        );
        assert_eq!(events[0]["response"]["status"], "in_progress");
        assert_eq!(events[0]["response"]["output"], json!([]));
    }

    #[test]
    fn an_auto_call_becomes_an_mcp_call_finished_from_its_record() {
        let mut t = translator(&[]);
        let events = [
            text("Let me work that out."),
            RunEvent::ToolCallParsed {
                run_id: RUN.into(),
                call_id: "call_calc".into(),
                tool: "calculator".into(),
                arguments: json!({"expression": "2+3*4", "key": "hunter2"}),
            },
            started("call_calc", "calculator"),
            finished("call_calc", "calculator", CallStatus::Succeeded),
            text("It is 14."),
            RunEvent::RunCompleted { run_id: RUN.into() },
        ];
        let out = run(
            &mut t,
            &events,
            &[record(
                "call_calc",
                "calculator",
                CallStatus::Succeeded,
                "14",
            )],
            done(ResponseStatus::Completed, vec![]),
        );
        let kinds = types(&out);
        let call_events: Vec<&str> = kinds
            .iter()
            .map(String::as_str)
            .filter(|k| k.contains("mcp_call") || k.contains("output_item"))
            .collect();
        assert_eq!(
            call_events,
            [
                "response.output_item.added",
                "response.output_item.done",
                "response.output_item.added",
                "response.mcp_call.in_progress",
                "response.mcp_call_arguments.delta",
                "response.mcp_call_arguments.done",
                "response.mcp_call.completed",
                "response.output_item.done",
                "response.output_item.added",
                "response.output_item.done",
            ]
        );
        let output = &t.response().output;
        assert_eq!(output.len(), 3);
        let call = serde_json::to_value(&output[1]).unwrap();
        assert_eq!(
            call,
            json!({"type": "mcp_call", "id": "mcp_call_calc", "server_label": "toolgate", "name": "calculator",
                   "arguments": "{\"expression\":\"2+3*4\",\"key\":\"[secret]\"}", "output": "14", "error": null,
                   "status": "completed"})
        );
        // The secret in the parsed event never reaches the client.
        assert!(!out.iter().any(|e| e.to_string().contains("hunter2")));
    }

    #[test]
    fn a_failed_call_carries_its_error() {
        let mut t = translator(&[]);
        run(
            &mut t,
            &[
                finished("c1", "nope", CallStatus::Failed),
                RunEvent::RunCompleted { run_id: RUN.into() },
            ],
            &[record(
                "c1",
                "nope",
                CallStatus::Failed,
                "unknown tool 'nope'",
            )],
            done(ResponseStatus::Completed, vec![]),
        );
        let call = serde_json::to_value(&t.response().output[0]).unwrap();
        assert_eq!(call["status"], "failed");
        assert_eq!(call["output"], Value::Null);
        assert_eq!(
            call["error"],
            json!({"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": "unknown tool 'nope'"}]})
        );
    }

    #[test]
    fn a_pause_lists_approval_requests_and_function_calls() {
        let mut t = translator(&[]);
        let out = run(
            &mut t,
            &[
                text("I will save it."),
                requested("call_write", "write_file", ItemKind::Approval),
                requested("call_ask", "ask_user", ItemKind::SubmitToolOutput),
                RunEvent::RunRequiresAction {
                    run_id: RUN.into(),
                    items: vec![],
                },
            ],
            &[],
            done(
                ResponseStatus::Completed,
                vec![
                    item("call_write", "write_file", ItemKind::Approval),
                    item("call_ask", "ask_user", ItemKind::SubmitToolOutput),
                ],
            ),
        );
        let output = serde_json::to_value(&t.response().output).unwrap();
        assert_eq!(
            output[1],
            json!({"type": "mcp_approval_request", "id": "mcpr_call_write", "server_label": "toolgate",
                   "name": "write_file", "arguments": "{\"a\":1}"})
        );
        assert_eq!(
            output[2],
            json!({"type": "function_call", "id": "fc_call_ask", "call_id": "call_ask", "name": "ask_user",
                   "arguments": "{\"a\":1}", "status": "completed"})
        );
        assert_eq!(
            output.as_array().unwrap().len(),
            3,
            "waiting items are not listed twice"
        );
        let fc: Vec<&StreamEvent> = out.iter().filter(|e| e["output_index"] == 2).collect();
        assert_eq!(
            types(&fc.into_iter().cloned().collect::<Vec<_>>()),
            [
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
            ]
        );
        assert_eq!(out.last().unwrap()["type"], "response.completed");
    }

    #[test]
    fn answered_calls_get_no_item_and_approved_ones_link_their_request() {
        let mut t = translator(&[
            ("call_write", true),
            ("call_ask", false),
            ("call_other", false),
        ]);
        run(
            &mut t,
            &[
                RunEvent::ToolResolved {
                    run_id: RUN.into(),
                    call_id: "call_ask".into(),
                    tool: "ask_user".into(),
                    status: CallStatus::Client,
                    output: "blue".into(),
                },
                started("call_write", "write_file"),
                finished("call_write", "write_file", CallStatus::Succeeded),
                RunEvent::RunCompleted { run_id: RUN.into() },
            ],
            &[record(
                "call_write",
                "write_file",
                CallStatus::Succeeded,
                "wrote 11 bytes",
            )],
            done(ResponseStatus::Completed, vec![]),
        );
        let output = serde_json::to_value(&t.response().output).unwrap();
        assert_eq!(output.as_array().unwrap().len(), 1);
        assert_eq!(output[0]["approval_request_id"], "mcpr_call_write");
        assert_eq!(output[0]["output"], "wrote 11 bytes");
    }

    #[test]
    fn a_call_refused_by_policy_is_a_failed_mcp_call_even_without_a_record() {
        let mut t = translator(&[]);
        run(
            &mut t,
            &[RunEvent::ToolResolved {
                run_id: RUN.into(),
                call_id: "c9".into(),
                tool: "shell".into(),
                status: CallStatus::Denied,
                output: "'shell' is not allowed".into(),
            }],
            &[],
            done(ResponseStatus::Completed, vec![]),
        );
        let call = serde_json::to_value(&t.response().output[0]).unwrap();
        assert_eq!(call["status"], "failed");
        assert_eq!(
            call["error"]["content"][0]["text"],
            "'shell' is not allowed"
        );
    }

    #[test]
    fn a_retry_cuts_the_message_short_and_a_new_one_follows() {
        let mut t = translator(&[]);
        run(
            &mut t,
            &[
                text("Hal"),
                RunEvent::ModelRetry {
                    run_id: RUN.into(),
                    attempt: 1,
                    wait_ms: 10,
                    error: "503".into(),
                },
                text("Hello"),
            ],
            &[],
            done(ResponseStatus::Completed, vec![]),
        );
        let output = serde_json::to_value(&t.response().output).unwrap();
        assert_eq!(output[0]["status"], "incomplete");
        assert_eq!(output[1]["content"][0]["text"], "Hello");
        assert_eq!(output[1]["id"], "msg_abc_1");
    }

    #[test]
    fn failures_end_with_response_failed() {
        let mut t = translator(&[]);
        let end = Ending {
            error: Some(ResponseError {
                code: "server_error".into(),
                message: "model down".into(),
            }),
            ..done(ResponseStatus::Failed, vec![])
        };
        let out = run(&mut t, &[text("par")], &[], end);
        let last = out.last().unwrap();
        assert_eq!(last["type"], "response.failed");
        assert_eq!(
            last["response"]["error"],
            json!({"code": "server_error", "message": "model down"})
        );
        assert_eq!(last["response"]["completed_at"], Value::Null);
        assert_eq!(last["response"]["output"][0]["status"], "completed");
    }

    fn run_object(status: RunStatus, usage: Usage) -> RunObject {
        RunObject {
            id: RUN.into(),
            object: "run".into(),
            conversation_id: "conv".into(),
            agent: "assistant".into(),
            model: "scripted".into(),
            status,
            iteration: 1,
            max_iterations: 8,
            required_action: None,
            last_error: Some("why".into()),
            output: None,
            usage,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn endings_follow_the_run_status() {
        let before = Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            model_calls: 1,
        };
        let after = Usage {
            prompt_tokens: 30,
            completion_tokens: 9,
            total_tokens: 39,
            model_calls: 2,
        };
        let e = ending(
            Some(&run_object(RunStatus::Completed, after)),
            None,
            before,
            7,
        );
        assert_eq!(
            (
                e.status,
                e.usage.input_tokens,
                e.usage.output_tokens,
                e.usage.total_tokens
            ),
            (ResponseStatus::Completed, 20, 4, 24)
        );
        let e = ending(
            Some(&run_object(RunStatus::RequiresAction, after)),
            None,
            before,
            7,
        );
        assert_eq!(e.status, ResponseStatus::Completed);
        let e = ending(
            Some(&run_object(RunStatus::Incomplete, after)),
            None,
            before,
            7,
        );
        assert_eq!(
            (e.status, e.incomplete.unwrap().reason),
            (ResponseStatus::Incomplete, "max_iterations".to_string())
        );
        let e = ending(Some(&run_object(RunStatus::Failed, after)), None, before, 7);
        assert_eq!(
            (e.status, e.error.unwrap().message),
            (ResponseStatus::Failed, "why".to_string())
        );
        let e = ending(
            Some(&run_object(RunStatus::Cancelled, after)),
            None,
            before,
            7,
        );
        assert_eq!(e.status, ResponseStatus::Cancelled);
        let e = ending(None, Some("lease lost"), before, 7);
        assert_eq!(
            (e.status, e.error.unwrap().message),
            (ResponseStatus::Failed, "lease lost".to_string())
        );
    }
}
