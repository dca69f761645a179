//! The figures read at each scrape rather than counted as they happen: every limiter of
//! the process (running, queued, and its counters, per category), and the approvals
//! waiting in the store with the age of the oldest.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use toolgate_runtime::engine::limits::Counters;
use toolgate_runtime::engine::{LimiterView, ProcessLimits};
use toolgate_store::Store;
use toolgate_telemetry::labels::Vocabulary;
use toolgate_telemetry::metrics::Bounds;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimiterLabels {
    /// `process`, or `agent/NAME` for an agent's share.
    limiter: String,
    /// `all`, or a tool category.
    category: String,
}

/// Registers the scrape-time collectors of `limits` and `store`; label values pass the
/// given bounds.
pub fn register(
    registry: &mut Registry,
    bounds: &Bounds,
    limits: Arc<ProcessLimits>,
    store: Store,
) {
    registry.register_collector(Box::new(Limiters {
        limits,
        agents: Arc::clone(&bounds.agents),
        categories: Arc::clone(&bounds.categories),
    }));
    registry.register_collector(Box::new(super::collect_wal::Wal {
        store: store.clone(),
    }));
    registry.register_collector(Box::new(Approvals { store }));
}

struct Limiters {
    limits: Arc<ProcessLimits>,
    agents: Arc<Vocabulary>,
    categories: Arc<Vocabulary>,
}

impl std::fmt::Debug for Limiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Limiters")
    }
}

impl Limiters {
    /// One row per limiter and category (`all` first).
    fn rows(&self) -> Vec<(LimiterLabels, Counters)> {
        let view = self.limits.view();
        let mut rows = Vec::new();
        let mut add = |limiter: String, v: &LimiterView| {
            rows.push((
                LimiterLabels {
                    limiter: limiter.clone(),
                    category: "all".into(),
                },
                v.metrics.all.clone(),
            ));
            for (c, counters) in &v.metrics.per_category {
                rows.push((
                    LimiterLabels {
                        limiter: limiter.clone(),
                        category: self.categories.label(c),
                    },
                    counters.clone(),
                ));
            }
        };
        add("process".into(), &view.process);
        for (agent, v) in &view.agents {
            add(format!("agent/{}", self.agents.label(agent)), v);
        }
        rows
    }
}

/// The counters one column of a limiter row shows.
type Column = fn(&Counters) -> u64;

/// The limiters' gauges: name, help, the column each shows.
const LIMITER_GAUGES: [(&str, &str, Column); 2] = [
    ("limiter_running", "Calls holding a slot now.", |c| {
        c.current as u64
    }),
    ("limiter_queued", "Calls waiting for a slot now.", |c| {
        c.queued as u64
    }),
];

/// The limiters' counters: name, help, the column each shows.
const LIMITER_COUNTERS: [(&str, &str, Column); 4] = [
    ("limiter_acquired", "Slots given.", |c| c.acquired),
    (
        "limiter_rejected",
        "Calls refused (a full queue, or the reject strategy).",
        |c| c.rejected,
    ),
    (
        "limiter_timed_out",
        "Calls that ran past their timeout.",
        |c| c.timed_out,
    ),
    ("limiter_completed", "Calls that ran and ended.", |c| {
        c.completed
    }),
];

/// The approvals' gauges: name and help.
const APPROVALS_WAITING: (&str, &str) = (
    "approvals_waiting",
    "Approval items of paused runs waiting for a person now.",
);
const APPROVALS_OLDEST: (&str, &str) = (
    "approvals_oldest_wait_seconds",
    "How long the oldest approval item still waiting has waited (0 when none waits).",
);

/// Every metric the scrape-time collectors expose (prefixed as exposed), for the
/// reference; the limiters' are labelled by `limiter` and `category`.
pub fn described() -> Vec<toolgate_telemetry::metrics::Described> {
    let one = |(name, help): (&str, &str), kind: &str| toolgate_telemetry::metrics::Described {
        name: format!("toolgate_{name}"),
        kind: kind.to_string(),
        help: help.to_string(),
    };
    let gauges = LIMITER_GAUGES.iter().map(|(n, h, _)| one((n, h), "gauge"));
    let counters = LIMITER_COUNTERS
        .iter()
        .map(|(n, h, _)| one((n, h), "counter"));
    gauges
        .chain(counters)
        .chain([
            one(APPROVALS_WAITING, "gauge"),
            one(APPROVALS_OLDEST, "gauge"),
            one(super::collect_wal::WAL_BYTES, "gauge"),
        ])
        .collect()
}

impl Collector for Limiters {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows = self.rows();
        let gauges = LIMITER_GAUGES;
        for (name, help, value) in gauges {
            let mut e = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (labels, c) in &rows {
                ConstGauge::new(value(c) as i64).encode(e.encode_family(labels)?)?;
            }
        }
        let counters = LIMITER_COUNTERS;
        for (name, help, value) in counters {
            let mut e = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (labels, c) in &rows {
                ConstCounter::new(value(c)).encode(e.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}

struct Approvals {
    store: Store,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Approvals")
    }
}

impl Collector for Approvals {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // A scrape renders on the blocking pool (see `metrics::render`): waiting for the
        // store is allowed there.
        let read = tokio::runtime::Handle::try_current()
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                rt.block_on(self.store.waiting_approvals())
                    .map_err(|e| e.to_string())
            });
        let waiting = match read {
            Ok(w) => w,
            Err(e) => {
                // A scrape shows what it can: the rest of the metrics still go out.
                tracing::warn!(error = %e, "the approvals waiting could not be counted");
                return Ok(());
            }
        };
        let age = waiting.oldest_ms.map_or(0.0, |t| {
            (toolgate_protocol::clock::now_ms() - t).max(0) as f64 / 1000.0
        });
        ConstGauge::new(waiting.approvals as i64).encode(encoder.encode_descriptor(
            APPROVALS_WAITING.0,
            APPROVALS_WAITING.1,
            None,
            MetricType::Gauge,
        )?)?;
        ConstGauge::new(age).encode(encoder.encode_descriptor(
            APPROVALS_OLDEST.0,
            APPROVALS_OLDEST.1,
            None,
            MetricType::Gauge,
        )?)?;
        Ok(())
    }
}
