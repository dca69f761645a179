//! The agent loop of DESIGN.md: model -> parse -> resolve -> gate -> execute -> record
//! -> feed back, until the model answers without calls, the iterations run out, the
//! run pauses for a person or the client, or it fails. Every step is saved before the
//! next one starts; a call is saved as executing before it runs, so a crash never runs
//! it twice.

use serde_json::Value;
use tokio::sync::mpsc::{self, UnboundedReceiver};
use tracing::Instrument;

use super::context::ContextLive;
use super::conversation;
use super::save::Save;
use super::sink::TurnSink;
use super::state::Phase;
use super::turn::{mentions_calls, outcome_text, unique_ids, xml_call};
use super::{Live, RunError, Runner};
use crate::agent::Mode;
use crate::engine::{CallOutcome, Cancel, Engine, EngineConfig, PreparedCall};
use crate::model::{Message, ModelError, ModelRequest};
use crate::parse::{ParseOptions, ProblemKind};
use crate::permission::Gate;
use crate::protocol::{CallStatus, Event, RequiredItem, RunEvent, RunObject, RunStatus};
use crate::store::CallQuery;
use crate::store::Refusal;
use crate::telemetry::{genai, metrics, propagate};
use crate::tool::DEFAULT_TIMEOUT;

/// How a drive ended.
enum End {
    Completed,
    Paused(Vec<RequiredItem>),
    Incomplete(String),
    Failed(String),
    /// Given back at a shutdown, still in progress, for another process to take up.
    HandedBack,
}

impl Runner {
    /// Drives a leased run until it ends or pauses, then returns its run object. Logs
    /// go to a `run{run_id}` span (`invoke_agent` in the run's trace), and the drive is
    /// counted in the metrics.
    pub(crate) async fn drive(&self, mut live: Live, resumed: bool) -> Result<RunObject, RunError> {
        let span = genai::run_span(
            &live.run_id,
            &live.agent.name,
            &live.conversation_id,
            &live.state.model,
        );
        if let Some(first) = propagate::continue_run(&span, live.state.trace.as_deref()) {
            // Saved with the next step: later drives continue this trace.
            live.state.trace = Some(first);
        }
        let agent = live.agent.name.clone();
        metrics::run_started(&agent);
        let started = std::time::Instant::now();
        let result = self
            .drive_in_span(live, resumed)
            .instrument(span.clone())
            .await;
        let status = match &result {
            Ok(run) => run.status.as_str(),
            Err(e) => {
                genai::failed(&span, e.kind());
                "error"
            }
        };
        if status == RunStatus::Failed.as_str() {
            genai::failed(&span, "run_failed");
        }
        metrics::run_ended(&agent, status, started.elapsed());
        result
    }

