//! The process's Prometheus metrics (`prometheus-client`): what runs, model calls, tool
//! calls, decisions, the store and webhooks did, counted where it happens, plus the
//! figures read at each scrape (limiters, approvals waiting: the collectors [`install`]
//! is given). Every family has its series from the start, at zero ([`seed`] for the
//! agents, tools and models a server loads). Nothing is
//! counted until a process installs them (`toolgate serve` does): every recording
//! function is a no-op before, so the CLI pays nothing. Label values are bounded (see
//! `labels`): agents, tools, models and categories the process meets, never ids or
//! arguments.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub use super::labels::Vocabulary;
use super::labels::model_name;
use toolgate_protocol::{CallStatus, Usage};

/// How many values each kind of label may take before the rest are `other`.
const AGENTS: usize = 200;
const TOOLS: usize = 1000;
const MODELS: usize = 32;
const TENANTS: usize = 100;
const KEYS: usize = 200;
/// Error kinds are a closed set in the code; the cap only guards against a new one
/// built from data.
const ERROR_KINDS: usize = 100;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabel {
    agent: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    agent: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabel {
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelOutcome {
    model: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    model: String,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SpendLabels {
    agent: String,
    tenant: String,
    key: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    status: &'static str,
    error_kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLabels {
    tool: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every metric the process keeps, and the bounds on their labels.
pub struct Metrics {
    registry: Registry,
    /// What was registered, for the reference ([`catalogue`]).
    described: Vec<Described>,
    runs: Family<RunLabels, Counter>,
    runs_active: Family<AgentLabel, Gauge>,
    run_seconds: Histograms<AgentLabel>,
    model_calls: Family<ModelOutcome, Counter>,
    model_seconds: Histograms<ModelLabel>,
    tokens: Family<TokenLabels, Counter>,
    tool_calls: Family<CallLabels, Counter>,
    tool_seconds: Histograms<ToolLabel>,
    tool_cache: Family<CacheLabels, Counter>,
    decision_seconds: Histograms<AgentLabel>,
    commit_seconds: Histograms<KindLabel>,
    webhooks: Family<OutcomeLabel, Counter>,
    webhook_failed_attempts: Counter,
    spend: SpendMetrics,
    agents: Arc<Vocabulary>,
    tools: Vocabulary,
    models: Vocabulary,
    error_kinds: Vocabulary,
}

fn run_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.05, 2.5, 12))
}

fn model_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.05, 2.0, 12))
}

fn tool_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.5, 13))
}

fn decision_buckets() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 4.0, 9))
}

fn commit_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 14))
}

static METRICS: OnceLock<Metrics> = OnceLock::new();
static RECORDING: AtomicBool = AtomicBool::new(true);

/// The label bounds the counted metrics keep, for the collectors read at each scrape to
/// label by the same vocabularies.
pub struct Bounds {
    /// Agent names (`agent/NAME` limiters, `agent` labels).
    pub agents: Arc<Vocabulary>,
    /// Tool categories.
    pub categories: Arc<Vocabulary>,
}

/// Turns the metrics on for this process (once; a second call keeps the first) and
/// returns them. `collectors` registers the figures read at each scrape (the process
/// that installs them knows where they are: its limiter, its store).
pub fn install(collectors: impl FnOnce(&mut Registry, &Bounds)) -> &'static Metrics {
    METRICS.get_or_init(|| {
        let m = Metrics::new(collectors);
        m.seed_closed();
        m
    })
}

/// The statuses a drive of a run ends with.
const RUN_STATUSES: [&str; 5] = [
    "completed",
    "requires_action",
    "incomplete",
    "failed",
    "cancelled",
];

/// The statuses a tool call the process runs is recorded with.
const CALL_STATUSES: [CallStatus; 5] = [
    CallStatus::Succeeded,
    CallStatus::Failed,
    CallStatus::Denied,
    CallStatus::Timeout,
    CallStatus::Cancelled,
];

