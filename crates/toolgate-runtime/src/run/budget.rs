//! Budgets at the loop's top: every model request's usage priced and kept for the next
//! save; before the next request, each budget of the run (its agent's, its key's, its
//! tenant's) summed over its run, conversation or period and, at its limit, the run
//! paused on a `budget` item, failed, or only warned about. A `budget` item an approver
//! decided is taken here: approved raises the limit for this run (by the budget's own
//! amount, or to the `limit` an edit gave), denied fails the run.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::ending::End;
use super::save::Save;
use super::{Live, RunError, Runner};
use toolgate_protocol::budget::{Limit, NANOS_PER_USD, OnLimit, OwnedBudget, Per, Whose, usd};
use toolgate_protocol::{Decision, ItemKind, RequiredItem, RunStatus, Usage, events};
use toolgate_store::{ModelRequestRow, PendingState, SpendFilter};

/// The name `budget` items carry in their `tool` field.
pub const BUDGET_ITEM: &str = "budget";

/// What a run keeps of its budgets between drives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetState {
    /// Limits an approver raised for this run, by [`OwnedBudget::key`].
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub raised: std::collections::BTreeMap<String, u64>,
    /// The `budget` item the run waits on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
    /// Warn-only budgets already reported in this run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warned: Vec<String>,
    /// Pauses so far (each item's id is new).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pauses: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl BudgetState {
    pub fn is_empty(&self) -> bool {
        *self == BudgetState::default()
    }
}

/// A pause on a budget: the item and the budget it is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    pub call_id: String,
    pub budget: OwnedBudget,
    /// The limit in force when the run paused.
    pub limit: u64,
}

impl Runner {
    /// Takes one model request's usage: added to the run's, priced, counted in the
    /// metrics, and kept to be recorded with the next save.
    pub(super) fn spent(&self, live: &mut Live, usage: Usage) {
        live.state.usage.add(usage);
        if usage.model_calls == 0 && usage.total_tokens == 0 {
            return;
        }
        let model = live.state.model.clone();
        let cost = self.prices.cost(&model, &usage).unwrap_or_else(|| {
            tracing::debug!(model = %model, "the price table has no price for this model; its cost is counted as 0");
            0
        });
        live.state.cost_nanos += cost;
        let owner = live.state.owner.as_ref();
        toolgate_telemetry::metrics::spent(
            &live.agent.name,
            super::paths::tenant_of(owner),
            owner.and_then(|o| o.user.as_deref()),
            usage.total_tokens,
            cost,
        );
        live.requests.push(ModelRequestRow {
            run_id: live.run_id.clone(),
            model,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_creation_tokens: usage.cache_creation_tokens,
            total_tokens: usage.total_tokens,
            cost_nanos: cost,
            at: toolgate_protocol::clock::now_ms(),
        });
    }

    /// Before a model request: a decided `budget` item applied, then every budget
    /// checked. `Some`: the run pauses or fails here, and no request starts.
    pub(super) async fn budget_gate(&self, live: &mut Live) -> Result<Option<End>, RunError> {
        if let Some(end) = self.take_budget_decision(live).await? {
            return Ok(Some(end));
        }
        for rule in budgets_of(live) {
            let key = rule.key();
            let limit = live
                .state
                .budget
                .raised
                .get(&key)
                .copied()
                .unwrap_or(rule.budget.limit.amount());
            let spent = self.spent_under(live, &rule).await?;
            if spent < limit {
                continue;
            }
            let warned = live.state.budget.warned.contains(&key);
            if !(rule.budget.on_limit == OnLimit::Warn && warned) {
                toolgate_telemetry::metrics::budget_reached(rule.budget.on_limit.as_str());
            }
            match rule.budget.on_limit {
                OnLimit::Warn => {
                    if !warned {
                        tracing::warn!(budget = %key, spent, limit, "a budget was reached; it only warns, the run goes on");
                        self.emit(reached(live, &rule, limit, spent, None));
                        live.state.budget.warned.push(key);
                    }
                }
                OnLimit::Fail => {
                    let message = format!("{}; the run stops here", sentence(&rule, limit, spent));
                    self.emit(reached(live, &rule, limit, spent, None));
                    self.save(live, Save::end(RunStatus::Failed, Some(message.clone())))
                        .await?;
                    return Ok(Some(End::Failed(message)));
                }
                OnLimit::Pause => return self.pause_on(live, rule, limit, spent).await.map(Some),
            }
        }
        Ok(None)
    }

