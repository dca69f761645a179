//! A CONFIRM call from an MCP client: asked through elicitation when the client can,
//! otherwise held as the run's waiting item until someone decides it (`toolgate
//! approve`/`deny`, the HTTP API, from any process) or the hold's time denies it. While
//! it is held the client gets progress notifications (when its request carried a
//! progress token), so clients that extend their timeout on progress keep waiting. A
//! hold ends with its client: `notifications/cancelled` for the request, or the end of
//! its session or connection, ends the wait (the caller then cancels the run).

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequestParams, ElicitationAction, ElicitationSchema, ProgressNotificationParam,
};
use rmcp::service::{ElicitationMode, RequestContext};
use tokio_util::sync::CancellationToken;

use super::Gateway;
use toolgate_protocol::{Decision, RequiredItem, RunObject, RunStatus};

/// How long a decision recorded without continuing the run (`--no-resume`) is left to
/// its decider before the hold continues the run itself.
const DECIDER_GRACE: Duration = Duration::from_millis(500);

/// How often a held call tells its client it is still waiting (progress notifications).
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// How a held call ended.
pub(super) enum Held {
    /// The run ended (the call ran, or was denied): its result is the run's.
    Ended(Box<RunObject>),
    /// Nobody decided in time, or the wait stopped: what the client is told.
    NotDecided(String),
    /// The client gave up: it cancelled the request, or its session or connection
    /// ended. The run is still waiting; the caller cancels it.
    Abandoned(String),
}

/// What a held call waits with: how long, and the signals that end it early.
pub(super) struct Hold<'a> {
    pub gateway: &'a Gateway,
    /// How long the call is held before it is denied.
    pub limit: Duration,
    pub ctx: &'a RequestContext<RoleServer>,
    /// Cancelled when the client's session or connection ends.
    pub ended: &'a CancellationToken,
}

impl Hold<'_> {
    /// Why the client is gone, once it is.
    async fn client_gone(&self) -> String {
        tokio::select! {
            _ = self.ctx.ct.cancelled() => "the MCP client cancelled the request".to_string(),
            _ = self.ended.cancelled() => "the MCP client's session ended".to_string(),
        }
    }
}

/// Who the client's user is when it answers an elicitation.
pub(super) enum Asker {
    /// No identity (stdio): the client's user decides, as before identities.
    Anyone,
    /// The caller, allowed by its role and the agent's rule: recorded as the decider.
    Identity(toolgate_store::Decider),
    /// The caller may not decide (a client key, the agent's approvers, four eyes): the
    /// call is held for someone who may.
    Nobody,
}

/// Waits for the decision on `run`'s waiting call and returns the run once it ended.
pub(super) async fn settle(hold: &Hold<'_>, run: &RunObject, asker: Asker) -> Held {
    let (gateway, ctx) = (hold.gateway, hold.ctx);
    let started = Instant::now();
    let Some(item) = run
        .required_action
        .as_ref()
        .and_then(|a| a.items.first())
        .cloned()
    else {
        return wait(hold, run, None, started).await;
    };
    let elicits = ctx
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form);
    let decider = match asker {
        Asker::Anyone => None,
        Asker::Identity(d) => Some(d),
        // The caller may not decide this call: it waits for one who may.
        Asker::Nobody => return wait(hold, run, Some(&item), started).await,
    };
    if elicits && let Some(decision) = ask(hold, run, &item).await {
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
    wait(hold, run, Some(&item), started).await
}

/// Waits on a run another request of the session holds (a retried identical call):
/// no second question to the client, the same hold.
pub(super) async fn follow(hold: &Hold<'_>, run: &RunObject) -> Held {
    let item = run
        .required_action
        .as_ref()
        .and_then(|a| a.items.first())
        .cloned();
    wait(hold, run, item.as_ref(), Instant::now()).await
}

