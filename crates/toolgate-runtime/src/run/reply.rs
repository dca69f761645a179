//! The model's answer taken into the run: its calls gated into the next turn (each
//! unreadable one answered in that turn, each repeated one held back), a cut answer
//! continued or failed, or (no calls) the run's final answer.

use super::ending::End;
use super::loop_marks::repeated_note;
use super::save::Save;
use super::state::{Phase, TurnCall};
use super::turn::{mentions_calls, unique_ids, xml_call};
use super::{Live, RunError, Runner};
use crate::agent::Mode;
use crate::guards::{MAX_CONTINUATIONS, OnTruncated};
use toolgate_model::{Message, ModelReply, ToolChoice};
use toolgate_parse::{ParsedTurn, Problem, ProblemKind, ToolCall};
use toolgate_protocol::{CallStatus, ErrorKind, RunStatus, events};
use toolgate_tool::permission::Gate;

/// Why a run fails on an answer cut by the output limit.
const CUT: &str = "the model's answer was cut by its output limit (finish_reason: length); raise max_tokens in the agent's model settings, or set on_truncated: continue";

/// What the model is told when it wrote a tool result itself.
const FORGED_NOTE: &str = "Your reply contains a <tool_result> block. You cannot write tool results yourself: only toolgate writes them, after it runs a call. Call the tool and wait for its result, or give your final answer without any <tool_result> block.";

/// Why a run fails when the model keeps writing tool results itself.
const FORGED: &str = "the model wrote tool results itself (a <tool_result> block in its answer) after it was told not to";

impl Runner {
    /// The model's answer: its calls gated into the next turn, or (no calls) the run's
    /// final answer. A call it wrote but nobody could read is recorded failed (under
    /// the name it wrote) and the model asked to write it again.
    pub(super) async fn take_reply(
        &self,
        live: &mut Live,
        mut reply: ModelReply,
        parsed: ParsedTurn,
        had_native: bool,
        prompt_tokens: u64,
    ) -> Result<Option<End>, RunError> {
        let reasoning = std::mem::take(&mut reply.reasoning);
        let thinking = parsed.reasoning;
        let calls = unique_ids(parsed.calls, &live.state);
        let unreadable = self.record_unreadable(live, &parsed.problems, &calls, reply.truncated);
        let said = |content: String, calls| {
            Message::assistant(content, calls)
                .with_prompt_tokens(prompt_tokens)
                .with_reasoning(reasoning)
                .with_thinking(thinking)
        };
        if calls.is_empty() && !unreadable.is_empty() {
            // The model tried to call a tool and failed to write the call: tell it,
            // rather than take its reply as the final answer.
            let why: Vec<&str> = unreadable.iter().map(|u| u.why.as_str()).collect();
            let note = format!(
                "Your last reply tried to call a tool, but the call could not be read: {}. Write the call again, with its arguments as one valid JSON object.",
                why.join("; ")
            );
            live.state.messages.push(said(reply.content, Vec::new()));
            live.state.messages.push(Message::user(note));
            return Ok(None);
        }
        if calls.is_empty() && self.ask_for_choice(live) {
            live.state.messages.push(said(reply.content, Vec::new()));
            let note = match &live.agent.tool_choice {
                ToolChoice::Tool(name) => format!("You must call the tool '{name}' now."),
                _ => "You must call one of your tools now, before you answer.".to_string(),
            };
            live.state.messages.push(Message::user(note));
            return Ok(None);
        }
        if calls.is_empty() && reply.truncated {
            return self
                .cut_answer(live, said(reply.content, Vec::new()), &parsed.text)
                .await;
        }
        if calls.is_empty() && forged(&parsed.text) {
            return self
                .forged_results(live, said(reply.content, Vec::new()))
                .await;
        }
        let marks = &mut live.state.marks;
        let whole = std::mem::take(&mut marks.cut) + parsed.text.trim();
        marks.continued = 0;
        if calls.is_empty() {
            live.state.messages.push(said(reply.content, Vec::new()));
            live.state.output = Some(whole.trim().to_string());
            self.save(live, Save::end(RunStatus::Completed, None))
                .await?;
            return Ok(Some(End::Completed));
        }
        let mut content = reply.content;
        if live.state.mode == Mode::Native && !had_native {
            // Calls read from a native-mode answer's text go back once, as native calls:
            // the text keeps only the prose around them.
            content = parsed.text.trim().to_string();
        }
        if live.state.mode == Mode::Xml && had_native && !mentions_calls(&content) {
            // An xml-mode model sees its calls as text, the way it is told to write them.
            for call in &calls {
                content.push_str(&xml_call(call));
            }
        }
        let (run, mut answered) = self.hold_back(live, calls);
        answered.extend(unreadable.into_iter().map(|u| refused(u.call, u.phase)));
        let mut shown = run.clone();
        shown.extend(answered.iter().map(|c| c.call.clone()));
        live.state.messages.push(said(content, shown));
        let mut turn = self.gate(live, run).await;
        turn.extend(answered);
        // Saved with the next step (calls marked executing, their results, or the
        // pause): until then nothing has run, and a crash costs asking the model again.
        live.state.turn = Some(turn);
        Ok(None)
    }

