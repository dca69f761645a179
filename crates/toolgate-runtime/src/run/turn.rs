//! One turn's calls outside the loop's flow: decisions applied to waiting calls, the
//! records of calls resolved without running (denied, refused, answered by the client,
//! interrupted), the items shown to a person, and call ids kept unique.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::guard::{Screen, who};
use super::state::{Ask, Phase, RunState, TurnCall};
use super::{Live, Runner};
use crate::engine::{CallOutcome, PreparedCall};
use toolgate_parse::ToolCall;
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::{
    CallStatus, CallerKind, Decision, ErrorKind, ItemKind, RequiredItem, events,
};
use toolgate_store::CallRecord;
use toolgate_tool::permission::{Gate, Verdict};
use toolgate_tool::prompt::cdata_escape;

impl Runner {
    /// One decision applied to a waiting call.
    pub(super) fn apply(&self, live: &mut Live, c: &mut TurnCall, decision: Decision) {
        match decision {
            Decision::Approve => live.pending_updates.extend(c.enter(Phase::Ready)),
            Decision::ApproveAlways => {
                if !live.standing.contains(&c.call.name) {
                    live.standing.push(c.call.name.clone());
                }
                live.pending_updates.extend(c.enter(Phase::Ready));
            }
            Decision::Edit { arguments } => {
                c.edited = Some(arguments);
                live.pending_updates.extend(c.enter(Phase::Ready));
            }
            Decision::Deny { reason } => {
                let (output, kind) =
                    match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                        Some(toolgate_store::EXPIRED) => {
                            (toolgate_store::EXPIRED.to_string(), ErrorKind::Expired)
                        }
                        Some(r) => (
                            format!("A person denied this call. Reason: {r}"),
                            ErrorKind::Denied,
                        ),
                        None => (
                            "A person denied this call; no reason was given.".to_string(),
                            ErrorKind::Denied,
                        ),
                    };
                let denied = self.answer(live, &c.call, CallStatus::Denied, Some(kind), output);
                live.pending_updates.extend(c.enter(denied));
            }
            Decision::Submit { output, is_error } => {
                let status = if is_error {
                    CallStatus::Failed
                } else {
                    CallStatus::Client
                };
                let answered = self.answer(
                    live,
                    &c.call,
                    status,
                    is_error.then_some(ErrorKind::ClientError),
                    output,
                );
                live.pending_updates.extend(c.enter(answered));
            }
        }
    }

    /// Gates each call of a model turn: its `before_call` hooks first (concurrently
    /// across the turn), then the gate on the arguments they leave: ready to run,
    /// waiting for a person or the client (an item is added and announced, with the
    /// rule that asked and its deadline), or refused and answered at once.
    pub(super) async fn gate(&self, live: &mut Live, calls: Vec<ToolCall>) -> Vec<TurnCall> {
        let verdicts: Vec<Verdict> = calls
            .iter()
            .map(|call| Gate::judge(&live.toolkit, call, &live.standing, &who(live)))
            .collect();
        let screens = {
            let live = &*live;
            futures_util::future::join_all(calls.iter().zip(&verdicts).map(
                |(call, v)| async move {
                    match v.gate {
                        Gate::Run | Gate::Approval => self.before_call(live, call).await,
                        Gate::Client | Gate::Refuse => Screen::pass(),
                    }
                },
            ))
            .await
        };
        let mut turn = Vec::with_capacity(calls.len());
        for ((mut call, mut verdict), screen) in calls.into_iter().zip(verdicts).zip(screens) {
            let hold = match screen {
                Screen::Deny { told, kind } => {
                    let phase = self.answer(live, &call, CallStatus::Denied, Some(kind), told);
                    turn.push(super::reply::refused(call, phase));
                    continue;
                }
                Screen::Pass { arguments, hold } => {
                    if let Some(arguments) = arguments {
                        // The rules judge the arguments the call will run with.
                        call.arguments = arguments;
                        verdict = Gate::judge(&live.toolkit, &call, &live.standing, &who(live));
                    }
                    hold
                }
            };
            if let Some(hold) = hold {
                held(&mut verdict, hold);
            }
            let gate = self.subagent_gate(live, &call, verdict.gate);
            let ask = (gate == Gate::Approval).then(|| ask_of(live, &call, &verdict));
            let mut c = TurnCall {
                call,
                gate,
                phase: Phase::Ready,
                edited: None,
                ask,
                images: Vec::new(),
            };
            c.phase = match self.consent_needed(live, &c).await {
                Some(provider) if gate == Gate::Run => self.ask_consent(live, &c, &provider).await,
                _ => self.first_phase(live, &c, &verdict).await,
            };
            turn.push(c);
        }
        turn
    }

    /// A call's first phase, where it is made (its pending row, if any, is new): a
    /// `read_result` call answered at once, waiting with its item announced, or refused.
    async fn first_phase(&self, live: &mut Live, c: &TurnCall, verdict: &Verdict) -> Phase {
        match c.gate {
            Gate::Run if self.is_read_result(live, &c.call) => {
                self.read_result(live, &c.call).await
            }
            Gate::Run => Phase::Ready,
            Gate::Approval | Gate::Client => {
                let item = self.required_item(live, c);
                self.emit(events::ApprovalRequested {
                    run_id: live.run_id.clone(),
                    item: item.clone(),
                });
                live.pending_new.push(item);
                Phase::Waiting
            }
            Gate::Refuse => {
                let output = match verdict.reason.as_deref() {
                    None | Some("permission: never") => format!(
                        "'{}' is not allowed for this agent (permission: never); the call was not run.",
                        c.call.name
                    ),
                    Some(rule) => format!(
                        "The policy refuses this call of '{}' ({rule}); it was not run.",
                        c.call.name
                    ),
                };
                self.answer(
                    live,
                    &c.call,
                    CallStatus::Denied,
                    Some(ErrorKind::Policy),
                    output,
                )
            }
        }
    }

    /// Whether running `c` again after a crash would do no harm: its tool changes
    /// nothing, or the call cannot run at all (unknown tool, invalid arguments).
    pub(super) fn harmless(&self, live: &Live, c: &TurnCall) -> bool {
        match live.toolkit.resolve(&c.call.name) {
            Err(_) => true,
            Ok(tool) => {
                let args = c.edited.clone().unwrap_or_else(|| c.call.arguments.clone());
                tool.spec.read_only || tool.check(args).is_err()
            }
        }
    }

    pub(super) fn prepare(&self, live: &Live, c: &TurnCall) -> PreparedCall {
        let mut call = c.call.clone();
        if let Some(args) = &c.edited {
            call.arguments = args.clone();
        }
        PreparedCall {
            tool: live.toolkit.resolve(&call.name).cloned(),
            call,
            conversation_id: live.conversation_id.clone(),
            run_id: Some(live.run_id.clone()),
            agent: Some(live.agent.name.clone()),
            caller: CallerKind::Agent,
            priority: crate::engine::call_priority(
                live.state.priority,
                live.agent.priority,
                live.state.tree.as_ref().map_or(0, |t| t.depth),
            ),
            // Approved by a person (or a standing approval): never dropped by a bound.
            approved: c.gate == Gate::Approval,
        }
    }

    pub(super) fn required_item(&self, live: &Live, c: &TurnCall) -> RequiredItem {
        let call = &c.call;
        let arguments = redacted(live, call);
        let ask = c.ask.clone().unwrap_or_default();
        let approval = c.gate != Gate::Client;
        RequiredItem {
            call_id: call.id.clone(),
            kind: if approval {
                ItemKind::Approval
            } else {
                ItemKind::SubmitToolOutput
            },
            tool: call.name.clone(),
            arguments: Value::Object(arguments),
            run_id: None,
            path: Vec::new(),
            reason: ask.reason,
            expires_at: ask.expires_at,
            on_timeout: ask.on_timeout,
            policy: approval.then(|| live.toolkit.fingerprint(&call.name)),
        }
    }

    /// A call resolved without running (denied, refused, answered by the client,
    /// interrupted): its record (committed with the next save), its event, and what
    /// the model is told. An error kind makes `output` the error message; otherwise
    /// (the client's answer) it is the result.
    pub(super) fn answer(
        &self,
        live: &mut Live,
        call: &ToolCall,
        status: CallStatus,
        error_kind: Option<ErrorKind>,
        output: String,
    ) -> Phase {
        let mut record = CallRecord {
            call_id: call.id.clone(),
            run_id: Some(live.run_id.clone()),
            conversation_id: live.conversation_id.clone(),
            agent: Some(live.agent.name.clone()),
            caller: CallerKind::Agent,
            tool: call.name.clone(),
            arguments: Value::Object(redacted(live, call)),
            result: None,
            result_size: 0,
            status,
            error_kind,
            error_message: error_kind.map(|_| output.clone()),
            started_at: now_ms(),
            duration_ms: 0.0,
            replaced: false,
            attempts: Vec::new(),
            cached: None,
        };
        if status == CallStatus::Client || error_kind == Some(ErrorKind::ClientError) {
            record.set_result(&output);
        }
        live.records.push(record);
        self.emit(events::ToolResolved {
            run_id: live.run_id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status,
            output: output.clone(),
        });
        Phase::Done { status, output }
    }
}

