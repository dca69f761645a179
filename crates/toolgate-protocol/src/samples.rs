//! One example of every run event with its exact JSON: what `--json`, SSE and
//! `/v1/events` carry, byte for byte. The wire tests here and the OpenAPI document's
//! tests in `toolgate-server` both read it, so a new event is added in one place.
#![allow(clippy::too_many_lines)]

use crate::{CallStatus, ErrorKind, ItemKind, OnTimeout, Part, RequiredItem, RunEvent, events};

fn item() -> RequiredItem {
    RequiredItem {
        call_id: "call_1".into(),
        kind: ItemKind::Approval,
        tool: "pay".into(),
        arguments: serde_json::json!({"amount": 5}),
        run_id: None,
        path: vec![],
        reason: Some("permission: confirm".into()),
        expires_at: Some(1700),
        on_timeout: Some(OnTimeout::Deny),
        policy: Some("p".into()),
    }
}

/// A sub-agent's item: it names its own run, so the event carries `run_id` twice.
fn nested_item() -> RequiredItem {
    RequiredItem {
        call_id: "call_2".into(),
        kind: ItemKind::SubmitToolOutput,
        tool: "lookup".into(),
        arguments: serde_json::json!({}),
        run_id: Some("run_child".into()),
        path: vec!["run_1".into(), "run_child".into()],
        reason: None,
        expires_at: None,
        on_timeout: None,
        policy: None,
    }
}