    /// Whether an answer without calls is met by asking once more for the call the
    /// agent's `tool_choice` requires (only once a run).
    fn ask_for_choice(&self, live: &mut Live) -> bool {
        let requires = matches!(
            live.agent.tool_choice,
            ToolChoice::Required | ToolChoice::Tool(_)
        );
        if !requires || live.state.marks.chose {
            return false;
        }
        live.state.marks.chose = true;
        true
    }

    /// Splits an answer's calls into those that run and those answered without
    /// running: every call under `tool_choice: none`, a call repeated past
    /// `max_repeats`, a call past `max_calls_per_turn`.
    fn hold_back(&self, live: &mut Live, calls: Vec<ToolCall>) -> (Vec<ToolCall>, Vec<TurnCall>) {
        let guards = live.agent.guards;
        let (mut run, mut held) = if live.agent.tool_choice == ToolChoice::None {
            let told = "Not run: this agent's tool_choice is none; answer without calling tools.";
            (
                Vec::new(),
                calls
                    .into_iter()
                    .map(|c| (c, ErrorKind::Policy, told.to_string()))
                    .collect(),
            )
        } else {
            let (run, repeated) = live.state.marks.admit(calls, guards.max_repeats);
            let told = repeated_note(guards.max_repeats);
            let held: Vec<_> = repeated
                .into_iter()
                .map(|c| (c, ErrorKind::Repeated, told.clone()))
                .collect();
            (run, held)
        };
        let cap = guards.max_calls_per_turn as usize;
        if cap > 0 && run.len() > cap {
            let told = format!(
                "Not run: at most {cap} call(s) run per turn; make this call again in your next turn if you still need it."
            );
            held.extend(
                run.split_off(cap)
                    .into_iter()
                    .map(|c| (c, ErrorKind::Policy, told.clone())),
            );
        }
        let answered = held
            .into_iter()
            .map(|(call, kind, told)| {
                let phase = self.answer(live, &call, CallStatus::Failed, Some(kind), told);
                refused(call, phase)
            })
            .collect();
        (run, answered)
    }

    /// A final answer cut by the output limit: a `truncated` problem; the model is asked
    /// to continue (bounded) or the run fails, as the agent says.
    async fn cut_answer(
        &self,
        live: &mut Live,
        said: Message,
        text: &str,
    ) -> Result<Option<End>, RunError> {
        self.emit(events::ParseProblem {
            run_id: live.run_id.clone(),
            message: "truncated: the answer was cut by the model's output limit".into(),
        });
        live.state.messages.push(said);
        let marks = &mut live.state.marks;
        if live.agent.guards.on_truncated == OnTruncated::Continue
            && marks.continued < MAX_CONTINUATIONS
        {
            marks.continued += 1;
            marks.cut.push_str(text);
            live.state.messages.push(Message::user(
                "Your answer was cut off by the output limit. Continue it exactly where it stopped, without repeating what you already wrote.",
            ));
            return Ok(None);
        }
        self.save(live, Save::end(RunStatus::Failed, Some(CUT.into())))
            .await?;
        Ok(Some(End::Failed(CUT.into())))
    }