/// A call's arguments with its tool's secret parameters hidden.
fn redacted(live: &Live, call: &ToolCall) -> Map<String, Value> {
    match live.toolkit.resolve(&call.name) {
        Ok(tool) => tool.redact(&call.arguments),
        Err(_) => call.arguments.clone(),
    }
}

/// What the model is told about an engine outcome.
pub(super) fn outcome_text(outcome: &CallOutcome) -> String {
    match &outcome.result {
        Ok(out) => out.to_text(),
        Err(e) => format!("error: {e}"),
    }
}

/// Call ids unique within the conversation: a repeated id gets a suffix.
/// `calls` with ids unused in the conversation so far (`state`) and among themselves:
/// a repeated id gets `_2`, `_3`... The usual turn has no repeat, and then nothing
/// is built: each earlier id is compared with the turn's few ids (a set of the
/// turn's ids when it has many).
pub(super) fn unique_ids(calls: Vec<ToolCall>, state: &RunState) -> Vec<ToolCall> {
    let earlier = || state.messages.iter().flat_map(|m| &m.tool_calls);
    let repeats = if calls.len() <= 16 {
        calls
            .iter()
            .enumerate()
            .any(|(i, c)| calls[..i].iter().any(|d| d.id == c.id))
            || earlier().any(|old| calls.iter().any(|c| c.id == old.id))
    } else {
        let new: HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        new.len() < calls.len() || earlier().any(|old| new.contains(old.id.as_str()))
    };
    if !repeats {
        return calls;
    }
    let mut taken: HashSet<String> = state.used_ids().into_iter().map(String::from).collect();
    calls
        .into_iter()
        .map(|mut call| {
            if taken.contains(&call.id) {
                let mut n = 2;
                while taken.contains(&format!("{}_{n}", call.id)) {
                    n += 1;
                }
                call.id = format!("{}_{n}", call.id);
            }
            taken.insert(call.id.clone());
            call
        })
        .collect()
}