    async fn drive_in_span(&self, mut live: Live, resumed: bool) -> Result<RunObject, RunError> {
        tracing::info!(resumed, iteration = live.state.iteration, "run driven");
        self.emit(RunEvent::RunStarted {
            run_id: live.run_id.clone(),
            conversation_id: live.conversation_id.clone(),
            agent: live.agent.name.clone(),
            model: crate::agent::shown_model(&live.state.model),
            resumed,
        });
        let (tool_tx, mut tool_rx) = mpsc::unbounded_channel();
        // The process's limits, and the agent's share of them when its file sets some.
        let share = live
            .agent
            .limits
            .as_ref()
            .map(|l| self.limits.share(&live.agent.name, l));
        let engine = Engine::shared(
            EngineConfig {
                limits: live
                    .agent
                    .limits
                    .clone()
                    .unwrap_or_else(|| self.limits.process().config().clone()),
                default_timeout: DEFAULT_TIMEOUT,
                workspace: live.state.workspace.clone(),
                credentials: Some(
                    self.credentials_for(live.state.owner.as_ref().map(|o| o.tenant.clone())),
                ),
                context: std::sync::Arc::new(crate::tool::RunContext {
                    tenant: Some(live.state.owner.as_ref().map_or_else(
                        || crate::identity::DEFAULT_TENANT.to_string(),
                        |o| o.tenant.clone(),
                    )),
                    user: live.state.owner.as_ref().and_then(|o| o.user.clone()),
                    run_id: Some(live.run_id.clone()),
                    conversation_id: Some(live.conversation_id.clone()),
                }),
            },
            std::sync::Arc::clone(&self.limits),
            share,
            // The loop commits the records itself, in the transaction that saves the
            // step, so that the record and the run's state always agree.
            None,
            Some(tool_tx),
        );
        let cancel = Cancel::new();
        let interrupt = {
            let (outer, inner) = (self.interrupt.clone(), cancel.clone());
            tokio::spawn(async move {
                outer.cancelled().await;
                inner.cancel();
            })
        };
        // A cancel from this process stops the run at once; one from another process
        // is seen through the change feed, a lost lease at the renewal.
        let _active = self.active.register(&live.run_id, &cancel);
        let keeper = super::keeper::keep(&self.store, &live.run_id, &live.owner, &cancel);
        let result = self.steps(&mut live, &engine, &mut tool_rx, &cancel).await;
        drop(keeper);
        interrupt.abort();
        let run_id = live.run_id.clone();
        let end = match result {
            Ok(end) => end,
            Err(
                e @ RunError::Refused {
                    kind: Refusal::LeaseLost,
                    ..
                },
            ) => {
                // The lease was lost: cancelled by the user, or taken over.
                let object = self.get(&run_id).await?;
                if object.status == RunStatus::Cancelled {
                    tracing::info!("run cancelled while it ran");
                    self.emit(RunEvent::RunCancelled { run_id });
                    return Ok(object);
                }
                return Err(e);
            }
            Err(other) => {
                tracing::warn!(error = %other, kind = other.kind(), "run stopped by an error");
                // Leave the run resumable: failed, with the reason, lease given back.
                let message = other.to_string();
                let _ = self
                    .save(
                        &mut live,
                        Save::end(RunStatus::Failed, Some(message.clone())),
                    )
                    .await;
                self.emit(RunEvent::RunFailed {
                    run_id,
                    error: message,
                });
                return Err(other);
            }
        };
        tracing::info!(
            outcome = match &end {
                End::Completed => "completed",
                End::Paused(_) => "requires_action",
                End::Incomplete(_) => "incomplete",
                End::Failed(_) => "failed",
                End::HandedBack => "handed_back",
            },
            iteration = live.state.iteration,
            "run stopped"
        );
        let event = match end {
            End::Completed => Some(RunEvent::RunCompleted {
                run_id: run_id.clone(),
            }),
            End::Paused(items) => Some(RunEvent::RunRequiresAction {
                run_id: run_id.clone(),
                items,
            }),
            End::Incomplete(reason) => Some(RunEvent::RunIncomplete {
                run_id: run_id.clone(),
                reason,
            }),
            End::Failed(error) => Some(RunEvent::RunFailed {
                run_id: run_id.clone(),
                error,
            }),
            // Nothing ended: the run goes on in the process that takes it up.
            End::HandedBack => None,
        };
        if let Some(event) = event {
            self.emit(event);
        }
        self.get(&run_id).await
    }

