//! What the model requests of runs cost: one row per request (its model, tokens and
//! price in nanodollars, written with the run's save), the spend a budget checks
//! (filtered by conversation, agent, key or tenant, since a period's start), and the
//! spend summed by conversation, agent, tenant or key for `stats`.

use serde::{Deserialize, Serialize};

/// One model request of a run, as recorded. The run's conversation, agent, tenant and
/// starter are taken from the run's row when it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRequestRow {
    pub run_id: String,
    /// The model as the run names it (`openai:gpt-4o-mini`).
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
    pub total_tokens: u64,
    /// Its price by the price table, in nanodollars (0 for a model the table lacks).
    pub cost_nanos: u64,
    /// Unix milliseconds.
    pub at: i64,
}

/// Which requests a spend sums: every field given must match; `None` matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpendFilter {
    pub tenant: Option<String>,
    pub agent: Option<String>,
    /// The runs started by this identity (a key's name).
    pub started_by: Option<String>,
    pub conversation: Option<String>,
    /// Only requests at or after this time (Unix milliseconds).
    pub since: Option<i64>,
    /// Leave this run's requests out (the run adds its own, not yet saved, itself).
    pub not_run: Option<String>,
}

/// Tokens and money spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Spend {
    /// Model requests.
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// US dollars in nanodollars (1e-9), so that sums are exact.
    pub cost_nanos: u64,
}

impl Spend {
    /// Adds one request.
    pub fn add(&mut self, r: &ModelRequestRow) {
        self.requests += 1;
        self.prompt_tokens += r.prompt_tokens;
        self.completion_tokens += r.completion_tokens;
        self.total_tokens += r.total_tokens;
        self.cost_nanos += r.cost_nanos;
    }
}

/// What spend is grouped by.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum SpendBy {
    Conversation,
    Agent,
    Tenant,
    /// The identity that started the runs (a key's name; `-` for none).
    Key,
}

impl SpendBy {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The `model_requests` column it groups by.
    pub(crate) fn column(self) -> &'static str {
        match self {
            SpendBy::Conversation => "conversation_id",
            SpendBy::Agent => "agent",
            SpendBy::Tenant => "tenant",
            SpendBy::Key => "started_by",
        }
    }
}

/// The spend of one conversation, agent, tenant or key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SpendRow {
    /// The conversation id, agent, tenant or key name (`-`: runs nobody named started).
    pub name: String,
    #[serde(flatten)]
    pub spend: Spend,
}

/// Where a filter's conditions go: the SQL condition over `model_requests` and its
/// parameters, numbered from `first` (`?N` for SQLite, `$N` for PostgreSQL).
pub(crate) fn conditions(f: &SpendFilter, mark: &str) -> (String, Vec<FilterValue>) {
    let mut parts = vec!["1 = 1".to_string()];
    let mut values = Vec::new();
    let mut add = |sql: &str, v: FilterValue| {
        values.push(v);
        parts.push(format!("{sql} {mark}{}", values.len()));
    };
    if let Some(t) = &f.tenant {
        add("tenant =", FilterValue::Text(t.clone()));
    }
    if let Some(a) = &f.agent {
        add("agent =", FilterValue::Text(a.clone()));
    }
    if let Some(k) = &f.started_by {
        add("started_by =", FilterValue::Text(k.clone()));
    }
    if let Some(c) = &f.conversation {
        add("conversation_id =", FilterValue::Text(c.clone()));
    }
    if let Some(s) = f.since {
        add("at >=", FilterValue::Int(s));
    }
    if let Some(r) = &f.not_run {
        add("run_id <>", FilterValue::Text(r.clone()));
    }
    (parts.join(" AND "), values)
}

/// A filter's parameter.
#[derive(Debug, Clone)]
pub(crate) enum FilterValue {
    Text(String),
    Int(i64),
}

/// The sums a spend query selects, in [`Spend`]'s order.
pub(crate) const SUMS: &str = "count(*), COALESCE(sum(prompt_tokens), 0), COALESCE(sum(completion_tokens), 0), COALESCE(sum(total_tokens), 0), COALESCE(sum(cost_nanos), 0)";

/// A stored count as a number (never negative).
pub(crate) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A number as a stored count.
pub(crate) fn stored(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
