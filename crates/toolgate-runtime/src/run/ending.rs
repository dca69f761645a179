//! How a drive ends: the loop's outcome (completed, paused, incomplete, failed, or
//! given back at a shutdown), the run event it sends, and the error paths (a lost
//! lease that was a cancel; an error that leaves the run failed and resumable). Also
//! the engine a drive runs its calls on.

use tokio::sync::mpsc::UnboundedSender;

use super::save::Save;
use super::{Live, RunError, Runner};
use crate::engine::{Engine, EngineConfig};
use toolgate_protocol::{Event, RequiredItem, RunEvent, RunObject, RunStatus, events};
use toolgate_store::Refusal;
use toolgate_tool::DEFAULT_TIMEOUT;

/// How a drive ended.
pub(super) enum End {
    Completed,
    Paused(Vec<RequiredItem>),
    Incomplete(String),
    Failed(String),
    /// Given back at a shutdown, still in progress, for another process to take up.
    HandedBack,
}

impl Runner {
    /// The engine a drive runs its calls on: the process's limits (and the agent's
    /// share of them when its file sets some), the run's workspace, credentials and
    /// context; its events go to `tool_tx`.
    pub(super) fn engine_for(&self, live: &Live, tool_tx: UnboundedSender<Event>) -> Engine {
        // The process's limits, and the agent's share of them when its file sets some.
        let share = live
            .agent
            .limits
            .as_ref()
            .map(|l| self.limits.share(&live.agent.name, l));
        Engine::shared(
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
                context: std::sync::Arc::new(toolgate_tool::RunContext {
                    tenant: Some(live.state.owner.as_ref().map_or_else(
                        || toolgate_protocol::identity::DEFAULT_TENANT.to_string(),
                        |o| o.tenant.clone(),
                    )),
                    user: live.state.owner.as_ref().and_then(|o| o.user.clone()),
                    run_id: Some(live.run_id.clone()),
                    conversation_id: Some(live.conversation_id.clone()),
                }),
                oauth: Some(std::sync::Arc::new(
                    self.oauth_broker(live.state.owner.as_ref().map(|o| o.tenant.clone())),
                )),
                cache: Some(std::sync::Arc::new(crate::engine::StoreCache(
                    self.store.clone(),
                ))),
            },
            std::sync::Arc::clone(&self.limits),
            share,
            Some(tool_tx),
        )
    }

    /// The run object once the loop stopped, with its end told as a run event (a
    /// hand-back tells nothing: the run goes on elsewhere).
    pub(super) async fn finish(
        &self,
        mut live: Live,
        result: Result<End, RunError>,
    ) -> Result<RunObject, RunError> {
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
                    self.emit(events::RunCancelled { run_id });
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
                self.emit(events::RunFailed {
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
            End::Completed => Some(RunEvent::RunCompleted(events::RunCompleted {
                run_id: run_id.clone(),
            })),
            End::Paused(items) => Some(RunEvent::RunRequiresAction(events::RunRequiresAction {
                run_id: run_id.clone(),
                items,
            })),
            End::Incomplete(reason) => Some(RunEvent::RunIncomplete(events::RunIncomplete {
                run_id: run_id.clone(),
                reason,
            })),
            End::Failed(error) => Some(RunEvent::RunFailed(events::RunFailed {
                run_id: run_id.clone(),
                error,
            })),
            // Nothing ended: the run goes on in the process that takes it up.
            End::HandedBack => None,
        };
        if let Some(event) = event {
            self.emit(event);
        }
        let (row, pending) = self.store.run_just_saved(&run_id).await?;
        Ok(super::run_object(&row, &pending))
    }
}