    /// The loop.
    async fn steps(
        &self,
        live: &mut Live,
        engine: &Engine,
        tool_rx: &mut UnboundedReceiver<Event>,
        cancel: &Cancel,
    ) -> Result<End, RunError> {
        let system =
            conversation::system_prompt(&live.agent, &live.toolkit).map_err(RunError::BadInput)?;
        let tools = conversation::tools(&live.agent, &live.toolkit);
        let mut ctx = ContextLive::new(&live.agent, &live.state.model, &system, &tools);
        loop {
            if cancel.is_cancelled() && self.hand_back && self.interrupt.is_cancelled() {
                // The process is shutting down: the run goes on elsewhere.
                self.save(live, Save::hand_back()).await?;
                return Ok(End::HandedBack);
            }
            if cancel.is_cancelled() {
                // Interrupted, or the lease is gone (then this save is refused).
                let message = format!(
                    "interrupted before it finished; toolgate resume {} continues it",
                    live.run_id
                );
                self.save(live, Save::end(RunStatus::Failed, Some(message.clone())))
                    .await?;
                return Ok(End::Failed(message));
            }
            if live.state.turn.is_some() {
                let span = tracing::info_span!("turn", n = live.state.iteration);
                let waiting = self
                    .settle(live, engine, tool_rx, cancel)
                    .instrument(span)
                    .await?;
                if !waiting.is_empty() {
                    self.save(live, Save::end(RunStatus::RequiresAction, None))
                        .await?;
                    return Ok(End::Paused(waiting));
                }
                if !all_done(live) {
                    // A sub-agent was stopped with this run: the loop's top saves it.
                    continue;
                }
                if live.state.single_call {
                    super::single_call::settled(live);
                } else if !self.final_answered(live) {
                    feed_back(live, &ctx);
                    continue;
                }
                self.save(live, Save::end(RunStatus::Completed, None))
                    .await?;
                return Ok(End::Completed);
            }
            if live.state.iteration >= live.state.max_iterations {
                let reason = format!(
                    "stopped after max_iterations ({}) without a final answer",
                    live.state.max_iterations
                );
                self.save(live, Save::end(RunStatus::Incomplete, Some(reason.clone())))
                    .await?;
                return Ok(End::Incomplete(reason));
            }
            let opts = ParseOptions::default()
                .with_dialect(live.agent.dialect)
                .with_schemas(live.schemas.clone())
                .with_id_prefix(format!(
                    "call_{}_{}_",
                    live.run_id
                        .trim_start_matches("run_")
                        .get(..6)
                        .unwrap_or("x"),
                    live.state.iteration + 1
                ));
            let run_id = live.run_id.clone();
            let mut sink = TurnSink::new(&run_id, self.events.as_ref(), opts);
            // A model that says the request passed its window gets one compaction and
            // one more try before that counts as a failure.
            let mut force = false;
            let (answered, prompt_tokens) = loop {
                let fitted = self.fit(live, &mut ctx, force).await?;
                let request = ModelRequest {
                    system: &system,
                    messages: fitted.messages.as_deref().unwrap_or(&live.state.messages),
                    tools: &tools,
                    response_format: live.state.response_format.as_ref(),
                };
                let span = tracing::info_span!(
                    "turn",
                    n = live.state.iteration + 1,
                    prompt_tokens = fitted.tokens
                );
                let answered = tokio::select! {
                    r = super::model_call::ask(&*live.model, request, &mut sink).instrument(span) => Some(r),
                    _ = cancel.cancelled() => None,
                };
                match answered {
                    Some(Err(ModelError::ContextExceeded(message))) if !force => {
                        tracing::warn!(error = %message, "the model found the request too long; compacting and trying again");
                        force = true;
                    }
                    other => break (other, fitted.tokens),
                }
            };
            let Some(answered) = answered else {
                // Interrupted while the model answered: the loop's top saves it.
                drop(sink);
                continue;
            };
            let mut reply = match answered {
                Ok(reply) => reply,
                Err(e) => {
                    let message = e.to_string();
                    self.save(live, Save::end(RunStatus::Failed, Some(message.clone())))
                        .await?;
                    return Ok(End::Failed(message));
                }
            };
            live.state.iteration += 1;
            live.state.usage.add(reply.usage);
            let reasoning = std::mem::take(&mut reply.reasoning);
            let had_native = !reply.native.is_empty();
            let parsed = sink.finish(reply.native);
            let calls = unique_ids(parsed.calls, &live.state);
            let unreadable: Vec<&str> = parsed
                .problems
                .iter()
                .filter(|p| p.kind == ProblemKind::InvalidJson)
                .map(|p| p.message.as_str())
                .collect();
            // A call the model wrote but nobody could read still counts: recorded as
            // failed, so that summaries see it.
            for (n, p) in parsed
                .problems
                .iter()
                .filter(|p| p.kind == ProblemKind::InvalidJson)
                .enumerate()
            {
                let call = crate::parse::ToolCall {
                    id: p.call_id.clone().unwrap_or_else(|| {
                        format!("call_unreadable_{}_{}", live.state.iteration, n + 1)
                    }),
                    name: p.tool.clone().unwrap_or_else(|| "unknown".into()),
                    arguments: Default::default(),
                };
                // The excerpt of what was written may hold a secret: left out then.
                let secret = live
                    .schemas
                    .get(&call.name)
                    .is_some_and(crate::secrets::has_secrets);
                let message = if secret {
                    format!("the arguments of '{}' are not a JSON object", call.name)
                } else {
                    p.message.clone()
                };
                self.answer(
                    live,
                    &call,
                    CallStatus::Failed,
                    Some(crate::protocol::ErrorKind::InvalidArguments),
                    message,
                );
            }
            if calls.is_empty() && !unreadable.is_empty() {
                // The model tried to call a tool and failed to write the call: tell it,
                // rather than take its reply as the final answer.
                let note = format!(
                    "Your last reply tried to call a tool, but the call could not be read: {}. Write the call again, with its arguments as one valid JSON object.",
                    unreadable.join("; ")
                );
                live.state.messages.push(
                    Message::assistant(reply.content, Vec::new())
                        .with_prompt_tokens(prompt_tokens)
                        .with_reasoning(reasoning),
                );
                live.state.messages.push(Message::user(note));
                continue;
            }
            if calls.is_empty() {
                live.state.messages.push(
                    Message::assistant(reply.content, Vec::new())
                        .with_prompt_tokens(prompt_tokens)
                        .with_reasoning(reasoning),
                );
                live.state.output = Some(parsed.text.trim().to_string());
                self.save(live, Save::end(RunStatus::Completed, None))
                    .await?;
                return Ok(End::Completed);
            }
            let mut content = reply.content;
            if live.state.mode == Mode::Xml && had_native && !mentions_calls(&content) {
                // An xml-mode model sees its calls as text, the way it is told to write them.
                for call in &calls {
                    content.push_str(&xml_call(call));
                }
            }
            live.state.messages.push(
                Message::assistant(content, calls.clone())
                    .with_prompt_tokens(prompt_tokens)
                    .with_reasoning(reasoning),
            );
            let turn = self.gate(live, calls).await;
            // Saved with the next step (calls marked executing, their results, or the
            // pause): until then nothing has run, and a crash costs asking the model again.
            live.state.turn = Some(turn);
        }
    }