/// Makes the series of `agents`, `tools` and `models` (with every closed label value:
/// run and call statuses, model outcomes, token types) at zero, so that a fresh
/// server's first scrape shows 0 for them, not "no data". Names met later get their
/// series when first counted. A no-op before [`install`].
pub fn seed(agents: &[String], tools: &[String], models: &[String]) {
    let Some(m) = METRICS.get() else { return };
    for agent in agents {
        let label = m.agent(agent);
        drop(m.runs_active.get_or_create(&label));
        drop(m.run_seconds.get_or_create(&label));
        drop(m.decision_seconds.get_or_create(&label));
        for status in RUN_STATUSES {
            drop(m.runs.get_or_create(&RunLabels {
                agent: label.agent.clone(),
                status: status.to_string(),
            }));
        }
    }
    for tool in tools {
        let tool = m.tools.label(tool);
        drop(
            m.tool_seconds
                .get_or_create(&ToolLabel { tool: tool.clone() }),
        );
        for status in CALL_STATUSES {
            drop(m.tool_calls.get_or_create(&CallLabels {
                tool: tool.clone(),
                status: status.as_str(),
                error_kind: m.error_kinds.label("none"),
            }));
        }
    }
    for model in models {
        let model = m.model(model);
        drop(m.model_seconds.get_or_create(&ModelLabel {
            model: model.clone(),
        }));
        for outcome in ["ok", "error"] {
            drop(m.model_calls.get_or_create(&ModelOutcome {
                model: model.clone(),
                outcome,
            }));
        }
        for kind in ["input", "output"] {
            drop(m.tokens.get_or_create(&TokenLabels {
                model: model.clone(),
                r#type: kind,
            }));
        }
    }
}

/// The metrics, once installed (and while they record).
pub fn get() -> Option<&'static Metrics> {
    if RECORDING.load(Ordering::Relaxed) {
        METRICS.get()
    } else {
        None
    }
}

/// Stops (`false`) or restarts the counting of installed metrics, to measure what it
/// costs (benches/telemetry.rs); scrapes still answer.
pub fn set_recording(on: bool) {
    RECORDING.store(on, Ordering::Relaxed);
}

/// One metric as the reference lists it: its exposed name, type and help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub name: String,
    pub kind: String,
    pub help: String,
}

/// Every counted metric, as [`install`] registers them (the scrape-time collectors
/// are their installer's to describe).
pub fn catalogue() -> Vec<Described> {
    Metrics::new(|_, _| {}).described
}

/// A registry being filled, and what went in.
struct Registering {
    registry: Registry,
    described: Vec<Described>,
}

impl Registering {
    /// Registers `metric` as `toolgate_{name}` and notes it.
    fn add<M>(&mut self, name: &str, help: &str, metric: M)
    where
        M: prometheus_client::registry::Metric + prometheus_client::metrics::TypedMetric,
    {
        self.described.push(Described {
            name: format!("toolgate_{name}"),
            kind: M::TYPE.as_str().to_string(),
            help: help.to_string(),
        });
        self.registry.register(name, help, metric);
    }
}

/// The OpenMetrics text of every metric now (`None` before [`install`]). Reads the
/// store: call it off the async workers.
pub fn render() -> Option<Result<String, std::fmt::Error>> {
    let m = METRICS.get()?;
    let mut out = String::new();
    Some(prometheus_client::encoding::text::encode(&mut out, &m.registry).map(|()| out))
}

/// Registers the collectors read at scrape time, their labels bounded by the
/// vocabularies; returns the agents' vocabulary, shared with the counted metrics.
fn with_collectors(
    r: &mut Registry,
    collectors: impl FnOnce(&mut Registry, &Bounds),
) -> Arc<Vocabulary> {
    let agents = Arc::new(Vocabulary::new(AGENTS));
    let categories = Arc::new(Vocabulary::new(TOOLS));
    collectors(
        r,
        &Bounds {
            agents: Arc::clone(&agents),
            categories,
        },
    );
    agents
}