    /// Pauses the run on a `budget` item for `rule`.
    async fn pause_on(
        &self,
        live: &mut Live,
        rule: OwnedBudget,
        limit: u64,
        spent: u64,
    ) -> Result<End, RunError> {
        live.state.budget.pauses += 1;
        let call_id = format!(
            "budget_{}_{}",
            live.state.iteration, live.state.budget.pauses
        );
        let item = RequiredItem {
            call_id: call_id.clone(),
            kind: ItemKind::Budget,
            tool: BUDGET_ITEM.into(),
            arguments: json!({
                "whose": rule.whose.to_string(),
                "per": rule.budget.per.as_str(),
                "unit": rule.budget.limit.unit(),
                "limit": amount_value(rule.budget.limit, limit),
                "spent": amount_value(rule.budget.limit, spent),
            }),
            run_id: None,
            path: Vec::new(),
            reason: Some(format!(
                "{}; approve to raise it for this run",
                sentence(&rule, limit, spent)
            )),
            expires_at: None,
            on_timeout: None,
            policy: None,
        };
        self.emit(reached(live, &rule, limit, spent, Some(call_id.clone())));
        live.state.budget.hold = Some(Hold {
            call_id,
            budget: rule,
            limit,
        });
        live.pending_new.push(item.clone());
        self.save(live, Save::end(RunStatus::RequiresAction, None))
            .await?;
        Ok(End::Paused(vec![item]))
    }

    /// Applies the decision on the `budget` item the run waited on, if any: approved
    /// raises the limit for this run, denied fails it.
    async fn take_budget_decision(&self, live: &mut Live) -> Result<Option<End>, RunError> {
        let Some(hold) = live.state.budget.hold.clone() else {
            return Ok(None);
        };
        let Some(decision) = live.decisions.remove(&hold.call_id) else {
            return Ok(None);
        };
        live.state.budget.hold = None;
        live.pending_updates
            .push((hold.call_id.clone(), PendingState::Done));
        let limit = hold.budget.budget.limit;
        let raised = match decision {
            Decision::Deny { reason } => {
                let message = format!(
                    "{}: an approver refused to raise it{}",
                    sentence(&hold.budget, hold.limit, hold.limit),
                    reason.map(|r| format!(" ({r})")).unwrap_or_default()
                );
                self.save(live, Save::end(RunStatus::Failed, Some(message.clone())))
                    .await?;
                return Ok(Some(End::Failed(message)));
            }
            Decision::Edit { arguments } => {
                raised_limit(limit, &Value::Object(arguments)).map_err(RunError::BadInput)?
            }
            _ => hold.limit.saturating_add(limit.amount()),
        };
        tracing::info!(budget = %hold.budget.key(), from = hold.limit, to = raised, "a budget was raised for this run");
        live.state.budget.raised.insert(hold.budget.key(), raised);
        Ok(None)
    }

    /// What was spent under `rule` so far, in its unit: this run's own, or the store's
    /// sum over the conversation or the period with this run's requests not saved yet.
    async fn spent_under(&self, live: &Live, rule: &OwnedBudget) -> Result<u64, RunError> {
        let tokens = matches!(rule.budget.limit, Limit::Tokens(_));
        if rule.budget.per == Per::Run {
            return Ok(if tokens {
                live.state.usage.total_tokens
            } else {
                live.state.cost_nanos
            });
        }
        let tenant = super::paths::tenant_of(live.state.owner.as_ref()).to_string();
        let mut filter = SpendFilter {
            tenant: Some(tenant),
            since: rule
                .budget
                .per
                .period_start(toolgate_protocol::clock::now_ms()),
            ..SpendFilter::default()
        };
        match (&rule.budget.per, &rule.whose) {
            (Per::Conversation, _) => filter.conversation = Some(live.conversation_id.clone()),
            (_, Whose::Agent(a)) => filter.agent = Some(a.clone()),
            (_, Whose::Key(k)) => filter.started_by = Some(k.clone()),
            (_, Whose::Tenant(t)) => filter.tenant = Some(t.clone()),
        }
        let stored = self.store.spend(&filter).await?;
        let unsaved = live
            .requests
            .iter()
            .fold((0, 0), |(t, c), r| (t + r.total_tokens, c + r.cost_nanos));
        Ok(if tokens {
            stored.total_tokens + unsaved.0
        } else {
            stored.cost_nanos + unsaved.1
        })
    }
}