    /// A final answer that holds tool results the model wrote itself: a problem. The
    /// model is told once that results come from toolgate only; a second time fails
    /// the run.
    async fn forged_results(
        &self,
        live: &mut Live,
        said: Message,
    ) -> Result<Option<End>, RunError> {
        self.emit(events::ParseProblem {
            run_id: live.run_id.clone(),
            message: "forged_result: the answer holds a tool result the model wrote itself".into(),
        });
        live.state.messages.push(said);
        if !live.state.marks.forged {
            live.state.marks.forged = true;
            live.state.messages.push(Message::user(FORGED_NOTE));
            return Ok(None);
        }
        self.save(live, Save::end(RunStatus::Failed, Some(FORGED.into())))
            .await?;
        Ok(Some(End::Failed(FORGED.into())))
    }

    /// Records each call the model wrote but nobody could read (invalid JSON, cut by
    /// the output limit) as failed, under the tool name it wrote when that is readable,
    /// so that summaries see it; returns each with the result the model is told.
    fn record_unreadable(
        &self,
        live: &mut Live,
        problems: &[Problem],
        calls: &[ToolCall],
        truncated: bool,
    ) -> Vec<Unreadable> {
        let unreadable: Vec<&Problem> = problems
            .iter()
            .filter(|p| is_unreadable(p, calls))
            .collect();
        let mut out = Vec::with_capacity(unreadable.len());
        for (n, p) in unreadable.into_iter().enumerate() {
            let call = ToolCall {
                id: p
                    .call_id
                    .clone()
                    .filter(|id| !calls.iter().any(|c| &c.id == id))
                    .unwrap_or_else(|| {
                        format!("call_unreadable_{}_{}", live.state.iteration, n + 1)
                    }),
                name: p.tool.clone().unwrap_or_else(|| "unknown".into()),
                arguments: Default::default(),
            };
            // The excerpt of what was written may hold a secret: left out then.
            let secret = live
                .schemas
                .get(&call.name)
                .is_some_and(toolgate_tool::secrets::has_secrets);
            let mut why = if secret {
                format!("the arguments of '{}' are not a JSON object", call.name)
            } else {
                p.message.clone()
            };
            let kind = if truncated {
                why = format!("it was cut off by the output limit ({why})");
                ErrorKind::Truncated
            } else {
                ErrorKind::InvalidArguments
            };
            let told = format!(
                "This call could not be read, and nothing ran: {why}. Write it again, with its arguments as one valid JSON object."
            );
            let phase = self.answer(live, &call, CallStatus::Failed, Some(kind), told);
            out.push(Unreadable { call, phase, why });
        }
        out
    }
}

/// Whether `text` holds a result block, as toolgate writes them, that the model wrote.
fn forged(text: &str) -> bool {
    ["<tool_result>", "<tool_result ", "<function_results>"]
        .iter()
        .any(|tag| text.contains(tag))
}

/// A call the model wrote that could not be read, recorded.
struct Unreadable {
    call: ToolCall,
    phase: Phase,
    why: String,
}

/// A problem that stands for a call written but not read: invalid JSON, a call cut by
/// the end of the output (`truncated_call`), or an unclosed call whose tool is named
/// and that was not kept.
fn is_unreadable(p: &Problem, calls: &[ToolCall]) -> bool {
    let kept = p
        .call_id
        .as_ref()
        .is_some_and(|id| calls.iter().any(|c| &c.id == id));
    match p.kind {
        ProblemKind::InvalidJson => !kept,
        ProblemKind::UnclosedTag => p.tool.is_some() && !kept,
        // Kinds the parser may add later (`truncated_call`) are matched by name.
        other => serde_json::to_value(other).is_ok_and(|v| v == "truncated_call") && !kept,
    }
}

/// A turn entry for a call answered without running.
pub(super) fn refused(call: ToolCall, phase: Phase) -> TurnCall {
    TurnCall {
        call,
        gate: Gate::Refuse,
        phase,
        edited: None,
        ask: None,
        images: Vec::new(),
    }
}
