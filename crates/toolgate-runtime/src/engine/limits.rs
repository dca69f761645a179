//! Concurrency control for tool calls: a global limit, per-category limits, a bounded
//! queue and what to do when it is full (`fifo`: wait in order; `priority`: higher
//! priority first; `reject`: fail at once). Workflow callers may bypass the limits.
//! Metrics count what ran, waited, was refused or timed out, overall and per category.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

/// What to do with a call that cannot run yet.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "QueueStrategy")]
pub enum Strategy {
    /// Wait in arrival order.
    #[default]
    Fifo,
    /// Wait; higher priority first, arrival order among equals.
    Priority,
    /// Fail at once with a clear error.
    Reject,
}

/// The limits (an agent file's `limits:` reads into this).
#[derive(
    Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct LimitConfig {
    /// Calls running at once, in all.
    #[serde(default = "default_global")]
    pub global: usize,
    /// Calls running at once per category (`http: 5`).
    #[serde(default)]
    pub per_category: HashMap<String, usize>,
    /// Calls that may wait; more are refused (a call a person approved always waits).
    #[serde(default = "default_queue")]
    pub queue: usize,
    // Not a doc comment: that would change the OpenAPI document's schema.
    #[serde(default)]
    #[schemars(description = "How a call that cannot run yet waits (default fifo).")]
    pub strategy: Strategy,
}

fn default_global() -> usize {
    16
}

fn default_queue() -> usize {
    1024
}

/// How a call is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Within the limits: it may be refused when the queue is full or the strategy is
    /// to refuse.
    Limited,
    /// A person approved it: it waits for a slot however long the queue, never refused.
    Approved,
    /// Past the limits altogether (workflow callers).
    Bypass,
}

impl Default for LimitConfig {
    fn default() -> Self {
        Self {
            global: default_global(),
            per_category: HashMap::new(),
            queue: default_queue(),
            strategy: Strategy::Fifo,
        }
    }
}

/// Why a call got no slot.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LimitError {
    #[error("refused: {0}")]
    Rejected(String),
}

/// Counters for one category, or for all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Counters {
    /// Running now.
    pub current: usize,
    /// Waiting now.
    pub queued: usize,
    /// Slots given, in all.
    pub acquired: u64,
    pub rejected: u64,
    pub timed_out: u64,
    pub completed: u64,
    pub mean_execution_ms: f64,
    #[serde(skip)]
    #[schema(ignore)]
    total_execution_ms: f64,
}

/// A snapshot of the limiter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Metrics {
    #[serde(flatten)]
    pub all: Counters,
    pub per_category: BTreeMap<String, Counters>,
}

struct Waiter {
    id: u64,
    category: Option<String>,
    priority: i32,
    ready: oneshot::Sender<()>,
}

#[derive(Default)]
struct State {
    running: usize,
    running_by_category: HashMap<String, usize>,
    queue: Vec<Waiter>,
    /// Waiters given a slot that have not taken it yet.
    granted: HashSet<u64>,
    next_id: u64,
    metrics: Metrics,
}

/// The gate every call passes.
pub struct Limiter {
    config: LimitConfig,
    state: Mutex<State>,
}

/// A slot; dropping it frees the slot for the next waiter.
pub struct Permit {
    limiter: Arc<Limiter>,
    category: Option<String>,
    counted: bool,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.counted {
            let mut st = self.limiter.lock();
            self.limiter.release(&mut st, self.category.as_deref());
            self.limiter.grant(&mut st);
        }
    }
}

/// Removes a waiter that stopped waiting (its call was cancelled), or gives back the
/// slot it was granted meanwhile.
struct WaitGuard<'a> {
    limiter: &'a Arc<Limiter>,
    id: u64,
    category: Option<String>,
    done: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut st = self.limiter.lock();
        if let Some(i) = st.queue.iter().position(|w| w.id == self.id) {
            st.queue.remove(i);
            self.limiter.set_queued(&mut st);
        } else if st.granted.remove(&self.id) {
            self.limiter.release(&mut st, self.category.as_deref());
            self.limiter.grant(&mut st);
        }
    }
}

impl Limiter {
    pub fn new(config: LimitConfig) -> Arc<Self> {
        Arc::new(Self {
            config,
            state: Mutex::new(State::default()),
        })
    }

