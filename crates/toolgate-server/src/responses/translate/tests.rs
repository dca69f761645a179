//! The translator's cases: each kind of run event as items and stream events, in order
//! and numbered; records finishing `mcp_call`s; endings from run statuses.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;
use crate::responses::ending::{Ending, ending};
use crate::responses::wire::{ResponseError, ResponseStatus, ResponseUsage};
use toolgate_protocol::{CallerKind, RunObject, RunStatus, Usage, events};

const RUN: &str = "run_1";

fn translator(answered: &[(&str, bool)]) -> Translator {
    let response = ResponseObject::begin("resp_abc", "agent:assistant", 100, None);
    let answered = answered.iter().map(|(c, a)| (c.to_string(), *a)).collect();
    Translator::new(response, answered)
}

fn text(t: &str) -> RunEvent {
    RunEvent::TextDelta(events::TextDelta {
        run_id: RUN.into(),
        text: t.into(),
    })
}

fn started(call: &str, tool: &str) -> RunEvent {
    RunEvent::ToolStarted(events::ToolStarted {
        run_id: RUN.into(),
        call_id: call.into(),
        tool: tool.into(),
        conversation_id: "conv".into(),
    })
}

fn finished(call: &str, tool: &str, status: CallStatus) -> RunEvent {
    RunEvent::ToolFinished(events::ToolFinished {
        run_id: RUN.into(),
        call_id: call.into(),
        tool: tool.into(),
        status,
        duration_ms: 1.0,
        error_kind: None,
    })
}

fn requested(call: &str, tool: &str, kind: ItemKind) -> RunEvent {
    RunEvent::ApprovalRequested(events::ApprovalRequested {
        run_id: RUN.into(),
        item: item(call, tool, kind),
    })
}

fn item(call: &str, tool: &str, kind: ItemKind) -> RequiredItem {
    RequiredItem {
        call_id: call.into(),
        kind,
        tool: tool.into(),
        arguments: json!({"a": 1}),
        run_id: None,
        path: Vec::new(),
        reason: None,
        expires_at: None,
        on_timeout: None,
        policy: None,
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
        replaced: false,
        attempts: Vec::new(),
        cached: None,
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
        files: Vec::new(),
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
        let is_tool = matches!(
            e,
            RunEvent::ToolStarted(_) | RunEvent::ToolOutput(_) | RunEvent::ToolFinished(_)
        );
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
            RunEvent::RunCompleted(events::RunCompleted { run_id: RUN.into() }),
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
        RunEvent::ToolCallParsed(events::ToolCallParsed {
            run_id: RUN.into(),
            call_id: "call_calc".into(),
            tool: "calculator".into(),
            arguments: json!({"expression": "2+3*4", "key": "hunter2"}),
        }),
        started("call_calc", "calculator"),
        finished("call_calc", "calculator", CallStatus::Succeeded),
        text("It is 14."),
        RunEvent::RunCompleted(events::RunCompleted { run_id: RUN.into() }),
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
            RunEvent::RunCompleted(events::RunCompleted { run_id: RUN.into() }),
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
            RunEvent::RunRequiresAction(events::RunRequiresAction {
                run_id: RUN.into(),
                items: vec![],
            }),
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
            RunEvent::ToolResolved(events::ToolResolved {
                run_id: RUN.into(),
                call_id: "call_ask".into(),
                tool: "ask_user".into(),
                status: CallStatus::Client,
                output: "blue".into(),
            }),
            started("call_write", "write_file"),
            finished("call_write", "write_file", CallStatus::Succeeded),
            RunEvent::RunCompleted(events::RunCompleted { run_id: RUN.into() }),
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
        &[RunEvent::ToolResolved(events::ToolResolved {
            run_id: RUN.into(),
            call_id: "c9".into(),
            tool: "shell".into(),
            status: CallStatus::Denied,
            output: "'shell' is not allowed".into(),
        })],
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
            RunEvent::ModelRetry(events::ModelRetry {
                run_id: RUN.into(),
                attempt: 1,
                wait_ms: 10,
                error: "503".into(),
            }),
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
        parent_run_id: None,
        parent_call_id: None,
        tenant: "default".into(),
        started_by: None,
        files: Vec::new(),
    }
}

#[test]
fn saved_files_are_cited_on_the_last_message() {
    let mut t = translator(&[]);
    let file = toolgate_protocol::FileOutput {
        id: toolgate_protocol::file::file_id(RUN, "0a1b"),
        object: "file".into(),
        name: "card.pdf".into(),
        mime: "application/pdf".into(),
        bytes: 3,
        path: "files/x.pdf".into(),
        call_id: "c1".into(),
        tool: "get_card".into(),
        created_at: 0,
    };
    let end = Ending {
        files: vec![file],
        ..done(ResponseStatus::Completed, vec![])
    };
    let out = run(&mut t, &[text("Here it is.")], &[], end);
    let added: Vec<&StreamEvent> = out
        .iter()
        .filter(|e| e["type"] == "response.output_text.annotation.added")
        .collect();
    assert_eq!(added.len(), 1, "{out:?}");
    let note = &added[0]["annotation"];
    assert_eq!(note["type"], "container_file_citation");
    assert_eq!(note["container_id"], RUN);
    assert_eq!(note["filename"], "card.pdf");
    let last = out.last().unwrap();
    assert_eq!(
        last["response"]["output"][0]["content"][0]["annotations"][0]["file_id"],
        "file-run_1-0a1b"
    );
}

#[test]
fn endings_follow_the_run_status() {
    let before = Usage {
        prompt_tokens: 10,
        completion_tokens: 5,
        total_tokens: 15,
        model_calls: 1,
        ..Usage::default()
    };
    let after = Usage {
        prompt_tokens: 30,
        completion_tokens: 9,
        total_tokens: 39,
        model_calls: 2,
        ..Usage::default()
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

fn thought(t: &str) -> RunEvent {
    RunEvent::ReasoningDelta(events::ReasoningDelta {
        run_id: RUN.into(),
        text: t.into(),
    })
}

#[test]
fn reasoning_is_a_reasoning_item_before_the_message_it_led_to() {
    let mut t = translator(&[]);
    let events = run(
        &mut t,
        &[
            thought("The user "),
            thought("greets me."),
            text("\n\n"),
            text("Hello."),
            thought("Now a tool."),
            started("call_1", "calculator"),
            RunEvent::RunCompleted(events::RunCompleted { run_id: RUN.into() }),
        ],
        &[record("call_1", "calculator", CallStatus::Succeeded, "14")],
        done(ResponseStatus::Completed, vec![]),
    );
    assert_eq!(
        types(&events)[..13],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_text.delta",
            "response.reasoning_text.delta",
            "response.reasoning_text.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
        ]
    );
    let added = &events[2]["item"];
    assert_eq!(added["type"], "reasoning");
    assert_eq!(added["status"], "in_progress");
    assert_eq!(events[3]["item_id"], "rs_abc_0");
    assert_eq!(events[3]["delta"], "The user ");
    assert_eq!(events[5]["text"], "The user greets me.");
    let output = &events.last().unwrap()["response"]["output"];
    assert_eq!(
        output[0],
        json!({"type": "reasoning", "id": "rs_abc_0", "summary": [], "status": "completed",
               "content": [{"type": "reasoning_text", "text": "The user greets me."}]})
    );
    assert_eq!(output[1]["type"], "message");
    assert_eq!(output[2]["id"], "rs_abc_1");
    assert_eq!(output[2]["content"][0]["text"], "Now a tool.");
    assert_eq!(output[3]["type"], "mcp_call");
}
