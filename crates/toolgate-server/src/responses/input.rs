//! Reading a request's `input` (a string, or user messages, `mcp_approval_response` and
//! `function_call_output` items) and matching its answers to the items a paused run
//! waits for. Pure: every refusal is a typed error with a sentence for the client. A
//! message's `input_image` and `input_file` parts are read in attachments.rs.

use serde_json::Value;

use super::attachments::{self, Attachment};
use toolgate_protocol::{Decision, ItemKind, RequiredItem};

/// Prefix of an `mcp_approval_request` id: `mcpr_` + the call id.
pub const APPROVAL_PREFIX: &str = "mcpr_";
/// Prefix of an `mcp_call` id: `mcp_` + the call id.
pub const MCP_CALL_PREFIX: &str = "mcp_";
/// Prefix of a `function_call` item id: `fc_` + the call id.
pub const FUNCTION_CALL_PREFIX: &str = "fc_";
/// Prefix of a `custom_tool_call` item id: `ctc_` + the call id.
pub const CUSTOM_CALL_PREFIX: &str = "ctc_";

/// What a request's input says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Input {
    /// The user's text: every user message, in order, joined by blank lines.
    pub message: Option<String>,
    /// Answers to a paused run's items, in order.
    pub answers: Vec<Answer>,
    /// The messages' `input_image` and `input_file` parts, in order.
    pub attachments: Vec<Attachment>,
}

/// One answer to a paused run's item.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `mcp_approval_response`
    Approval {
        request_id: String,
        approve: bool,
        reason: Option<String>,
    },
    /// `function_call_output` or `custom_tool_call_output`
    Output { call_id: String, output: String },
}

/// Why an input or an answer was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    /// The request is malformed (400).
    #[error("{0}")]
    Invalid(String),
    /// The answer does not fit what the run waits for (409).
    #[error("{0}")]
    Conflict(String),
}

fn invalid(at: &str, what: impl std::fmt::Display) -> InputError {
    InputError::Invalid(format!("{at}: {what}"))
}

/// Reads `input`: a string, or a list of items.
pub fn parse_input(input: Option<&Value>) -> Result<Input, InputError> {
    let mut out = Input::default();
    let mut texts = Vec::new();
    match input {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => texts.push(s.clone()),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let at = format!("input[{i}]");
                let Value::Object(obj) = item else {
                    return Err(invalid(&at, "an input item is a JSON object"));
                };
                let kind = obj.get("type").and_then(Value::as_str);
                match kind {
                    None | Some("message") => {
                        texts.push(message_text(&at, item, &mut out.attachments)?)
                    }
                    Some("mcp_approval_response") => {
                        let request_id = string_field(&at, item, "approval_request_id")?;
                        let approve = item
                            .get("approve")
                            .and_then(Value::as_bool)
                            .ok_or_else(|| invalid(&at, "'approve' must be true or false"))?;
                        let reason = match item.get("reason") {
                            None | Some(Value::Null) => None,
                            Some(Value::String(s)) => Some(s.clone()),
                            Some(_) => return Err(invalid(&at, "'reason' must be a string")),
                        };
                        out.answers.push(Answer::Approval {
                            request_id,
                            approve,
                            reason,
                        });
                    }
                    Some("function_call_output" | "custom_tool_call_output") => {
                        let call_id = string_field(&at, item, "call_id")?;
                        let output = output_text(&at, item.get("output"))?;
                        out.answers.push(Answer::Output { call_id, output });
                    }
                    Some(other) => {
                        return Err(invalid(
                            &at,
                            format!(
                                "items of type '{other}' are not accepted; toolgate takes user messages, mcp_approval_response, function_call_output and custom_tool_call_output (earlier turns come from previous_response_id)"
                            ),
                        ));
                    }
                }
            }
        }
        Some(_) => {
            return Err(InputError::Invalid(
                "input must be a string or a list of input items".into(),
            ));
        }
    }
    if !texts.is_empty() {
        out.message = Some(texts.join("\n\n"));
    }
    Ok(out)
}

