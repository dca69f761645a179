//! Which items of a paused run a decision applies to, and the "approve always" fan-out:
//! a pure function of the run, its pending rows and the request, giving the row changes
//! the store makes (compare-and-set), or why the decision does not fit, with its
//! wording for people.

use toolgate_protocol::{Decision, ItemKind, RunStatus};
use toolgate_store::{DecisionChanges, PendingRow, PendingState, Refusal, RunRow};

/// Why a decision does not fit the run as it was read.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// The run is not paused for a decision.
    NotPaused { run: String, status: RunStatus },
    /// The call id names items in more than one run of the tree.
    Ambiguous { call: String, forms: Vec<String> },
    /// No item has this call id; the ids still waiting.
    NoSuchCall {
        run: String,
        call: String,
        waiting: Vec<String>,
    },
    /// The item was decided (or acted on) already.
    AlreadyDecided {
        run: String,
        call: String,
        state: PendingState,
    },
    /// An approval answered with an output, or a client call with an approval.
    WrongKind {
        call: String,
        tool: String,
        kind: ItemKind,
    },
    /// The named item's approval deadline has passed.
    Expired {
        run: String,
        call: String,
        tool: String,
        ago_s: i64,
        on_timeout: &'static str,
    },
    /// Every waiting approval's deadline has passed.
    AllExpired { run: String },
    /// Nothing of the kind the decision answers is waiting.
    NoneWaiting { run: String, kind: ItemKind },
}

impl Refused {
    /// The kind, for code: an expired approval, or a decision that does not fit.
    pub fn kind(&self) -> Refusal {
        match self {
            Refused::Expired { .. } | Refused::AllExpired { .. } => Refusal::Expired,
            _ => Refusal::DecisionConflict,
        }
    }

    /// What a person reads: what is wrong, and what to do instead.
    pub fn message(&self) -> String {
        match self {
            Refused::NotPaused { run, status } => {
                format!(
                    "run {run} is {}, not waiting for a decision",
                    status.as_str()
                )
            }
            Refused::Ambiguous { call, forms } => format!(
                "call id '{call}' is waiting in more than one run of this tree; name one: {}",
                forms.join(", ")
            ),
            Refused::NoSuchCall { run, call, waiting } => format!(
                "run {run} has no pending call '{call}'; waiting: {}",
                if waiting.is_empty() {
                    "none".to_string()
                } else {
                    waiting.join(", ")
                }
            ),
            Refused::AlreadyDecided { run, call, state } => format!(
                "call {call} of run {run} is already decided ({})",
                state.as_str()
            ),
            Refused::WrongKind { call, tool, kind } => {
                let hint = match kind {
                    ItemKind::SubmitToolOutput => "it is a client tool: use toolgate submit",
                    ItemKind::Approval => "it needs a decision: use toolgate approve or deny",
                    ItemKind::Budget => {
                        "it is a spend limit: use toolgate approve (optionally --args '{\"limit\": N}') or deny"
                    }
                    ItemKind::Authorization => {
                        "it waits for the user's consent: open its consent_url (the OAuth callback resolves it)"
                    }
                };
                format!("call {call} ({tool}) is a {} item; {hint}", kind.as_str())
            }
            Refused::Expired {
                run,
                call,
                tool,
                ago_s,
                on_timeout,
            } => format!(
                "call {call} ({tool}) of run {run} expired {ago_s}s ago: its approval deadline passed, so it can no longer be approved (on_timeout: {on_timeout})"
            ),
            Refused::AllExpired { run } => format!(
                "every waiting approval of run {run} has expired; they can no longer be approved"
            ),
            Refused::NoneWaiting { run, kind } => {
                format!("run {run} has no waiting {} items", kind.as_str())
            }
        }
    }
}

/// The items of `run` (its own and, paused on sub-agents, theirs: `pending`) that
/// `decision` applies to at `now`: the one named `call_id` (its id, or `RUN/CALL`), or
/// every waiting item of the decision's kind. "Approve always" also approves the other
/// waiting calls of the same tool in the same run, and stands for that tool.
pub fn choose(
    run: &RunRow,
    pending: &[PendingRow],
    call_id: Option<&str>,
    decision: &Decision,
    now: i64,
) -> Result<DecisionChanges, Refused> {
    if run.status != RunStatus::RequiresAction {
        return Err(Refused::NotPaused {
            run: run.id.clone(),
            status: run.status,
        });
    }
    let waiting: Vec<&PendingRow> = pending
        .iter()
        .filter(|p| p.state == PendingState::Waiting)
        .collect();
    let wants = match decision {
        Decision::Submit { .. } => ItemKind::SubmitToolOutput,
        _ => ItemKind::Approval,
    };
    let mut chosen: Vec<&PendingRow> = match call_id {
        Some(c) => vec![named_item(run, pending, &waiting, c, wants)?],
        None => waiting
            .iter()
            .copied()
            .filter(|p| answers(wants, p.item.kind))
            .collect(),
    };
    let approving = !matches!(decision, Decision::Deny { .. } | Decision::Submit { .. });
    if approving {
        drop_expired(run, call_id.is_some(), &mut chosen, now)?;
    }
    if chosen.is_empty() {
        return Err(Refused::NoneWaiting {
            run: run.id.clone(),
            kind: wants,
        });
    }
    let mut standing = Vec::new();
    if *decision == Decision::ApproveAlways {
        standing = approve_always(run, &waiting, &mut chosen, now);
    }
    Ok(DecisionChanges {
        run_id: run.id.clone(),
        items: chosen
            .iter()
            .map(|p| (holder(run, p), p.item.call_id.clone()))
            .collect(),
        standing,
        still_waiting: waiting.len() - chosen.len(),
        claim: None,
    })
}

