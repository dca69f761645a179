//! The agent loop of DESIGN.md: model -> parse -> resolve -> gate -> execute -> record
//! -> feed back, until the model answers without calls, the iterations run out, the
//! run pauses for a person or the client, or it fails. Every step is saved before the
//! next one starts; a call is saved as executing before it runs, so a crash never runs
//! it twice.

use tokio::sync::mpsc::{self, UnboundedReceiver};
use tracing::Instrument;

use super::context::ContextLive;
use super::conversation;
use super::ending::End;
use super::save::Save;
use super::sink::{Reading, TurnSink};
use super::state::Phase;
use super::{Live, RunError, Runner};
use crate::agent::Mode;
use crate::engine::{Cancel, Engine};
use toolgate_model::{ModelError, ModelReply, ModelRequest};
use toolgate_parse::ParseOptions;
use toolgate_protocol::{Event, RunObject, RunStatus, events};
use toolgate_telemetry::{genai, metrics, propagate};

/// How long a server shutting down lets the calls already running finish before it
/// cuts them short (recorded `cancelled`); runs then go back for another server.
pub(crate) const DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

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
        self.emit(events::RunStarted {
            run_id: live.run_id.clone(),
            conversation_id: live.conversation_id.clone(),
            agent: live.agent.name.clone(),
            model: crate::agent::shown_model(&live.state.model),
            resumed,
        });
        let (tool_tx, mut tool_rx) = mpsc::unbounded_channel();
        let engine = self.engine_for(&live, tool_tx);
        let cancel = Cancel::new();
        let interrupt = {
            let (outer, inner) = (self.interrupt.clone(), cancel.clone());
            let drain = self.hand_back;
            tokio::spawn(async move {
                outer.cancelled().await;
                if drain {
                    // A server shutting down lets the calls already running finish
                    // (an approved call's effect is not cut in half), up to a bound.
                    tokio::time::sleep(DRAIN).await;
                }
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
        self.finish(live, result).await
    }

    /// The loop: a turn to settle, else the model to ask, until it ends or pauses.
    async fn steps(
        &self,
        live: &mut Live,
        engine: &Engine,
        tool_rx: &mut UnboundedReceiver<Event>,
        cancel: &Cancel,
    ) -> Result<End, RunError> {
        let system = conversation::system_prompt(&live.agent, &live.toolkit)
            .map_err(|e| RunError::BadInput(e.to_string()))?;
        let tools = conversation::tools(&live.agent, &live.toolkit);
        let mut ctx = ContextLive::new(&live.agent, &live.state.model, &system, &tools);
        loop {
            if let Some(end) = self.stopped(live, cancel).await? {
                return Ok(end);
            }
            if live.state.turn.is_some() {
                match self
                    .settle_turn(live, engine, tool_rx, cancel, &ctx)
                    .await?
                {
                    Some(end) => return Ok(end),
                    None => continue,
                }
            }
            if live.state.workflow.is_some() {
                match self.play_step(live).await? {
                    Some(end) => return Ok(end),
                    None => continue,
                }
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
            if let Some(end) = self.budget_gate(live).await? {
                return Ok(end);
            }
            let run_id = live.run_id.clone();
            let mut sink = TurnSink::new(
                &run_id,
                self.events.as_ref(),
                parse_options(live),
                reading(live),
            );
            let asked = (system.as_str(), &tools[..], cancel);
            let Some((answered, prompt_tokens)) =
                self.ask_model(live, &mut ctx, asked, &mut sink).await?
            else {
                // Interrupted while the model answered: the loop's top saves it.
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
            self.spent(live, reply.usage);
            let had_native = !reply.native.is_empty();
            let parsed = sink.finish(std::mem::take(&mut reply.native));
            if let Some(end) = self
                .take_reply(live, reply, parsed, had_native, prompt_tokens)
                .await?
            {
                return Ok(end);
            }
        }
    }

    /// At the loop's top: a shutdown gives the run back, an interrupt (or a lost
    /// lease, then this save is refused) saves it failed, ready to resume.
    async fn stopped(&self, live: &mut Live, cancel: &Cancel) -> Result<Option<End>, RunError> {
        if self.hand_back && self.interrupt.is_cancelled() {
            // The process is shutting down: the run goes on elsewhere.
            self.save(live, Save::hand_back()).await?;
            return Ok(Some(End::HandedBack));
        }
        if !cancel.is_cancelled() {
            return Ok(None);
        }
        let message = format!(
            "interrupted before it finished; toolgate resume {} continues it",
            live.run_id
        );
        self.save(live, Save::end(RunStatus::Failed, Some(message.clone())))
            .await?;
        Ok(Some(End::Failed(message)))
    }

    /// Settles the current turn: it pauses, ends the run, or (`None`) its results go
    /// back to the model and the loop goes on.
    async fn settle_turn(
        &self,
        live: &mut Live,
        engine: &Engine,
        tool_rx: &mut UnboundedReceiver<Event>,
        cancel: &Cancel,
        ctx: &ContextLive,
    ) -> Result<Option<End>, RunError> {
        let span = tracing::info_span!("turn", n = live.state.iteration);
        // Boxed: the turn's future is deep (tools, hooks, sub-agents), and the
        // compiler's proof that the drive is `Send` must not run out of depth.
        let waiting = Box::pin(self.settle(live, engine, tool_rx, cancel).instrument(span)).await?;
        if !waiting.is_empty() {
            self.save(live, Save::end(RunStatus::RequiresAction, None))
                .await?;
            return Ok(Some(End::Paused(waiting)));
        }
        if !all_done(live) {
            // A sub-agent was stopped with this run: the loop's top saves it.
            return Ok(None);
        }
        if live.state.workflow.is_some() {
            return self.step_settled(live, ctx).await;
        }
        if live.state.single_call {
            super::single_call::settled(live);
        } else if !self.final_answered(live) {
            feed_back(live, ctx);
            return Ok(None);
        }
        self.save(live, Save::end(RunStatus::Completed, None))
            .await?;
        Ok(Some(End::Completed))
    }

    /// Asks the model (through the context budget), streaming its answer into `sink`.
    /// A model that says the request passed its window gets one compaction and one more
    /// try before that counts as a failure. `None`: interrupted meanwhile.
    async fn ask_model(
        &self,
        live: &mut Live,
        ctx: &mut ContextLive,
        (system, tools, cancel): (&str, &[serde_json::Value], &Cancel),
        sink: &mut TurnSink<'_>,
    ) -> Result<Option<(Result<ModelReply, ModelError>, u64)>, RunError> {
        let mut force = false;
        loop {
            let fitted = self.fit(live, ctx, force).await?;
            let request = ModelRequest {
                system,
                messages: fitted.messages.as_deref().unwrap_or(&live.state.messages),
                tools,
                response_format: live.state.response_format.as_ref(),
                tool_choice: Some(&live.agent.tool_choice),
            };
            let span = tracing::info_span!(
                "turn",
                n = live.state.iteration + 1,
                prompt_tokens = fitted.tokens
            );
            let answered = tokio::select! {
                r = super::model_call::ask(&*live.model, request, sink).instrument(span) => r,
                _ = cancel.cancelled() => return Ok(None),
            };
            match answered {
                Err(ModelError::ContextExceeded(message)) if !force => {
                    tracing::warn!(error = %message, "the model found the request too long; compacting and trying again");
                    force = true;
                }
                other => return Ok(Some((other, fitted.tokens))),
            }
        }
    }
}

/// How this turn's answer is parsed: the agent's dialect, its tools' schemas, and call
/// ids of this run and turn.
fn parse_options(live: &Live) -> ParseOptions {
    ParseOptions::default()
        .with_dialect(live.agent.dialect)
        .with_schemas(live.schemas.clone())
        .with_id_prefix(format!(
            "call_{}_{}_",
            live.run_id
                .trim_start_matches("run_")
                .get(..6)
                .unwrap_or("x"),
            live.state.iteration + 1
        ))
}

/// How this turn's answer text is read for calls: in native mode only when the agent
/// did not say `dialect: none`.
fn reading(live: &Live) -> Reading {
    match live.state.mode {
        Mode::Native if !live.agent.text_calls => Reading::Plain,
        Mode::Native => Reading::Calls { trailing: true },
        Mode::Xml => Reading::Calls { trailing: false },
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
pub(super) fn feed_back(live: &mut Live, ctx: &ContextLive) {
    let turn = live.state.turn.take().unwrap_or_default();
    // The marker points to `read_result` only when the model has it.
    let read_on = live.toolkit.resolve(super::READ_RESULT).is_ok();
    let cut = Some((&ctx.counter, ctx.budget.result_tokens, read_on));
    let results = conversation::results(live.state.mode, &turn, "", cut, ctx.vision);
    live.state.messages.extend(results);
}