fn string_field(at: &str, item: &Value, name: &str) -> Result<String, InputError> {
    match item.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(invalid(at, format!("'{name}' must be a non-empty string"))),
    }
}

/// A user message's text: its content as a string, or its text parts joined.
fn message_text(
    at: &str,
    item: &Value,
    attachments: &mut Vec<Attachment>,
) -> Result<String, InputError> {
    match item.get("role").and_then(Value::as_str) {
        Some("user") => {}
        Some(role @ ("system" | "developer")) => {
            return Err(invalid(
                at,
                format!(
                    "'{role}' messages are not accepted: an agent's instructions come from its agent file"
                ),
            ));
        }
        Some("assistant") => {
            return Err(invalid(
                at,
                "assistant messages are not accepted: continue a conversation with previous_response_id",
            ));
        }
        Some(other) => return Err(invalid(at, format!("unknown role '{other}'"))),
        None => return Err(invalid(at, "a message needs a 'role' (user)")),
    }
    match item.get("content") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (j, part) in parts.iter().enumerate() {
                let at = format!("{at}.content[{j}]");
                match part.get("type").and_then(Value::as_str) {
                    Some("input_text" | "text" | "output_text") => {
                        let t = part
                            .get("text")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(&at, "'text' must be a string"))?;
                        text.push_str(t);
                    }
                    Some(kind @ ("input_image" | "input_file")) => {
                        attachments.push(attachments::read_part(&at, kind, part)?);
                    }
                    Some(other) => {
                        return Err(invalid(
                            &at,
                            format!(
                                "content of type '{other}' is not supported; send input_text, input_image or input_file"
                            ),
                        ));
                    }
                    None => return Err(invalid(&at, "a content part needs a 'type'")),
                }
            }
            Ok(text)
        }
        _ => Err(invalid(
            at,
            "'content' must be a string or a list of input_text parts",
        )),
    }
}

/// A `function_call_output`'s output: a string, or text parts joined.
fn output_text(at: &str, output: Option<&Value>) -> Result<String, InputError> {
    match output {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (j, part) in parts.iter().enumerate() {
                match part.get("text").and_then(Value::as_str) {
                    Some(t) => text.push_str(t),
                    None => {
                        return Err(invalid(
                            &format!("{at}.output[{j}]"),
                            "only text parts are supported",
                        ));
                    }
                }
            }
            Ok(text)
        }
        _ => Err(invalid(
            at,
            "'output' must be a string or a list of text parts",
        )),
    }
}

/// The call id an `mcp_approval_request` id stands for, among `waiting`: the id itself
/// when a call has it, else the id without its `mcpr_` prefix.
fn approval_call<'a>(request_id: &str, waiting: &'a [RequiredItem]) -> Option<&'a RequiredItem> {
    waiting
        .iter()
        .find(|w| w.call_id == request_id)
        .or_else(|| {
            let bare = request_id.strip_prefix(APPROVAL_PREFIX)?;
            waiting.iter().find(|w| w.call_id == bare)
        })
}

