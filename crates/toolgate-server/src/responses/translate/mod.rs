//! From a run's events to a response: the output items in the order things happen
//! (model reasoning -> `reasoning`, model text -> `message`, a call run server-side ->
//! `mcp_call`, a CONFIRM call ->
//! `mcp_approval_request`, a client tool -> `function_call`), and the Responses stream
//! events announcing them, numbered, in the sequence the OpenAI SDKs' stream helpers
//! accept. Pure: the caller feeds events and call records, and sends what comes back.
//!
//! An `mcp_call` is finished from its call record (committed with the step that ran
//! it), not from the `tool.finished` event: the record holds the output, and the
//! arguments with secret parameters redacted.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::ending::Ending;
use super::input::{APPROVAL_PREFIX, CUSTOM_CALL_PREFIX, FUNCTION_CALL_PREFIX, MCP_CALL_PREFIX};
use super::wire::{
    ItemStatus, McpCallError, McpCallStatus, OutputContent, OutputItem, ReasoningContent,
    ResponseObject, ResponseStatus, SERVER_LABEL,
};
use toolgate_protocol::{CallStatus, ItemKind, RequiredItem, RunEvent, events};
use toolgate_store::CallRecord;

/// One stream event: a JSON object with its `type` and `sequence_number`.
pub type StreamEvent = Value;

