//! One limiter per process, and each agent's share inside it. Every run a process
//! drives (the server's, the MCP gateway's, the CLI's, sub-agents' included) takes its
//! call slots here: first from its agent's share (the agent file's `limits:`, shared
//! by every run of that agent), then from the process limiter. A call a person
//! approved waits for both, never refused; a refused call names the limiter that
//! refused it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::limits::{Admission, LimitConfig, LimitError, Limiter, Metrics, Permit};

/// The process limiter and the agents' shares.
pub struct ProcessLimits {
    process: Arc<Limiter>,
    shares: Mutex<BTreeMap<String, Arc<Limiter>>>,
}

/// The slots one call holds; dropping it frees them (the share's last).
pub struct Slot {
    _process: Permit,
    _share: Option<Permit>,
}

/// A limiter as `GET /v1/limits` shows it: its settings and its figures now.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LimiterView {
    pub config: LimitConfig,
    pub metrics: Metrics,
}

/// The process limiter and every agent share made so far.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LimitsView {
    /// Every call of the process passes it.
    pub process: LimiterView,
    /// Agent name -> its share (agents whose file sets `limits:`).
    pub agents: BTreeMap<String, LimiterView>,
}

impl ProcessLimits {
    pub fn new(config: LimitConfig) -> Arc<Self> {
        Arc::new(Self {
            process: Limiter::new(config),
            shares: Mutex::new(BTreeMap::new()),
        })
    }

    /// The process limiter.
    pub fn process(&self) -> &Arc<Limiter> {
        &self.process
    }

    /// The share of `agent` under `config`: the one every run of that agent uses, made
    /// on first use and made again when the agent file's limits change (calls holding
    /// slots of the old one give them back there).
    pub fn share(&self, agent: &str, config: &LimitConfig) -> Arc<Limiter> {
        let mut shares = self.shares.lock().unwrap_or_else(|p| p.into_inner());
        match shares.get(agent) {
            Some(l) if l.config() == config => Arc::clone(l),
            _ => {
                let l = Limiter::new(config.clone());
                shares.insert(agent.to_string(), Arc::clone(&l));
                l
            }
        }
    }

    /// Waits for a slot in `share` (when given), then in the process limiter.
    pub async fn acquire(
        &self,
        share: Option<&Arc<Limiter>>,
        category: Option<&str>,
        priority: i32,
        admission: Admission,
    ) -> Result<Slot, LimitError> {
        let share = match share {
            Some(l) => Some(l.acquire(category, priority, admission).await?),
            None => None,
        };
        let process = self
            .process
            .acquire(category, priority, admission)
            .await
            .map_err(|LimitError::Rejected(why)| match share {
                // Past its agent's share, refused by the limits of the whole process.
                Some(_) => {
                    LimitError::Rejected(format!("{why} (in this process, all agents together)"))
                }
                None => LimitError::Rejected(why),
            })?;
        Ok(Slot {
            _process: process,
            _share: share,
        })
    }

    /// Notes a finished call in both limiters' figures.
    pub fn record_finished(
        &self,
        share: Option<&Arc<Limiter>>,
        category: Option<&str>,
        execution: Duration,
        timed_out: bool,
    ) {
        self.process.record_finished(category, execution, timed_out);
        if let Some(l) = share {
            l.record_finished(category, execution, timed_out);
        }
    }

    /// Every limiter's settings and figures now.
    pub fn view(&self) -> LimitsView {
        let view = |l: &Limiter| LimiterView {
            config: l.config().clone(),
            metrics: l.metrics(),
        };
        let shares = self.shares.lock().unwrap_or_else(|p| p.into_inner());
        LimitsView {
            process: view(&self.process),
            agents: shares.iter().map(|(k, l)| (k.clone(), view(l))).collect(),
        }
    }
}

/// The priority of a run's calls under the `priority` strategy: what the run was
/// started with (a request's `priority`), else its agent's `priority:`, raised by its
/// depth in a tree of sub-agent runs (a child's calls are what its parent waits for).
///
/// ```
/// use toolgate_runtime::engine::call_priority;
/// assert_eq!(call_priority(None, 0, 0), 0);
/// assert_eq!(call_priority(None, 5, 0), 5);
/// assert_eq!(call_priority(Some(9), 5, 0), 9);
/// assert_eq!(call_priority(Some(1), 5, 2), 3);
/// ```
pub fn call_priority(requested: Option<i32>, agent: i32, depth: u32) -> i32 {
    requested
        .unwrap_or(agent)
        .saturating_add(i32::try_from(depth).unwrap_or(i32::MAX))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::engine::Strategy;

    fn one() -> LimitConfig {
        LimitConfig {
            global: 1,
            ..LimitConfig::default()
        }
    }

    #[tokio::test]
    async fn a_share_is_one_per_agent_and_remade_when_its_limits_change() {
        let p = ProcessLimits::new(LimitConfig::default());
        let a = p.share("a", &one());
        assert!(Arc::ptr_eq(&a, &p.share("a", &one())));
        let two = LimitConfig {
            global: 2,
            ..LimitConfig::default()
        };
        assert!(!Arc::ptr_eq(&a, &p.share("a", &two)));
        assert_eq!(p.view().agents["a"].config.global, 2);
    }

    #[tokio::test]
    async fn the_process_limit_binds_every_share() {
        let p = ProcessLimits::new(LimitConfig {
            global: 1,
            strategy: Strategy::Reject,
            ..LimitConfig::default()
        });
        let (a, b) = (
            p.share("a", &LimitConfig::default()),
            p.share("b", &LimitConfig::default()),
        );
        let held = p
            .acquire(Some(&a), None, 0, Admission::Limited)
            .await
            .unwrap();
        let refused = p.acquire(Some(&b), None, 0, Admission::Limited).await;
        assert!(
            matches!(refused, Err(LimitError::Rejected(why)) if why.contains("in this process"))
        );
        // The refused call gave its share slot back.
        assert_eq!(p.view().agents["b"].metrics.all.current, 0);
        assert_eq!(p.view().process.metrics.all.rejected, 1);
        drop(held);
        assert!(
            p.acquire(Some(&b), None, 0, Admission::Limited)
                .await
                .is_ok()
        );
    }
}