/// Asks the client's user to approve the call. `None` when the client could not ask
/// (an error, or no answer in time): the call is then held in the store.
async fn ask(hold: &Hold<'_>, run: &RunObject, item: &RequiredItem) -> Option<Decision> {
    let ctx = hold.ctx;
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
        a = ctx.peer.create_elicitation_with_timeout(params, Some(hold.limit)) => a,
        _ = hold.client_gone() => return None,
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

/// Follows the run through the store's change feed until it ends. A decision recorded
/// without continuing the run (`--no-resume`) is carried on here; at the timeout the
/// call is denied.
async fn wait(
    hold: &Hold<'_>,
    run: &RunObject,
    item: Option<&RequiredItem>,
    started: Instant,
) -> Held {
    let gateway = hold.gateway;
    let timeout = hold.limit;
    let progress = hold.ctx.meta.get_progress_token();
    let mut told = Instant::now();
    let mut denied_at: Option<Instant> = None;
    let mut denied_here = false;
    let mut decided_since: Option<Instant> = None;
    // Subscribed before the first read, so that no change falls between the two.
    let mut changes = gateway.runner.store.watch();
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
                let decided = *decided_since.get_or_insert_with(Instant::now);
                if waiting {
                    decided_since = None;
                }
                // Decided but nobody continues it (give the decider a moment first).
                if !waiting
                    && decided.elapsed() >= DECIDER_GRACE
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
                        "'{}' was not approved in time ({}); the call was not run (run {})",
                        item.map_or("the tool", |i| i.tool.as_str()),
                        shown(timeout),
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
                if let Some(item) = item
                    && deny_at_timeout(hold, run, item).await
                {
                    denied_here = true;
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
        if let Some(token) = &progress
            && now.duration_since(told) >= PROGRESS_EVERY
        {
            told = now;
            tell_progress(hold, token, run, now.duration_since(started)).await;
        }
        // Woken by a change of the run, the next progress note, the timeout, or the
        // decider's grace running out.
        let mut next = match denied_at {
            Some(at) => at + timeout,
            None => started + timeout,
        };
        if progress.is_some() {
            next = next.min(told + PROGRESS_EVERY);
        }
        if let Some(at) = decided_since {
            next = next.min(at + DECIDER_GRACE);
        }
        tokio::select! {
            _ = changed(&mut changes, &run.id) => {}
            _ = tokio::time::sleep_until(next.into()) => {}
            why = hold.client_gone() => return Held::Abandoned(why),
        }
    }
}

/// Denies the held call at the timeout, and continues its run; `false` when someone
/// else decided it first.
async fn deny_at_timeout(hold: &Hold<'_>, run: &RunObject, item: &RequiredItem) -> bool {
    let gateway = hold.gateway;
    let reason = format!("not approved within {}", shown(hold.limit));
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
            let _ = gateway.runner.resume(&run.id).await;
            true
        }
        Err(e) => {
            tracing::info!(run_id = %run.id, error = %e, "decided at the timeout by someone else");
            false
        }
    }
}

/// Tells the MCP client how long the call has waited, out of its timeout.
async fn tell_progress(
    hold: &Hold<'_>,
    token: &rmcp::model::ProgressToken,
    run: &RunObject,
    waited: Duration,
) {
    let note = ProgressNotificationParam::new(token.clone(), waited.as_secs_f64())
        .with_total(hold.limit.as_secs_f64())
        .with_message(format!(
            "waiting for approval: toolgate approve {} (or deny it)",
            run.id
        ));
    if let Err(e) = hold.ctx.peer.notify_progress(note).await {
        tracing::debug!(run_id = %run.id, error = %e, "progress not delivered");
    }
}

/// Returns at the next change of run `id`, or when the feed fell behind (the run is
/// read again either way); never, once the feed has closed (the timers go on).
async fn changed(changes: &mut tokio::sync::broadcast::Receiver<toolgate_store::Change>, id: &str) {
    if !toolgate_store::next_change_of(changes, id).await {
        std::future::pending::<()>().await;
    }
}

/// A hold's length as people write it: `4s`, `1500ms`, `5m`.
fn shown(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) && ms >= 60_000 {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}