/// The decisions the answers make, each bound to the call id of a waiting item, in
/// order. Refused as a whole (nothing decided) when an answer names no waiting item,
/// names one of the other kind, or one item is answered twice.
pub fn plan_decisions(
    run_id: &str,
    answers: &[Answer],
    waiting: &[RequiredItem],
) -> Result<Vec<(String, Decision)>, InputError> {
    let listed = || {
        if waiting.is_empty() {
            "nothing".to_string()
        } else {
            waiting
                .iter()
                .map(|w| match w.kind {
                    ItemKind::Approval | ItemKind::Budget | ItemKind::Authorization => {
                        format!("approval {APPROVAL_PREFIX}{}", w.call_id)
                    }
                    ItemKind::SubmitToolOutput => format!("function_call {}", w.call_id),
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let mut plan: Vec<(String, Decision)> = Vec::new();
    for answer in answers {
        let (item, decision) = match answer {
            Answer::Approval {
                request_id,
                approve,
                reason,
            } => {
                let item = approval_call(request_id, waiting).ok_or_else(|| {
                    InputError::Conflict(format!(
                        "no approval request '{request_id}' is waiting in run {run_id} (it waits for: {})",
                        listed()
                    ))
                })?;
                if !matches!(item.kind, ItemKind::Approval | ItemKind::Budget) {
                    return Err(InputError::Conflict(format!(
                        "'{request_id}' is a client tool call ({}): answer it with a function_call_output for call_id {}",
                        item.tool, item.call_id
                    )));
                }
                let decision = if *approve {
                    Decision::Approve
                } else {
                    Decision::Deny {
                        reason: reason.clone(),
                    }
                };
                (item, decision)
            }
            Answer::Output { call_id, output } => {
                let item = waiting
                    .iter()
                    .find(|w| &w.call_id == call_id)
                    .ok_or_else(|| {
                        InputError::Conflict(format!(
                            "no function_call '{call_id}' is waiting in run {run_id} (it waits for: {})",
                            listed()
                        ))
                    })?;
                if item.kind != ItemKind::SubmitToolOutput {
                    return Err(InputError::Conflict(format!(
                        "call '{call_id}' ({}) waits for approval: answer it with an mcp_approval_response for {APPROVAL_PREFIX}{call_id}",
                        item.tool
                    )));
                }
                let decision = Decision::Submit {
                    output: output.clone(),
                    is_error: false,
                };
                (item, decision)
            }
        };
        if plan.iter().any(|(c, _)| c == &item.call_id) {
            return Err(InputError::Invalid(format!(
                "call '{}' is answered twice in this input",
                item.call_id
            )));
        }
        plan.push((item.call_id.clone(), decision));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn waiting() -> Vec<RequiredItem> {
        vec![
            RequiredItem {
                call_id: "call_write".into(),
                kind: ItemKind::Approval,
                tool: "write_file".into(),
                arguments: json!({"path": "a"}),
                run_id: None,
                path: Vec::new(),
                reason: None,
                expires_at: None,
                on_timeout: None,
                policy: None,
            },
            RequiredItem {
                call_id: "call_ask".into(),
                kind: ItemKind::SubmitToolOutput,
                tool: "ask_user".into(),
                arguments: json!({"question": "?"}),
                run_id: None,
                path: Vec::new(),
                reason: None,
                expires_at: None,
                on_timeout: None,
                policy: None,
            },
        ]
    }

    #[test]
    fn a_string_is_one_user_message() {
        let input = parse_input(Some(&json!("hello"))).unwrap();
        assert_eq!(input.message.as_deref(), Some("hello"));
        assert!(input.answers.is_empty());
    }

    #[test]
    fn messages_with_parts_and_easy_messages_join() {
        let input = parse_input(Some(&json!([
            {"role": "user", "content": "one"},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "two "}, {"type": "input_text", "text": "halves"}
            ]}
        ])))
        .unwrap();
        assert_eq!(input.message.as_deref(), Some("one\n\ntwo halves"));
    }

    #[test]
    fn answers_are_read_in_order() {
        let input = parse_input(Some(&json!([
            {"type": "mcp_approval_response", "approval_request_id": "mcpr_call_write", "approve": false, "reason": "no"},
            {"type": "function_call_output", "call_id": "call_ask", "output": "blue"},
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "x"}]}
        ])))
        .unwrap();
        assert_eq!(input.message, None);
        assert_eq!(
            input.answers,
            vec![
                Answer::Approval {
                    request_id: "mcpr_call_write".into(),
                    approve: false,
                    reason: Some("no".into())
                },
                Answer::Output {
                    call_id: "call_ask".into(),
                    output: "blue".into()
                },
                Answer::Output {
                    call_id: "c2".into(),
                    output: "x".into()
                },
            ]
        );
    }

    #[test]
    fn refusals_name_the_item() {
        let cases = [
            (json!(42), "input must be"),
            (json!(["x"]), "input[0]: an input item is a JSON object"),
            (
                json!([{"role": "system", "content": "x"}]),
                "input[0]: 'system' messages",
            ),
            (
                json!([{"role": "assistant", "content": "x"}]),
                "previous_response_id",
            ),
            (
                json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]),
                "input[0].content[0]: content of type 'input_audio'",
            ),
            (
                json!([{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]),
                "input[0].content[0]: the URL must be",
            ),
            (
                json!([{"type": "mcp_approval_response", "approval_request_id": "a"}]),
                "'approve' must be true or false",
            ),
            (
                json!([{"type": "function_call_output", "output": "x"}]),
                "'call_id' must be a non-empty string",
            ),
            (
                json!([{"type": "reasoning", "summary": []}]),
                "items of type 'reasoning' are not accepted",
            ),
        ];
        for (input, expected) in cases {
            let err = parse_input(Some(&input)).unwrap_err();
            assert!(
                matches!(&err, InputError::Invalid(m) if m.contains(expected)),
                "{input}: {err}"
            );
        }
    }

    #[test]
    fn answers_bind_to_waiting_call_ids() {
        let answers = [
            Answer::Approval {
                request_id: "mcpr_call_write".into(),
                approve: true,
                reason: None,
            },
            Answer::Output {
                call_id: "call_ask".into(),
                output: "blue".into(),
            },
        ];
        let plan = plan_decisions("run_1", &answers, &waiting()).unwrap();
        assert_eq!(
            plan,
            vec![
                ("call_write".to_string(), Decision::Approve),
                (
                    "call_ask".to_string(),
                    Decision::Submit {
                        output: "blue".into(),
                        is_error: false
                    }
                ),
            ]
        );
        // The bare call id works too, and a denial keeps its reason.
        let deny = [Answer::Approval {
            request_id: "call_write".into(),
            approve: false,
            reason: Some("not now".into()),
        }];
        assert_eq!(
            plan_decisions("run_1", &deny, &waiting()).unwrap(),
            vec![(
                "call_write".to_string(),
                Decision::Deny {
                    reason: Some("not now".into())
                }
            )]
        );
    }

    #[test]
    fn answers_that_do_not_fit_are_conflicts() {
        let cases = [
            (
                Answer::Approval {
                    request_id: "mcpr_gone".into(),
                    approve: true,
                    reason: None,
                },
                "no approval request 'mcpr_gone' is waiting in run run_1 (it waits for: approval mcpr_call_write, function_call call_ask)",
            ),
            (
                Answer::Approval {
                    request_id: "mcpr_call_ask".into(),
                    approve: true,
                    reason: None,
                },
                "is a client tool call",
            ),
            (
                Answer::Output {
                    call_id: "call_write".into(),
                    output: "x".into(),
                },
                "waits for approval",
            ),
            (
                Answer::Output {
                    call_id: "nope".into(),
                    output: "x".into(),
                },
                "no function_call 'nope'",
            ),
        ];
        for (answer, expected) in cases {
            let err =
                plan_decisions("run_1", std::slice::from_ref(&answer), &waiting()).unwrap_err();
            assert!(
                matches!(&err, InputError::Conflict(m) if m.contains(expected)),
                "{answer:?}: {err}"
            );
        }
        let twice = [
            Answer::Approval {
                request_id: "mcpr_call_write".into(),
                approve: true,
                reason: None,
            },
            Answer::Approval {
                request_id: "call_write".into(),
                approve: false,
                reason: None,
            },
        ];
        assert!(matches!(
            plan_decisions("run_1", &twice, &waiting()),
            Err(InputError::Invalid(m)) if m.contains("answered twice")
        ));
    }
}