    /// Applies decisions, recovers calls a dead process left executing, and runs every
    /// call that may run. Returns the items still waiting.
    async fn settle(
        &self,
        live: &mut Live,
        engine: &Engine,
        tool_rx: &mut UnboundedReceiver<Event>,
        cancel: &Cancel,
    ) -> Result<Vec<RequiredItem>, RunError> {
        let mut turn = live.state.turn.take().unwrap_or_default();
        let mut recorded: Option<Vec<crate::store::StoredCall>> = None;
        for c in turn.iter_mut() {
            match &c.phase {
                Phase::Executing => {
                    // A process died while this call ran. Its record, if committed, says
                    // how it ended; otherwise its outcome is unknown. It never runs again.
                    if recorded.is_none() {
                        let q = CallQuery {
                            run_id: Some(live.run_id.clone()),
                            limit: Some(10_000),
                            ..CallQuery::default()
                        };
                        recorded = Some(self.store.calls(&q).await?.calls);
                    }
                    let found = recorded
                        .iter()
                        .flatten()
                        .find(|r| r.record.call_id == c.call.id);
                    c.phase = match found {
                        Some(r) => Phase::Done {
                            status: r.record.status,
                            output: r
                                .record
                                .result
                                .clone()
                                .or_else(|| r.record.error_message.clone())
                                .unwrap_or_default(),
                        },
                        None => self.answer(
                            live,
                            &c.call,
                            CallStatus::Failed,
                            Some(crate::protocol::ErrorKind::Interrupted),
                            "The process running this call stopped before it finished, so its outcome is unknown: it may or may not have taken effect. It was not run again.".to_string(),
                        ),
                    };
                    if c.gate != Gate::Run {
                        live.pending_updates
                            .push((c.call.id.clone(), crate::store::PendingState::Done));
                    }
                }
                Phase::Waiting => {
                    if let Some(decision) = live.decisions.remove(&c.call.id) {
                        self.apply(live, c, decision);
                    } else if c.gate == Gate::Approval && live.standing.contains(&c.call.name) {
                        c.phase = Phase::Ready;
                    }
                }
                Phase::Ready | Phase::Delegated | Phase::Done { .. } => {}
            }
            if c.gate == Gate::Approval && c.phase == Phase::Ready {
                // Approved: gated again against the policy of this moment.
                if let Some(told) = self.recheck(live, c).await {
                    live.pending_updates
                        .push((c.call.id.clone(), crate::store::PendingState::Done));
                    c.phase = self.answer(
                        live,
                        &c.call,
                        CallStatus::Denied,
                        Some(crate::protocol::ErrorKind::Policy),
                        told,
                    );
                }
            }
        }
        let (delegated, ready): (Vec<usize>, Vec<usize>) = (0..turn.len())
            .filter(|&i| turn[i].phase == Phase::Ready)
            .partition(|&i| self.is_subagent_call(live, &turn[i]));
        for &i in &delegated {
            turn[i].phase = Phase::Delegated;
            if turn[i].gate != Gate::Run {
                live.pending_updates.push((
                    turn[i].call.id.clone(),
                    crate::store::PendingState::Executing,
                ));
            }
        }
        if !ready.is_empty() {
            let mut save = Save::step();
            let mut fenced = false;
            for &i in &ready {
                turn[i].phase = Phase::Executing;
                fenced |= !self.harmless(live, &turn[i]);
                if turn[i].gate != Gate::Run {
                    save.set_pending.push((
                        turn[i].call.id.clone(),
                        crate::store::PendingState::Executing,
                    ));
                }
            }
            if fenced {
                // Durable before anything runs: a crash from here on never runs these
                // again. (Calls that change nothing may run again; they skip this.)
                live.state.turn = Some(turn);
                self.save(live, save).await?;
                turn = live.state.turn.take().unwrap_or_default();
            } else {
                live.pending_updates.extend(save.set_pending);
            }
            let prepared: Vec<PreparedCall> = ready
                .iter()
                .map(|&i| self.prepare(live, &turn[i]))
                .collect();
            let outcomes = run_batch(&live.run_id, engine, prepared, cancel, tool_rx, self).await?;
            for (&i, outcome) in ready.iter().zip(outcomes) {
                let mut output = outcome_text(&outcome);
                let mut record = outcome.record;
                if let Ok(out) = &outcome.result {
                    turn[i].images = out.images();
                }
                if outcome.result.is_ok()
                    && !live.toolkit.hooks(&turn[i].call.name, true).is_empty()
                {
                    let ran = self.prepare(live, &turn[i]).call;
                    let after = self.after_result(live, &ran, output).await;
                    output = after.shown;
                    record.replaced = after.replaced;
                    if let Some(failure) = after.failure {
                        record.error_kind =
                            Some(crate::protocol::ErrorKind::HookFailed.as_str().into());
                        record.error_message = Some(failure);
                    }
                }
                if let Some(args) = &turn[i].edited {
                    let shown = match live.schemas.get(&turn[i].call.name) {
                        Some(schema) => crate::secrets::mask_args(schema, args),
                        None => args.clone(),
                    };
                    output = format!(
                        "(A person edited the arguments before approving; the call ran with {})\n{output}",
                        Value::Object(shown)
                    );
                }
                if turn[i].gate != Gate::Run {
                    live.pending_updates
                        .push((turn[i].call.id.clone(), crate::store::PendingState::Done));
                }
                turn[i].phase = Phase::Done {
                    status: outcome.status,
                    output,
                };
                live.records.push(record);
            }
            // The records and the results, committed together before the model sees them.
            live.state.turn = Some(turn);
            self.save(live, Save::step()).await?;
            turn = live.state.turn.take().unwrap_or_default();
        }
        // Sub-agents, each a child run, after the turn's own calls.
        let below = self
            .settle_children(live, &mut turn, engine, cancel)
            .await?;
        let mut waiting: Vec<RequiredItem> = turn
            .iter()
            .filter(|c| c.phase == Phase::Waiting)
            .map(|c| self.required_item(live, c))
            .collect();
        waiting.extend(below);
        live.state.turn = Some(turn);
        Ok(waiting)
    }
}

