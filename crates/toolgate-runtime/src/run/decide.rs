//! Decisions on a paused run: edited arguments checked by the tool's schema, the items
//! chosen by `decision_rule` and recorded by the store's compare-and-set, each counted
//! in the metrics.

use serde_json::{Map, Value};

use super::decision_rule;
use super::sealing;
use super::state::RunState;
use super::{RunError, Runner};
use toolgate_protocol::{Decision, ItemKind};
use toolgate_store::{Decided, Refusal};

impl Runner {
    /// Records a decision. Edited arguments are validated against the tool's schema
    /// first; invalid ones change nothing.
    pub async fn decide(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
    ) -> Result<Decided, RunError> {
        self.decide_by(run_id, call_id, decision, None).await
    }

    /// [`Runner::decide`], recording who decided (`by`: a person's name, `cli:USER`).
    pub async fn decide_by(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
        by: Option<String>,
    ) -> Result<Decided, RunError> {
        let decider = by.map(|by| toolgate_store::Decider {
            by,
            ..Default::default()
        });
        self.decide_with(run_id, call_id, decision, decider, true)
            .await
    }

    /// [`Runner::decide`], recording who decided as an identity.
    pub async fn decide_as(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
        decider: toolgate_store::Decider,
    ) -> Result<Decided, RunError> {
        self.decide_with(run_id, call_id, decision, Some(decider), true)
            .await
    }

    /// Records a decision that the caller does not follow by continuing the run
    /// (`--no-resume`, `"resume": false`): the run stays paused, for whoever resumes it.
    /// The decisions above are followed by a resume: the last one takes the run's lease
    /// with it, so that the run is taken up by another process should this one die
    /// first.
    pub async fn record_only(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
        decider: toolgate_store::Decider,
    ) -> Result<Decided, RunError> {
        self.decide_with(run_id, call_id, decision, Some(decider), false)
            .await
    }

    async fn decide_with(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
        decider: Option<toolgate_store::Decider>,
        claim: bool,
    ) -> Result<Decided, RunError> {
        let decision = match decision {
            Decision::Edit { arguments } => {
                let Some(call_id) = call_id else {
                    return Err(RunError::BadInput(
                        "edited arguments need the call they are for (--call ID)".into(),
                    ));
                };
                let arguments = self.validate_edit(run_id, call_id, arguments).await?;
                Decision::Edit { arguments }
            }
            other => other,
        };
        let decided = self
            .record_decision(run_id, call_id, decision, decider, claim)
            .await?;
        for (agent, waited_ms) in &decided.waited {
            toolgate_telemetry::metrics::decided(agent, *waited_ms);
        }
        Ok(decided)
    }

    /// Reads the run, chooses the items `decision` applies to (`decision_rule`), and has
    /// the store record it while they are as read; a decision that lost a race to
    /// another is chosen again from what that one left.
    async fn record_decision(
        &self,
        run_id: &str,
        call_id: Option<&str>,
        decision: Decision,
        decider: Option<toolgate_store::Decider>,
        claim: bool,
    ) -> Result<Decided, RunError> {
        loop {
            let (row, pending) = self.store.run(run_id).await?;
            let mut changes = decision_rule::choose(
                &row,
                &pending,
                call_id,
                &decision,
                toolgate_protocol::clock::now_ms(),
            )
            .map_err(|r| RunError::refused(r.kind(), r.message()))?;
            if claim && changes.still_waiting == 0 {
                changes.claim = Some((toolgate_store::lease_owner_name(), super::LEASE_MS));
            }
            if let Some(decided) = self
                .store
                .apply_decision(changes, decision.clone(), decider.clone())
                .await?
            {
                return Ok(decided);
            }
        }
    }

    async fn validate_edit(
        &self,
        run_id: &str,
        call_id: &str,
        arguments: Map<String, Value>,
    ) -> Result<Map<String, Value>, RunError> {
        let id = run_id.to_string();
        let (row, pending) = self.store.run(&id).await?;
        let item = pending
            .iter()
            .find(|p| {
                let qualified = p
                    .item
                    .run_id
                    .as_ref()
                    .map(|r| format!("{r}/{}", p.item.call_id));
                (p.item.call_id == call_id || qualified.as_deref() == Some(call_id))
                    && matches!(p.item.kind, ItemKind::Approval | ItemKind::Budget)
            })
            .ok_or_else(|| {
                RunError::refused(
                    Refusal::DecisionConflict,
                    format!("run {} has no approval item '{call_id}'", row.id),
                )
            })?;
        if item.item.kind == ItemKind::Budget {
            return super::budget::checked_raise(&row, &item.item, arguments, self);
        }
        if let Some(holder) = item.item.run_id.clone() {
            // A sub-agent's item: its own run's tools check the arguments.
            let plain = item.item.call_id.clone();
            return Box::pin(self.validate_edit(&holder, &plain, arguments)).await;
        }
        let state: RunState =
            self.opened(&row.state, &format!("run {}: its saved state", row.id))?;
        let (_, toolkit) = self.agent_of(&state)?;
        let tool = toolkit
            .resolve(&item.item.tool)
            .map_err(|e| RunError::UnknownTool(e.to_string()))?;
        let schema = &tool.spec.parameters;
        // Secret values were shown as [secret]; left so, they keep what the model wrote.
        let mut arguments = Value::Object(arguments);
        if let Some(original) = state.turn.iter().flatten().find(|c| c.call.id == call_id) {
            toolgate_tool::secrets::restore_masked(
                schema,
                &mut arguments,
                &Value::Object(original.call.arguments.clone()),
            );
        }
        let Value::Object(arguments) = arguments else {
            return Err(RunError::BadInput(
                "edited arguments must be an object".into(),
            ));
        };
        let checked = tool.check(arguments).map_err(|e| {
            RunError::InvalidArguments(format!("the edited arguments were refused: {e}"))
        })?;
        // Stored with the decision: sealed like everything else.
        let mut secrets = Vec::new();
        toolgate_tool::secrets::secret_values(schema, &checked, &mut secrets);
        sealing::sealed_arguments(&self.keyring, &checked, &secrets)
    }
}
