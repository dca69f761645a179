//! Settling a turn: decisions applied, calls a dead process left executing recovered
//! (never run again), the calls that may run made durable as executing, run, their
//! results and records saved in one step, then the sub-agents' calls. Every phase
//! change goes through `TurnCall::enter`, which says what the call's pending row
//! becomes.

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use super::save::Save;
use super::state::{Phase, TurnCall};
use super::turn::outcome_text;
use super::{Live, RunError, Runner};
use crate::engine::{CallOutcome, Cancel, Engine, PreparedCall};
use toolgate_protocol::{CallStatus, ErrorKind, Event, RequiredItem};
use toolgate_store::{CallQuery, StoredCall};
use toolgate_tool::permission::Gate;

/// What a dead process's executing call is told, when no record says how it ended.
const UNKNOWN_OUTCOME: &str = "The process running this call stopped before it finished, so its outcome is unknown: it may or may not have taken effect. It was not run again.";

impl Runner {
    /// Applies decisions, recovers calls a dead process left executing, and runs every
    /// call that may run. Returns the items still waiting.
    pub(super) async fn settle(
        &self,
        live: &mut Live,
        engine: &Engine,
        tool_rx: &mut UnboundedReceiver<Event>,
        cancel: &Cancel,
    ) -> Result<Vec<RequiredItem>, RunError> {
        let mut turn = live.state.turn.take().unwrap_or_default();
        let mut recorded: Option<Vec<StoredCall>> = None;
        for c in turn.iter_mut() {
            match &c.phase {
                Phase::Executing => self.recover(live, c, &mut recorded).await?,
                Phase::Waiting => {
                    if let Some(decision) = live.decisions.remove(&c.call.id) {
                        self.apply(live, c, decision);
                    } else if c.gate == Gate::Approval && live.standing.contains(&c.call.name) {
                        live.pending_updates.extend(c.enter(Phase::Ready));
                    }
                }
                Phase::Ready | Phase::Delegated | Phase::Done { .. } => {}
            }
            if c.gate == Gate::Approval && c.phase == Phase::Ready {
                // Approved: gated again against the policy of this moment.
                if let Some(told) = self.recheck(live, c).await {
                    let denied = self.answer(
                        live,
                        &c.call,
                        CallStatus::Denied,
                        Some(ErrorKind::Policy),
                        told,
                    );
                    live.pending_updates.extend(c.enter(denied));
                }
            }
        }
        if self.hand_back && self.interrupt.is_cancelled() {
            // A server shutting down starts nothing new: the run goes back as it stands
            // (approved calls still decided, not executing) and the next server runs them.
            live.state.turn = Some(turn);
            return Ok(Vec::new());
        }
        let (delegated, ready): (Vec<usize>, Vec<usize>) = (0..turn.len())
            .filter(|&i| turn[i].phase == Phase::Ready)
            .partition(|&i| self.is_subagent_call(live, &turn[i]));
        for &i in &delegated {
            live.pending_updates.extend(turn[i].enter(Phase::Delegated));
        }
        if !ready.is_empty() {
            turn = self
                .run_ready(live, turn, &ready, engine, tool_rx, cancel)
                .await?;
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

    /// A call a process left executing when it died. Its record, if committed, says
    /// how it ended; otherwise its outcome is unknown. It never runs again.
    async fn recover(
        &self,
        live: &mut Live,
        c: &mut TurnCall,
        recorded: &mut Option<Vec<StoredCall>>,
    ) -> Result<(), RunError> {
        if recorded.is_none() {
            let q = CallQuery {
                run_id: Some(live.run_id.clone()),
                limit: Some(10_000),
                ..CallQuery::default()
            };
            *recorded = Some(self.store.calls(&q).await?.calls);
        }
        let found = recorded
            .iter()
            .flatten()
            .find(|r| r.record.call_id == c.call.id);
        let ended = match found {
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
                Some(ErrorKind::Interrupted),
                UNKNOWN_OUTCOME.to_string(),
            ),
        };
        live.pending_updates.extend(c.enter(ended));
        Ok(())
    }

    /// Runs the calls at `ready`: saved as executing first (unless none of them changes
    /// anything), then run, their results and records saved together before the model
    /// sees them.
    async fn run_ready(
        &self,
        live: &mut Live,
        mut turn: Vec<TurnCall>,
        ready: &[usize],
        engine: &Engine,
        tool_rx: &mut UnboundedReceiver<Event>,
        cancel: &Cancel,
    ) -> Result<Vec<TurnCall>, RunError> {
        let mut save = Save::step();
        let mut fenced = false;
        for &i in ready {
            save.set_pending.extend(turn[i].enter(Phase::Executing));
            fenced |= !self.harmless(live, &turn[i]);
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
            self.take_outcome(live, &mut turn[i], outcome).await;
        }
        // The records and the results, committed together before the model sees them.
        live.state.turn = Some(turn);
        self.save(live, Save::step()).await?;
        Ok(live.state.turn.take().unwrap_or_default())
    }

    /// A call's outcome: what the model is told (after the tool's `after_result` hooks,
    /// and a note when a person edited its arguments), its images and its record.
    async fn take_outcome(&self, live: &mut Live, c: &mut TurnCall, outcome: CallOutcome) {
        let mut output = outcome_text(&outcome);
        let mut record = outcome.record;
        if let Ok(out) = &outcome.result {
            c.images = out.images();
            live.state.files.extend(super::files::saved(out, &c.call));
        }
        if outcome.result.is_ok() && !live.toolkit.hooks(&c.call.name, true).is_empty() {
            let ran = self.prepare(live, c).call;
            let after = self.after_result(live, &ran, output).await;
            output = after.shown;
            record.replaced = after.replaced;
            if let Some(failure) = after.failure {
                record.error_kind = Some(ErrorKind::HookFailed);
                record.error_message = Some(failure);
            }
        }
        if let Some(args) = &c.edited {
            let shown = match live.schemas.get(&c.call.name) {
                Some(schema) => toolgate_tool::secrets::mask_args(schema, args),
                None => args.clone(),
            };
            output = format!(
                "(A person edited the arguments before approving; the call ran with {})\n{output}",
                Value::Object(shown)
            );
        }
        live.pending_updates.extend(c.enter(Phase::Done {
            status: outcome.status,
            output,
        }));
        live.records.push(record);
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
            Some(event) = tool_rx.recv() => runner.emit(event.in_run(run_id.to_string())),
            outcomes = &mut batch => {
                while let Ok(event) = tool_rx.try_recv() {
                    runner.emit(event.in_run(run_id.to_string()));
                }
                return Ok(outcomes);
            }
        }
    }
}