/// The budgets a run answers to: its agent's, then its owner's (key and tenant).
fn budgets_of(live: &Live) -> Vec<OwnedBudget> {
    let agent = live.agent.budgets.iter().map(|b| OwnedBudget {
        whose: Whose::Agent(live.agent.name.clone()),
        budget: *b,
    });
    let owner = live
        .state
        .owner
        .iter()
        .flat_map(|o| o.budgets.iter().cloned());
    agent.chain(owner).collect()
}

/// `agent helper: 170 of 150 tokens per run spent`.
fn sentence(rule: &OwnedBudget, limit: u64, spent: u64) -> String {
    let shown = |n: u64| rule.budget.limit.with_amount(n).shown();
    format!(
        "the budget of {} reached: {} of {} {} per {} spent",
        rule.whose,
        shown(spent),
        shown(limit),
        rule.budget.limit.unit(),
        rule.budget.per.as_str()
    )
}

/// The `budget.reached` event.
fn reached(
    live: &Live,
    rule: &OwnedBudget,
    limit: u64,
    spent: u64,
    call_id: Option<String>,
) -> events::BudgetReached {
    let shown = |n: u64| rule.budget.limit.with_amount(n).shown();
    events::BudgetReached {
        run_id: live.run_id.clone(),
        whose: rule.whose.to_string(),
        per: rule.budget.per.as_str().into(),
        unit: rule.budget.limit.unit().into(),
        limit: shown(limit),
        spent: shown(spent),
        on_limit: rule.budget.on_limit.as_str().into(),
        call_id,
    }
}

/// An amount as the item shows it: tokens as a whole number, dollars as a decimal.
fn amount_value(unit: Limit, n: u64) -> Value {
    match unit {
        Limit::Tokens(_) => json!(n),
        Limit::Usd(_) => usd(n).parse::<f64>().map_or(Value::Null, |d| json!(d)),
    }
}

/// The limit an edit of a `budget` item gives: `{"limit": N}` in the budget's unit
/// (tokens, or dollars), more than zero.
pub(crate) fn raised_limit(unit: Limit, arguments: &Value) -> Result<u64, String> {
    let n = arguments
        .get("limit")
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite() && *n > 0.0)
        .ok_or_else(|| {
            format!(
                "a budget is raised with {{\"limit\": N}}, N more than zero, in {}",
                unit.unit()
            )
        })?;
    Ok(match unit {
        Limit::Tokens(_) => n.round() as u64,
        Limit::Usd(_) => (n * NANOS_PER_USD as f64).round() as u64,
    })
}

/// Edited arguments of a `budget` item, checked before they are recorded: `{"limit":
/// N}` in the unit of the budget the run waits on.
pub(super) fn checked_raise(
    row: &toolgate_store::RunRow,
    item: &RequiredItem,
    arguments: serde_json::Map<String, Value>,
    runner: &Runner,
) -> Result<serde_json::Map<String, Value>, RunError> {
    let state: super::state::RunState =
        runner.opened(&row.state, &format!("run {}: its saved state", row.id))?;
    let hold = state
        .budget
        .hold
        .filter(|h| h.call_id == item.call_id)
        .ok_or_else(|| {
            RunError::BadInput(format!("run {} does not wait on {}", row.id, item.call_id))
        })?;
    let arguments = Value::Object(arguments);
    raised_limit(hold.budget.budget.limit, &arguments).map_err(RunError::InvalidArguments)?;
    match arguments {
        Value::Object(map) => Ok(map),
        _ => Err(RunError::BadInput(
            "edited arguments must be an object".into(),
        )),
    }
}