    pub fn config(&self) -> &LimitConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the counters half-updated in a
        // way that matters more than stopping every call: keep going with the data.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fits(&self, st: &State, category: Option<&str>) -> bool {
        if st.running >= self.config.global.max(1) {
            return false;
        }
        match category.and_then(|c| self.config.per_category.get(c).map(|max| (c, *max))) {
            Some((c, max)) => st.running_by_category.get(c).copied().unwrap_or(0) < max.max(1),
            None => true,
        }
    }

    fn take(&self, st: &mut State, category: Option<&str>) {
        st.running += 1;
        st.metrics.all.acquired += 1;
        st.metrics.all.current = st.running;
        if let Some(c) = category {
            let n = st.running_by_category.entry(c.to_string()).or_default();
            *n += 1;
            let now = *n;
            let m = st.metrics.per_category.entry(c.to_string()).or_default();
            m.acquired += 1;
            m.current = now;
        }
    }

    fn release(&self, st: &mut State, category: Option<&str>) {
        st.running = st.running.saturating_sub(1);
        st.metrics.all.current = st.running;
        if let Some(c) = category
            && let Some(n) = st.running_by_category.get_mut(c)
        {
            *n = n.saturating_sub(1);
            let now = *n;
            st.metrics
                .per_category
                .entry(c.to_string())
                .or_default()
                .current = now;
        }
    }

    fn set_queued(&self, st: &mut State) {
        st.metrics.all.queued = st.queue.len();
        let mut by_cat: HashMap<&str, usize> = HashMap::new();
        for w in &st.queue {
            if let Some(c) = &w.category {
                *by_cat.entry(c).or_default() += 1;
            }
        }
        let counts: Vec<(String, usize)> = by_cat
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        for m in st.metrics.per_category.values_mut() {
            m.queued = 0;
        }
        for (c, n) in counts {
            st.metrics.per_category.entry(c).or_default().queued = n;
        }
    }

    /// Gives free slots to waiters, best first; a waiter whose category is full does
    /// not block the others.
    fn grant(&self, st: &mut State) {
        loop {
            let mut best: Option<usize> = None;
            for (i, w) in st.queue.iter().enumerate() {
                if !self.fits(st, w.category.as_deref()) {
                    continue;
                }
                let better = match best {
                    None => true,
                    Some(b) => {
                        self.config.strategy == Strategy::Priority
                            && w.priority > st.queue[b].priority
                    }
                };
                if better {
                    best = Some(i);
                    if self.config.strategy != Strategy::Priority {
                        break;
                    }
                }
            }
            let Some(i) = best else { break };
            let w = st.queue.remove(i);
            self.take(st, w.category.as_deref());
            if w.ready.send(()).is_ok() {
                st.granted.insert(w.id);
            } else {
                self.release(st, w.category.as_deref());
            }
        }
        self.set_queued(st);
    }

    fn reject(&self, st: &mut State, category: Option<&str>, why: String) -> LimitError {
        st.metrics.all.rejected += 1;
        if let Some(c) = category {
            st.metrics
                .per_category
                .entry(c.to_string())
                .or_default()
                .rejected += 1;
        }
        LimitError::Rejected(why)
    }

    /// Waits for a slot (or bypasses the limits); see [`Admission`].
    pub async fn acquire(
        self: &Arc<Self>,
        category: Option<&str>,
        priority: i32,
        admission: Admission,
    ) -> Result<Permit, LimitError> {
        let category = category.map(str::to_string);
        let permit = |counted| Permit {
            limiter: Arc::clone(self),
            category: category.clone(),
            counted,
        };
        let (id, ready) = {
            let mut st = self.lock();
            if admission == Admission::Bypass {
                st.metrics.all.acquired += 1;
                return Ok(permit(false));
            }
            if st.queue.is_empty() && self.fits(&st, category.as_deref()) {
                self.take(&mut st, category.as_deref());
                return Ok(permit(true));
            }
            let what = category
                .as_deref()
                .map_or("tool".to_string(), |c| format!("'{c}' tool"));
            if self.config.strategy == Strategy::Reject && admission == Admission::Limited {
                let why = format!(
                    "too many {what} calls are running (limit reached) and the strategy is to refuse; try again later"
                );
                return Err(self.reject(&mut st, category.as_deref(), why));
            }
            if st.queue.len() >= self.config.queue && admission == Admission::Limited {
                let why = format!(
                    "the queue of waiting calls is full ({} calls)",
                    self.config.queue
                );
                return Err(self.reject(&mut st, category.as_deref(), why));
            }
            st.next_id += 1;
            let id = st.next_id;
            let (tx, rx) = oneshot::channel();
            st.queue.push(Waiter {
                id,
                category: category.clone(),
                priority,
                ready: tx,
            });
            self.set_queued(&mut st);
            (id, rx)
        };
        let mut guard = WaitGuard {
            limiter: self,
            id,
            category: category.clone(),
            done: false,
        };
        // The sender lives in the queue until it is used; it is never dropped unsent
        // while this waiter is in the queue.
        let _ = ready.await;
        let mut st = self.lock();
        if st.granted.remove(&id) {
            guard.done = true;
            drop(st);
            Ok(permit(true))
        } else {
            drop(st);
            Err(LimitError::Rejected("the limiter was shut down".into()))
        }
    }

    /// Notes a finished call for the metrics.
    pub fn record_finished(&self, category: Option<&str>, execution: Duration, timed_out: bool) {
        let ms = execution.as_secs_f64() * 1000.0;
        let mut st = self.lock();
        let update = |c: &mut Counters| {
            c.completed += 1;
            c.total_execution_ms += ms;
            c.mean_execution_ms = c.total_execution_ms / c.completed as f64;
            if timed_out {
                c.timed_out += 1;
            }
        };
        update(&mut st.metrics.all);
        if let Some(c) = category {
            update(st.metrics.per_category.entry(c.to_string()).or_default());
        }
    }

    pub fn metrics(&self) -> Metrics {
        self.lock().metrics.clone()
    }
}