/// Builds one response from the events of the drive it covers.
pub struct Translator {
    response: ResponseObject,
    seq: u64,
    /// The message being streamed, by output index.
    open: Option<usize>,
    /// Whitespace at the end of the open message, held until more text follows.
    held: String,
    messages: usize,
    /// The reasoning item being streamed, by output index.
    thinking: Option<usize>,
    reasonings: usize,
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
            thinking: None,
            reasonings: 0,
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
            RunEvent::TextDelta(events::TextDelta { text, .. }) => self.text(&mut out, text),
            RunEvent::ReasoningDelta(events::ReasoningDelta { text, .. }) => {
                self.reasoning(&mut out, text)
            }
            RunEvent::ModelRetry(_) => {
                // The model starts its answer again: what was shown of it stays, cut short.
                self.close_message(&mut out, ItemStatus::Incomplete);
            }
            RunEvent::ApprovalRequested(events::ApprovalRequested { item, .. }) => {
                self.close_message(&mut out, ItemStatus::Completed);
                self.waiting_item(&mut out, item);
            }
            RunEvent::ToolStarted(events::ToolStarted { call_id, tool, .. }) => {
                self.close_message(&mut out, ItemStatus::Completed);
                self.mcp_call(&mut out, call_id, tool);
            }
            RunEvent::ToolFinished(events::ToolFinished { call_id, tool, .. }) => {
                // Calls that could not start (unknown tool, invalid arguments) have no
                // tool.started.
                self.close_message(&mut out, ItemStatus::Completed);
                self.mcp_call(&mut out, call_id, tool);
                if !self.awaiting.contains(call_id) {
                    self.awaiting.push(call_id.clone());
                }
            }
            RunEvent::ToolResolved(events::ToolResolved {
                call_id,
                tool,
                output,
                ..
            }) => {
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
            RunEvent::ToolCallParsed(_)
            | RunEvent::RunRequiresAction(_)
            | RunEvent::RunCompleted(_)
            | RunEvent::RunIncomplete(_)
            | RunEvent::RunFailed(_)
            | RunEvent::RunCancelled(_) => {
                self.close_message(&mut out, ItemStatus::Completed);
            }
            RunEvent::ToolOutput(events::ToolOutputEvent { call_id, part, .. }) => {
                self.progress(&mut out, call_id, part)
            }
            RunEvent::RunStarted(_)
            | RunEvent::ContextCompacted(_)
            | RunEvent::BudgetReached(_)
            | RunEvent::ParseProblem(_)
            | RunEvent::ApprovalExpiring(_)
            | RunEvent::ApprovalExpired(_) => {}
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
                self.close_reasoning(out, ItemStatus::Completed);
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

    /// A piece of the model's reasoning: into the open `reasoning` item, or a new one
    /// (after text, the message is done: what the model thinks next is a new item).
    fn reasoning(&mut self, out: &mut Vec<StreamEvent>, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.close_text(out, ItemStatus::Completed);
        let index = match self.thinking {
            Some(index) => index,
            None => {
                let suffix = self.response.id.trim_start_matches("resp_").to_string();
                let id = format!("rs_{suffix}_{}", self.reasonings);
                self.reasonings += 1;
                let index = self.push_item(
                    out,
                    OutputItem::Reasoning {
                        id,
                        summary: Vec::new(),
                        content: vec![ReasoningContent::ReasoningText {
                            text: String::new(),
                        }],
                        status: ItemStatus::InProgress,
                    },
                );
                self.thinking = Some(index);
                index
            }
        };
        if let OutputItem::Reasoning { content, .. } = &mut self.response.output[index]
            && let Some(ReasoningContent::ReasoningText { text }) = content.first_mut()
        {
            text.push_str(delta);
        }
        let id = self.response.output[index].id().to_string();
        self.emit(
            out,
            "response.reasoning_text.delta",
            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta}),
        );
    }

    fn close_reasoning(&mut self, out: &mut Vec<StreamEvent>, status: ItemStatus) {
        let Some(index) = self.thinking.take() else {
            return;
        };
        let (id, text) = match &mut self.response.output[index] {
            OutputItem::Reasoning {
                id,
                content,
                status: s,
                ..
            } => {
                *s = status;
                let text = content
                    .iter()
                    .map(|ReasoningContent::ReasoningText { text }| text.as_str())
                    .collect::<String>();
                (id.clone(), text)
            }
            _ => return,
        };
        self.emit(
            out,
            "response.reasoning_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}),
        );
        self.item_done(out, index);
    }

    /// Closes the open reasoning item and the open message.
    fn close_message(&mut self, out: &mut Vec<StreamEvent>, status: ItemStatus) {
        self.close_reasoning(out, status);
        self.close_text(out, status);
    }

    fn close_text(&mut self, out: &mut Vec<StreamEvent>, status: ItemStatus) {
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

    /// The run's saved files as `container_file_citation` annotations (the container:
    /// the run) on the response's last message, each announced as it is added. A
    /// response without a message cites none; the run object lists them all.
    fn cite_files(&mut self, out: &mut Vec<StreamEvent>, files: &[toolgate_protocol::FileOutput]) {
        let Some(index) = self
            .response
            .output
            .iter()
            .rposition(|o| matches!(o, OutputItem::Message { .. }))
        else {
            return;
        };
        let id = self.response.output[index].id().to_string();
        for file in files {
            let annotation = json!({
                "type": "container_file_citation",
                "container_id": toolgate_protocol::file::run_of(&file.id).unwrap_or_default(),
                "file_id": file.id, "filename": file.name, "start_index": 0, "end_index": 0,
            });
            let OutputItem::Message { content, .. } = &mut self.response.output[index] else {
                return;
            };
            let Some(OutputContent::OutputText { annotations, .. }) = content.first_mut() else {
                return;
            };
            annotations.push(annotation.clone());
            let at = annotations.len() - 1;
            self.emit(
                out,
                "response.output_text.annotation.added",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                    "annotation_index": at, "annotation": annotation}),
            );
        }
    }

    /// An item a paused run waits for: `mcp_approval_request` or `function_call`.
    fn waiting_item(&mut self, out: &mut Vec<StreamEvent>, item: &RequiredItem) {
        let arguments = item.arguments.to_string();
        match item.kind {
            // A spend limit is approved (raised) or denied like a call; a consent the
            // user gives at its URL (the arguments carry it) shows as one too.
            ItemKind::Approval | ItemKind::Budget | ItemKind::Authorization => {
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
            ItemKind::SubmitToolOutput if self.is_custom(&item.tool) => {
                self.custom_call(out, item);
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

    /// Whether `tool` is one of the request's custom (freeform) tools.
    fn is_custom(&self, tool: &str) -> bool {
        self.response
            .tools
            .iter()
            .any(|t| t["type"] == "custom" && t["name"] == tool)
    }

    /// A custom tool's call the run waits for: its `custom_tool_call` item, the input
    /// as a delta, then done.
    fn custom_call(&mut self, out: &mut Vec<StreamEvent>, item: &RequiredItem) {
        let id = format!("{CUSTOM_CALL_PREFIX}{}", item.call_id);
        let input = item.arguments[toolgate_tool::custom::INPUT]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let index = self.push_item(
            out,
            OutputItem::CustomToolCall {
                id: id.clone(),
                call_id: item.call_id.clone(),
                name: item.tool.clone(),
                input: String::new(),
            },
        );
        self.emit(
            out,
            "response.custom_tool_call_input.delta",
            json!({"item_id": id, "output_index": index, "delta": input}),
        );
        self.emit(
            out,
            "response.custom_tool_call_input.done",
            json!({"item_id": id, "output_index": index, "input": input}),
        );
        if let OutputItem::CustomToolCall { input: i, .. } = &mut self.response.output[index] {
            *i = input;
        }
        self.item_done(out, index);
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

    /// A running call's progress (a line it wrote): `response.mcp_call.in_progress` for
    /// its `mcp_call`, with the part under `progress`.
    fn progress(
        &mut self,
        out: &mut Vec<StreamEvent>,
        call_id: &str,
        part: &impl serde::Serialize,
    ) {
        let Some(&index) = self.calls.get(call_id) else {
            return;
        };
        let id = self.response.output[index].id().to_string();
        let part = serde_json::to_value(part).unwrap_or(Value::Null);
        self.emit(
            out,
            "response.mcp_call.in_progress",
            json!({"item_id": id, "output_index": index, "progress": part}),
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
                OutputItem::FunctionCall { call_id, .. }
                | OutputItem::CustomToolCall { call_id, .. } => call_id == &item.call_id,
                _ => false,
            });
            if !shown {
                self.waiting_item(&mut out, item);
            }
        }
        self.cite_files(&mut out, &ending.files);
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
mod tests;