pub(super) fn mentions_calls(content: &str) -> bool {
    ["<tool_call", "<invoke", "<function="]
        .iter()
        .any(|m| content.contains(m))
}

/// A call written the way xml-mode instructions ask for it.
pub(super) fn xml_call(call: &ToolCall) -> String {
    let mut out = format!("\n<tool_call>\n  <name>{}</name>\n  <params>\n", call.name);
    for (k, v) in &call.arguments {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push_str(&format!(
            "    <{k}><![CDATA[{}]]></{k}>\n",
            cdata_escape(&text)
        ));
    }
    out.push_str("  </params>\n</tool_call>");
    out
}

/// Raises a gate for a `before_call` hook's hold: a call that would run waits for a
/// person; one already waiting says both reasons.
fn held(verdict: &mut Verdict, hold: String) {
    match verdict.gate {
        Gate::Run => {
            *verdict = Verdict {
                gate: Gate::Approval,
                reason: Some(hold),
            }
        }
        Gate::Approval => {
            let rule = verdict.reason.take().unwrap_or_default();
            verdict.reason = Some(format!("{rule}; {hold}"));
        }
        Gate::Client | Gate::Refuse => {}
    }
}

/// The approval a call waits for: its reason, and its deadline from the toolkit.
fn ask_of(live: &Live, call: &ToolCall, verdict: &Verdict) -> Ask {
    let deadline = live.toolkit.deadline(&call.name);
    Ask {
        reason: verdict.reason.clone(),
        expires_at: deadline.map(|d| now_ms() + d.timeout.as_millis() as i64),
        on_timeout: deadline.map(|d| d.on_timeout),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn state(earlier: &[&str]) -> RunState {
        let calls: Vec<Value> = earlier
            .iter()
            .map(|id| json!({"id": id, "name": "echo", "arguments": {}}))
            .collect();
        serde_json::from_value(json!({
            "agent_file": "a.yaml", "agent": "a", "model": "scripted:r.yaml",
            "mode": "native", "tools_dir": null, "workspace": ".",
            "max_iterations": 5, "iteration": 1, "turn": null, "output": null,
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "model_calls": 0},
            "messages": [{"role": "assistant", "content": "", "tool_calls": calls}],
        }))
        .unwrap()
    }

    fn ids(n: usize, id: impl Fn(usize) -> String, earlier: &[&str]) -> Vec<String> {
        let calls = (0..n)
            .map(|i| crate::engine::call(&id(i), "echo", Map::new()))
            .collect();
        unique_ids(calls, &state(earlier))
            .into_iter()
            .map(|c| c.id)
            .collect()
    }

    #[test]
    fn ids_used_before_or_twice_in_a_turn_get_a_suffix_and_new_ones_stay() {
        assert_eq!(ids(2, |i| format!("c{i}"), &["a", "b"]), ["c0", "c1"]);
        assert_eq!(ids(2, |_| "a".into(), &["a", "a_2"]), ["a_3", "a_4"]);
        assert_eq!(ids(2, |_| "c".into(), &[]), ["c", "c_2"]);
        // A turn of many calls takes the set path: same answers.
        let many = ids(20, |i| format!("c{}", i % 19), &["c3"]);
        assert_eq!(many[3], "c3_2");
        assert_eq!(many[19], "c0_2");
        assert_eq!(many[4], "c4");
    }
}