/// Runs a batch while passing the engine's events on in order, as they happen.
async fn run_batch(
    run_id: &str,
    engine: &Engine,
    prepared: Vec<PreparedCall>,
    cancel: &Cancel,
    tool_rx: &mut UnboundedReceiver<Event>,
    runner: &Runner,
) -> Result<Vec<CallOutcome>, RunError> {
    let batch = engine.execute_batch(prepared, cancel);
    tokio::pin!(batch);
    loop {
        tokio::select! {
            biased;
            Some(event) = tool_rx.recv() => runner.emit(RunEvent::Tool { run_id: run_id.to_string(), event }),
            outcomes = &mut batch => {
                while let Ok(event) = tool_rx.try_recv() {
                    runner.emit(RunEvent::Tool { run_id: run_id.to_string(), event });
                }
                return Ok(outcomes?);
            }
        }
    }
}

/// Every call of the current turn has its result.
fn all_done(live: &Live) -> bool {
    live.state
        .turn
        .iter()
        .flatten()
        .all(|c| matches!(c.phase, Phase::Done { .. }))
}

/// Ends a turn whose calls all have results: the results join the conversation, in
/// call order, each cut to the budget's `result_tokens`.
fn feed_back(live: &mut Live, ctx: &ContextLive) {
    let turn = live.state.turn.take().unwrap_or_default();
    // The marker points to `read_result` only when the model has it.
    let read_on = live.toolkit.resolve(super::READ_RESULT).is_ok();
    let cut = Some((&ctx.counter, ctx.budget.result_tokens, read_on));
    let results = conversation::results(live.state.mode, &turn, "", cut, ctx.vision);
    live.state.messages.extend(results);
}