/// One event of every kind, and its JSON.
pub fn every_event() -> Vec<(RunEvent, &'static str)> {
    let run = || "run_1".to_string();
    vec![
        (
            RunEvent::RunStarted(events::RunStarted {
                run_id: run(),
                conversation_id: "conv_1".into(),
                agent: "assistant".into(),
                model: "m".into(),
                resumed: false,
            }),
            r#"{"type":"run.started","run_id":"run_1","conversation_id":"conv_1","agent":"assistant","model":"m","resumed":false}"#,
        ),
        (
            RunEvent::TextDelta(events::TextDelta {
                run_id: run(),
                text: "Hi".into(),
            }),
            r#"{"type":"text.delta","run_id":"run_1","text":"Hi"}"#,
        ),
        (
            RunEvent::ReasoningDelta(events::ReasoningDelta {
                run_id: run(),
                text: "The user greets me.".into(),
            }),
            r#"{"type":"reasoning.delta","run_id":"run_1","text":"The user greets me."}"#,
        ),
        (
            RunEvent::ToolCallParsed(events::ToolCallParsed {
                run_id: run(),
                call_id: "call_1".into(),
                tool: "pay".into(),
                arguments: serde_json::json!({"amount": 5}),
            }),
            r#"{"type":"tool_call.parsed","run_id":"run_1","call_id":"call_1","tool":"pay","arguments":{"amount":5}}"#,
        ),
        (
            RunEvent::ParseProblem(events::ParseProblem {
                run_id: run(),
                message: "odd".into(),
            }),
            r#"{"type":"parse.problem","run_id":"run_1","message":"odd"}"#,
        ),
        (
            RunEvent::ApprovalRequested(events::ApprovalRequested {
                run_id: run(),
                item: item(),
            }),
            r#"{"type":"approval.requested","run_id":"run_1","call_id":"call_1","kind":"approval","tool":"pay","arguments":{"amount":5},"reason":"permission: confirm","expires_at":1700,"on_timeout":"deny"}"#,
        ),
        (
            RunEvent::ApprovalRequested(events::ApprovalRequested {
                run_id: run(),
                item: nested_item(),
            }),
            r#"{"type":"approval.requested","run_id":"run_1","call_id":"call_2","kind":"submit_tool_output","tool":"lookup","arguments":{},"run_id":"run_child","path":["run_1","run_child"]}"#,
        ),
        (
            RunEvent::ApprovalExpiring(events::ApprovalExpiring {
                run_id: run(),
                item: item(),
            }),
            r#"{"type":"approval.expiring","run_id":"run_1","call_id":"call_1","kind":"approval","tool":"pay","arguments":{"amount":5},"reason":"permission: confirm","expires_at":1700,"on_timeout":"deny"}"#,
        ),
        (
            RunEvent::ApprovalExpired(events::ApprovalExpired {
                run_id: run(),
                item: item(),
            }),
            r#"{"type":"approval.expired","run_id":"run_1","call_id":"call_1","kind":"approval","tool":"pay","arguments":{"amount":5},"reason":"permission: confirm","expires_at":1700,"on_timeout":"deny"}"#,
        ),
        (
            RunEvent::ToolResolved(events::ToolResolved {
                run_id: run(),
                call_id: "call_1".into(),
                tool: "pay".into(),
                status: CallStatus::Denied,
                output: "no".into(),
            }),
            r#"{"type":"tool.resolved","run_id":"run_1","call_id":"call_1","tool":"pay","status":"denied","output":"no"}"#,
        ),
        (
            RunEvent::ModelRetry(events::ModelRetry {
                run_id: run(),
                attempt: 2,
                wait_ms: 500,
                error: "429".into(),
            }),
            r#"{"type":"model.retry","run_id":"run_1","attempt":2,"wait_ms":500,"error":"429"}"#,
        ),
        (
            RunEvent::ContextCompacted(events::ContextCompacted {
                run_id: run(),
                strategy: "truncate".into(),
                messages: 4,
                tokens_before: 900,
                tokens_after: 300,
            }),
            r#"{"type":"context.compacted","run_id":"run_1","strategy":"truncate","messages":4,"tokens_before":900,"tokens_after":300}"#,
        ),
        (
            RunEvent::BudgetReached(events::BudgetReached {
                run_id: run(),
                whose: "agent helper".into(),
                per: "run".into(),
                unit: "tokens".into(),
                limit: "150".into(),
                spent: "170".into(),
                on_limit: "pause".into(),
                call_id: Some("budget_1".into()),
            }),
            r#"{"type":"budget.reached","run_id":"run_1","whose":"agent helper","per":"run","unit":"tokens","limit":"150","spent":"170","on_limit":"pause","call_id":"budget_1"}"#,
        ),
        (
            RunEvent::RunRequiresAction(events::RunRequiresAction {
                run_id: run(),
                items: vec![item()],
            }),
            r#"{"type":"run.requires_action","run_id":"run_1","items":[{"call_id":"call_1","kind":"approval","tool":"pay","arguments":{"amount":5},"reason":"permission: confirm","expires_at":1700,"on_timeout":"deny"}]}"#,
        ),
        (
            RunEvent::RunCompleted(events::RunCompleted { run_id: run() }),
            r#"{"type":"run.completed","run_id":"run_1"}"#,
        ),
        (
            RunEvent::RunIncomplete(events::RunIncomplete {
                run_id: run(),
                reason: "max_iterations".into(),
            }),
            r#"{"type":"run.incomplete","run_id":"run_1","reason":"max_iterations"}"#,
        ),
        (
            RunEvent::RunFailed(events::RunFailed {
                run_id: run(),
                error: "down".into(),
            }),
            r#"{"type":"run.failed","run_id":"run_1","error":"down"}"#,
        ),
        (
            RunEvent::RunCancelled(events::RunCancelled { run_id: run() }),
            r#"{"type":"run.cancelled","run_id":"run_1"}"#,
        ),
        (
            RunEvent::ToolStarted(events::ToolStarted {
                run_id: run(),
                call_id: "call_1".into(),
                tool: "pay".into(),
                conversation_id: "conv_1".into(),
            }),
            r#"{"type":"tool.started","run_id":"run_1","call_id":"call_1","tool":"pay","conversation_id":"conv_1"}"#,
        ),
        (
            RunEvent::ToolOutput(events::ToolOutputEvent {
                run_id: run(),
                call_id: "call_1".into(),
                part: Part::Text {
                    text: "line".into(),
                },
            }),
            r#"{"type":"tool.output","run_id":"run_1","call_id":"call_1","part":{"type":"text","text":"line"}}"#,
        ),
        (
            RunEvent::ToolFinished(events::ToolFinished {
                run_id: run(),
                call_id: "call_1".into(),
                tool: "pay".into(),
                status: CallStatus::Succeeded,
                duration_ms: 1.5,
                error_kind: None,
            }),
            r#"{"type":"tool.finished","run_id":"run_1","call_id":"call_1","tool":"pay","status":"succeeded","duration_ms":1.5}"#,
        ),
        (
            RunEvent::ToolFinished(events::ToolFinished {
                run_id: run(),
                call_id: "call_1".into(),
                tool: "pay".into(),
                status: CallStatus::Failed,
                duration_ms: 2.0,
                error_kind: Some(ErrorKind::Timeout),
            }),
            r#"{"type":"tool.finished","run_id":"run_1","call_id":"call_1","tool":"pay","status":"failed","duration_ms":2.0,"error_kind":"timeout"}"#,
        ),
    ]
}