/// Whether a decision of the kind `wants` answers an item of `kind`: approve, edit and
/// deny answer approvals and spend limits alike (raising a limit is approving it).
fn answers(wants: ItemKind, kind: ItemKind) -> bool {
    kind == wants
        || (wants == ItemKind::Approval
            && matches!(kind, ItemKind::Budget | ItemKind::Authorization))
}

/// The run that holds an item: a sub-agent's run, or `run` itself.
fn holder(run: &RunRow, p: &PendingRow) -> String {
    p.item.run_id.clone().unwrap_or_else(|| run.id.clone())
}

/// An item's id in the `RUN/CALL` form.
fn qualified(run: &RunRow, p: &PendingRow) -> String {
    format!("{}/{}", holder(run, p), p.item.call_id)
}

/// Whether an item's deadline has passed at `now`.
fn expired(p: &PendingRow, now: i64) -> bool {
    p.item.expires_at.is_some_and(|at| at <= now)
}

/// The one item `c` names (its id, or `RUN/CALL`): there, unique, still waiting and of
/// the kind the decision wants.
fn named_item<'a>(
    run: &RunRow,
    pending: &'a [PendingRow],
    waiting: &[&PendingRow],
    c: &str,
    wants: ItemKind,
) -> Result<&'a PendingRow, Refused> {
    let named: Vec<&PendingRow> = pending
        .iter()
        .filter(|p| p.item.call_id == c || qualified(run, p) == c)
        .collect();
    if named.len() > 1 {
        return Err(Refused::Ambiguous {
            call: c.to_string(),
            forms: named.iter().map(|p| qualified(run, p)).collect(),
        });
    }
    let Some(p) = named.first().copied() else {
        return Err(Refused::NoSuchCall {
            run: run.id.clone(),
            call: c.to_string(),
            waiting: waiting
                .iter()
                .map(|p| match p.item.run_id {
                    Some(_) => qualified(run, p),
                    None => p.item.call_id.clone(),
                })
                .collect(),
        });
    };
    if p.state != PendingState::Waiting {
        return Err(Refused::AlreadyDecided {
            run: run.id.clone(),
            call: c.to_string(),
            state: p.state,
        });
    }
    if !answers(wants, p.item.kind) {
        return Err(Refused::WrongKind {
            call: c.to_string(),
            tool: p.item.tool.clone(),
            kind: p.item.kind,
        });
    }
    Ok(p)
}

/// Keeps the approvals still in time: a named expired item is refused, and so is a
/// decision on every waiting item when all of them expired.
fn drop_expired(
    run: &RunRow,
    named: bool,
    chosen: &mut Vec<&PendingRow>,
    now: i64,
) -> Result<(), Refused> {
    if named && let Some(p) = chosen.iter().find(|p| expired(p, now)) {
        return Err(Refused::Expired {
            run: run.id.clone(),
            call: p.item.call_id.clone(),
            tool: p.item.tool.clone(),
            ago_s: (now - p.item.expires_at.unwrap_or(now)).max(0) / 1000,
            on_timeout: p.item.on_timeout.unwrap_or_default().as_str(),
        });
    }
    // Approving every waiting call approves those still in time.
    let before = chosen.len();
    chosen.retain(|p| !expired(p, now));
    if chosen.is_empty() && before > 0 {
        return Err(Refused::AllExpired {
            run: run.id.clone(),
        });
    }
    Ok(())
}

/// "Approve always": the standing approvals (holder, tool, policy) of the chosen
/// items, and the other waiting calls of the same tools in the same runs added to
/// `chosen`.
fn approve_always<'a>(
    run: &RunRow,
    waiting: &[&'a PendingRow],
    chosen: &mut Vec<&'a PendingRow>,
    now: i64,
) -> Vec<(String, String, String)> {
    let standing = chosen
        .iter()
        .map(|p| {
            let policy = p.item.policy.clone().unwrap_or_default();
            (holder(run, p), p.item.tool.clone(), policy)
        })
        .collect::<Vec<_>>();
    for p in waiting {
        if p.item.kind == ItemKind::Approval
            && !expired(p, now)
            && standing
                .iter()
                .any(|(h, t, _)| (h, t) == (&holder(run, p), &p.item.tool))
            && !chosen
                .iter()
                .any(|c| qualified(run, c) == qualified(run, p))
        {
            chosen.push(p);
        }
    }
    standing
}

#[cfg(test)]
#[path = "decision_rule_tests.rs"]
mod tests;
