//! A CONFIRM call from an MCP client: asked through elicitation when the client can,
//! otherwise held as the run's waiting item until someone decides it (`toolgate
//! approve`/`deny`, the HTTP API, from any process) or the approval timeout denies it.
//! The decision is the store's, so it outlives this process.

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, RequestContext};

use super::Gateway;
use crate::protocol::{Decision, RequiredItem, RunObject, RunStatus};

/// How often a held call looks at the store.
const POLL: Duration = Duration::from_millis(200);

/// How a held call ended.
pub(super) enum Held {
    /// The run ended (the call ran, or was denied): its result is the run's.
    Ended(Box<RunObject>),
    /// Nobody decided in time, or the wait stopped: what the client is told.
    NotDecided(String),
}

/// Waits for the decision on `run`'s waiting call and returns the run once it ended.
/// Who the client's user is when it answers an elicitation.
pub(super) enum Asker {
    /// No identity (stdio): the client's user decides, as before identities.
    Anyone,
    /// The caller, allowed by its role and the agent's rule: recorded as the decider.
    Identity(crate::store::Decider),
    /// The caller may not decide (a client key, the agent's approvers, four eyes): the
    /// call is held for someone who may.
    Nobody,
}

pub(super) async fn settle(
    gateway: &Gateway,
    run: &RunObject,
    ctx: &RequestContext<RoleServer>,
    asker: Asker,
) -> Held {
    let started = Instant::now();
    let Some(item) = run
        .required_action
        .as_ref()
        .and_then(|a| a.items.first())
        .cloned()
    else {
        return wait(gateway, run, None, started, ctx).await;
    };
    let elicits = ctx
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form);
    let decider = match asker {
        Asker::Anyone => None,
        Asker::Identity(d) => Some(d),
        // The caller may not decide this call: it waits for one who may.
        Asker::Nobody => return wait(gateway, run, Some(&item), started, ctx).await,
    };
    if elicits && let Some(decision) = ask(gateway, run, &item, ctx).await {
        let decided = match decider {
            Some(d) => {
                gateway
                    .runner
                    .decide_as(&run.id, Some(&item.call_id), decision, d)
                    .await
            }
            None => {
                gateway
                    .runner
                    .decide(&run.id, Some(&item.call_id), decision)
                    .await
            }
        };
        match decided {
            Ok(_) => {
                if let Ok(ended) = gateway.runner.resume(&run.id).await {
                    return Held::Ended(Box::new(ended));
                }
            }
            // Decided elsewhere meanwhile: that decision stands.
            Err(e) => {
                tracing::info!(run_id = %run.id, error = %e, "the client's answer came second")
            }
        }
    }
    wait(gateway, run, Some(&item), started, ctx).await
}

/// Asks the client's user to approve the call. `None` when the client could not ask
/// (an error, or no answer in time): the call is then held in the store.
async fn ask(
    gateway: &Gateway,
    run: &RunObject,
    item: &RequiredItem,
    ctx: &RequestContext<RoleServer>,
) -> Option<Decision> {
    let message = format!(
        "Approve this call?\n\ntool: {}\ncall: {} (run {})\narguments: {}\n\nAccept runs it; decline or cancel denies it.",
        item.tool, item.call_id, run.id, item.arguments
    );
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: ElicitationSchema::new(Default::default()),
    };
    let answer = tokio::select! {
        a = ctx.peer.create_elicitation_with_timeout(params, Some(gateway.approval_timeout)) => a,
        _ = ctx.ct.cancelled() => return None,
    };
    match answer {
        Ok(r) => Some(match r.action {
            ElicitationAction::Accept => Decision::Approve,
            ElicitationAction::Decline => Decision::Deny {
                reason: Some("declined in the MCP client".into()),
            },
            ElicitationAction::Cancel => Decision::Deny {
                reason: Some("cancelled in the MCP client".into()),
            },
            // An answer this version does not know is no approval.
            _ => Decision::Deny {
                reason: Some("not approved in the MCP client".into()),
            },
        }),
        Err(e) => {
            tracing::warn!(run_id = %run.id, error = %e, "elicitation failed; the call is held for a decision");
            None
        }
    }
}

/// Polls the store until the run ends. A decision recorded without continuing the run
/// (`--no-resume`) is carried on here; at the timeout the call is denied.
async fn wait(
    gateway: &Gateway,
    run: &RunObject,
    item: Option<&RequiredItem>,
    started: Instant,
    ctx: &RequestContext<RoleServer>,
) -> Held {
    let timeout = gateway.approval_timeout;
    let mut denied_at: Option<Instant> = None;
    let mut denied_here = false;
    let mut decided_seen = 0u32;
    tracing::info!(run_id = %run.id, "call held for a decision: toolgate approve {} (or deny)", run.id);
    loop {
        let current = match gateway.runner.get(&run.id).await {
            Ok(r) => r,
            Err(e) => return Held::NotDecided(format!("cannot read run {}: {e}", run.id)),
        };
        match current.status {
            RunStatus::RequiresAction => {
                let waiting = current
                    .required_action
                    .as_ref()
                    .is_some_and(|a| !a.items.is_empty());
                decided_seen = if waiting { 0 } else { decided_seen + 1 };
                // Decided but nobody continues it (give the decider a moment first).
                if decided_seen >= 3
                    && let Ok(ended) = gateway.runner.resume(&run.id).await
                    && ended.status != RunStatus::RequiresAction
                {
                    return Held::Ended(Box::new(ended));
                }
            }
            RunStatus::InProgress => {}
            _ => {
                return match denied_here {
                    true => Held::NotDecided(format!(
                        "'{}' was not approved in time ({}s); the call was not run (run {})",
                        item.map_or("the tool", |i| i.tool.as_str()),
                        timeout.as_secs(),
                        run.id
                    )),
                    false => Held::Ended(Box::new(current)),
                };
            }
        }
        let now = Instant::now();
        match denied_at {
            None if now.duration_since(started) >= timeout => {
                denied_at = Some(now);
                if let Some(item) = item {
                    let reason = format!("not approved within {}s", timeout.as_secs());
                    match gateway
                        .runner
                        .decide(
                            &run.id,
                            Some(&item.call_id),
                            Decision::Deny {
                                reason: Some(reason),
                            },
                        )
                        .await
                    {
                        Ok(_) => {
                            denied_here = true;
                            let _ = gateway.runner.resume(&run.id).await;
                        }
                        Err(e) => {
                            tracing::info!(run_id = %run.id, error = %e, "decided at the timeout by someone else")
                        }
                    }
                }
                continue;
            }
            Some(at) if now.duration_since(at) >= timeout => {
                return Held::NotDecided(format!(
                    "run {} did not finish in time after its decision; see toolgate show {}",
                    run.id, run.id
                ));
            }
            _ => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = ctx.ct.cancelled() => {
                return Held::NotDecided(format!(
                    "the client cancelled the request; the call stays held as run {} (toolgate approve or deny it)",
                    run.id
                ));
            }
        }
    }
}