impl Metrics {
    /// Registers every counted metric, then the `collectors`.
    fn new(collectors: impl FnOnce(&mut Registry, &Bounds)) -> Self {
        let mut r = Registering {
            registry: Registry::with_prefix("toolgate"),
            described: Vec::new(),
        };
        let runs = Family::default();
        r.add(
            "runs",
            "Drives of runs that ended with this status (a run that pauses, then completes, counts once in each)",
            runs.clone(),
        );
        let runs_active = Family::default();
        r.add(
            "runs_active",
            "Runs this process is driving now",
            runs_active.clone(),
        );
        let run_seconds = Histograms::new_with_constructor(run_buckets as fn() -> Histogram);
        r.add(
            "run_duration_seconds",
            "How long a drive of a run took (up to its end or pause)",
            run_seconds.clone(),
        );
        let model_calls = Family::default();
        r.add(
            "model_calls",
            "Model requests, by model and outcome (ok, error)",
            model_calls.clone(),
        );
        let model_seconds = Histograms::new_with_constructor(model_buckets as fn() -> Histogram);
        r.add(
            "model_call_duration_seconds",
            "How long a model took to answer",
            model_seconds.clone(),
        );
        let tokens = Family::default();
        r.add(
            "model_tokens",
            "Tokens the models reported, by model and type (input, output)",
            tokens.clone(),
        );
        let (tool_calls, tool_seconds, tool_cache) = tool_metrics(&mut r);
        let decision_seconds =
            Histograms::new_with_constructor(decision_buckets as fn() -> Histogram);
        r.add(
            "decision_latency_seconds",
            "From an item's request to its decision (approve, deny, submit), by the run's agent",
            decision_seconds.clone(),
        );
        let commit_seconds = Histograms::new_with_constructor(commit_buckets as fn() -> Histogram);
        r.add(
            "store_commit_duration_seconds",
            "Store transactions: group commits of call records (records) and the rest (transaction)",
            commit_seconds.clone(),
        );
        let webhooks = Family::default();
        r.add(
            "webhook_deliveries",
            "Webhook notifications, by outcome (delivered, given_up)",
            webhooks.clone(),
        );
        let webhook_failed_attempts = Counter::default();
        r.add(
            "webhook_failed_attempts",
            "Webhook attempts that failed (each retry counts)",
            webhook_failed_attempts.clone(),
        );
        let spend = spend_metrics(&mut r);
        let agents = with_collectors(&mut r.registry, collectors);
        Self {
            registry: r.registry,
            described: r.described,
            runs,
            runs_active,
            run_seconds,
            model_calls,
            model_seconds,
            tokens,
            tool_calls,
            tool_seconds,
            tool_cache,
            decision_seconds,
            commit_seconds,
            webhooks,
            webhook_failed_attempts,
            spend,
            agents,
            tools: Vocabulary::new(TOOLS),
            models: Vocabulary::new(MODELS),
            error_kinds: Vocabulary::new(ERROR_KINDS),
        }
    }

    /// The series whose labels are all closed sets, at zero from the start.
    fn seed_closed(&self) {
        for kind in ["records", "transaction"] {
            drop(self.commit_seconds.get_or_create(&KindLabel { kind }));
        }
        for outcome in ["delivered", "given_up"] {
            drop(self.webhooks.get_or_create(&OutcomeLabel { outcome }));
        }
    }

    fn agent(&self, agent: &str) -> AgentLabel {
        AgentLabel {
            agent: self.agents.label(agent),
        }
    }

    fn model(&self, model: &str) -> String {
        self.models.label(model_name(model))
    }
}

/// The spend counters: tokens and nanodollars by agent, tenant and key (tenants and keys
/// bounded by vocabularies of their own), and budgets reached by what they did.
struct SpendMetrics {
    tokens: Family<SpendLabels, Counter>,
    nanos: Family<SpendLabels, Counter>,
    reached: Family<OutcomeLabel, Counter>,
    tenants: Vocabulary,
    keys: Vocabulary,
}

/// Registers the spend counters.
/// The tool metrics: recorded calls, their durations, and cache lookups.
fn tool_metrics(
    r: &mut Registering,
) -> (
    Family<CallLabels, Counter>,
    Histograms<ToolLabel>,
    Family<CacheLabels, Counter>,
) {
    let tool_calls = Family::default();
    r.add(
        "tool_calls",
        "Recorded tool calls, by tool, status and error kind (`none` without an error)",
        tool_calls.clone(),
    );
    let tool_seconds = Histograms::new_with_constructor(tool_buckets as fn() -> Histogram);
    r.add(
        "tool_call_duration_seconds",
        "How long tools ran (calls that got a slot and started)",
        tool_seconds.clone(),
    );
    let tool_cache = Family::default();
    r.add(
        "tool_cache_lookups",
        "Calls of tools that keep their results (`cache:`), by tool and result (hit: served \
             from the cache; miss: the tool ran)",
        tool_cache.clone(),
    );
    (tool_calls, tool_seconds, tool_cache)
}

fn spend_metrics(r: &mut Registering) -> SpendMetrics {
    let tokens = Family::default();
    r.add(
        "spend_tokens",
        "Tokens (prompt and completion) of model requests, by agent, tenant and key (`-`: none)",
        tokens.clone(),
    );
    let nanos = Family::default();
    r.add(
        "spend_nanodollars",
        "What model requests cost by the price table, in US nanodollars, by agent, tenant and key",
        nanos.clone(),
    );
    let reached = Family::default();
    r.add(
        "budgets_reached",
        "Budgets reached before a model request, by what they did (pause, fail, warn)",
        reached.clone(),
    );
    SpendMetrics {
        tokens,
        nanos,
        reached,
        tenants: Vocabulary::new(TENANTS),
        keys: Vocabulary::new(KEYS),
    }
}

/// A model request of a run of `agent` (in `tenant`, started by `key`) used `tokens`
/// and cost `nanos`.
pub fn spent(agent: &str, tenant: &str, key: Option<&str>, tokens: u64, nanos: u64) {
    if let Some(m) = get() {
        let labels = SpendLabels {
            agent: m.agents.label(agent),
            tenant: m.spend.tenants.label(tenant),
            key: m.spend.keys.label(key.unwrap_or("-")),
        };
        m.spend.tokens.get_or_create(&labels).inc_by(tokens);
        m.spend.nanos.get_or_create(&labels).inc_by(nanos);
    }
}

/// A budget was reached; it did `on_limit` (`pause`, `fail`, `warn`).
pub fn budget_reached(on_limit: &'static str) {
    if let Some(m) = get() {
        m.spend
            .reached
            .get_or_create(&OutcomeLabel { outcome: on_limit })
            .inc();
    }
}

/// A drive of a run began.
pub fn run_started(agent: &str) {
    if let Some(m) = get() {
        m.runs_active.get_or_create(&m.agent(agent)).inc();
    }
}

/// A drive of a run ended with `status` (`completed`, `requires_action`, ...).
pub fn run_ended(agent: &str, status: &str, took: Duration) {
    if let Some(m) = get() {
        let label = m.agent(agent);
        m.runs_active.get_or_create(&label).dec();
        m.run_seconds
            .get_or_create(&label)
            .observe(took.as_secs_f64());
        m.runs
            .get_or_create(&RunLabels {
                agent: label.agent,
                status: status.to_string(),
            })
            .inc();
    }
}

/// A model answered (`usage`) or failed (`None`) after `took`.
pub fn model_called(model: &str, usage: Option<&Usage>, took: Duration) {
    let Some(m) = get() else { return };
    let model = m.model(model);
    m.model_seconds
        .get_or_create(&ModelLabel {
            model: model.clone(),
        })
        .observe(took.as_secs_f64());
    if let Some(u) = usage {
        for (kind, n) in [("input", u.prompt_tokens), ("output", u.completion_tokens)] {
            m.tokens
                .get_or_create(&TokenLabels {
                    model: model.clone(),
                    r#type: kind,
                })
                .inc_by(n);
        }
    }
    m.model_calls
        .get_or_create(&ModelOutcome {
            model,
            outcome: if usage.is_some() { "ok" } else { "error" },
        })
        .inc();
}

/// A tool ran for `took` (it had its slot). `tool` is a name the toolkit resolved.
pub fn tool_ran(tool: &str, took: Duration) {
    if let Some(m) = get() {
        m.tool_seconds
            .get_or_create(&ToolLabel {
                tool: m.tools.label(tool),
            })
            .observe(took.as_secs_f64());
    }
}

/// A call of a tool that keeps its results: served from the cache (`hit`) or run.
pub fn tool_cache(tool: &str, hit: bool) {
    if let Some(m) = get() {
        m.tool_cache
            .get_or_create(&CacheLabels {
                tool: m.tools.label(tool),
                result: if hit { "hit" } else { "miss" },
            })
            .inc();
    }
}

/// One committed call record. `known`: its tool is one the toolkit has (otherwise the
/// model made the name up, and the label says `unknown`).
pub fn call_recorded(tool: &str, known: bool, status: CallStatus, error_kind: Option<&str>) {
    if let Some(m) = get() {
        m.tool_calls
            .get_or_create(&CallLabels {
                tool: if known {
                    m.tools.label(tool)
                } else {
                    "unknown".to_string()
                },
                status: status.as_str(),
                error_kind: m.error_kinds.label(error_kind.unwrap_or("none")),
            })
            .inc();
    }
}

/// An item of a run of `agent` was decided `waited_ms` after it was requested.
pub fn decided(agent: &str, waited_ms: i64) {
    if let Some(m) = get() {
        m.decision_seconds
            .get_or_create(&m.agent(agent))
            .observe(waited_ms.max(0) as f64 / 1000.0);
    }
}

/// The store committed a transaction: a group of call records, or another.
pub fn store_committed(records: bool, took: Duration) {
    if let Some(m) = get() {
        m.commit_seconds
            .get_or_create(&KindLabel {
                kind: if records { "records" } else { "transaction" },
            })
            .observe(took.as_secs_f64());
    }
}

/// A webhook attempt ended: delivered, or failed (`last`: no attempt follows).
pub fn webhook_attempt(delivered: bool, last: bool) {
    let Some(m) = get() else { return };
    if !delivered {
        m.webhook_failed_attempts.inc();
    }
    if delivered || last {
        m.webhooks
            .get_or_create(&OutcomeLabel {
                outcome: if delivered { "delivered" } else { "given_up" },
            })
            .inc();
    }
}
