//! The price table (`prices.yaml`): US dollars per million tokens, by model, and the
//! cost of one model request by it, in nanodollars (whole numbers, so that sums are
//! exact). A default table ships built in; `TOOLGATE_PRICES=FILE` (same form) adds
//! models or replaces their prices.
//!
//! ```
//! use toolgate_model::prices::Prices;
//! use toolgate_protocol::Usage;
//! let prices = Prices::parse("models: {m: {input: 1.5, output: 2}}").unwrap();
//! let usage = Usage { prompt_tokens: 1000, completion_tokens: 10, ..Usage::default() };
//! // 1000 * $1.5/M + 10 * $2/M = $0.00152
//! assert_eq!(prices.cost("openai:m-2025-01-01", &usage), Some(1_520_000));
//! assert_eq!(prices.cost("openai:other", &usage), None);
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolgate_protocol::Usage;
use toolgate_protocol::budget::nanos_of_usd;

/// The environment variable naming a price file over the built-in table.
pub const PRICES_ENV: &str = "TOOLGATE_PRICES";

/// The built-in table.
pub const DEFAULT_PRICES: &str = include_str!("../prices.yaml");

/// One model's prices, in nanodollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    pub input: u64,
    pub output: u64,
    pub cached_input: u64,
    pub cache_write: u64,
}

/// A model's entry as the file writes it: dollars per million tokens.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    input: f64,
    output: f64,
    #[serde(default)]
    cached_input: Option<f64>,
    #[serde(default)]
    cache_write: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    models: BTreeMap<String, PriceFile>,
}

/// A price file that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PricesError {
    #[error("cannot read the price file {}: {error}", path.display())]
    Read { path: PathBuf, error: String },
    #[error("{}: {error} (a map `models:` of name -> {{input, output, cached_input, cache_write}} in dollars per million tokens)", path.display())]
    Invalid { path: PathBuf, error: String },
}

/// Prices by model name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    models: BTreeMap<String, Price>,
}

impl Prices {
    /// The built-in table.
    pub fn builtin() -> Prices {
        // The shipped file is checked by a test; an error here leaves the table empty.
        Prices::parse(DEFAULT_PRICES).unwrap_or_default()
    }

    /// The built-in table with `TOOLGATE_PRICES`'s file over it, when set.
    pub fn from_env() -> Result<Prices, PricesError> {
        let mut prices = Prices::builtin();
        if let Some(path) = std::env::var_os(PRICES_ENV).filter(|p| !p.is_empty()) {
            prices.extend(Prices::load(Path::new(&path))?);
        }
        Ok(prices)
    }

    /// Reads a price file.
    pub fn load(path: &Path) -> Result<Prices, PricesError> {
        let text = std::fs::read_to_string(path).map_err(|e| PricesError::Read {
            path: path.to_path_buf(),
            error: e.to_string(),
        })?;
        Prices::parse(&text).map_err(|error| PricesError::Invalid {
            path: path.to_path_buf(),
            error,
        })
    }

    /// Reads a price table's text.
    pub fn parse(text: &str) -> Result<Prices, String> {
        let file: TableFile = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        let mut models = BTreeMap::new();
        for (name, p) in file.models {
            let per_m = |what: &str, d: f64| {
                nanos_of_usd(d).ok_or_else(|| format!("model {name}: {what} {d} is not a price"))
            };
            let input = per_m("input", p.input)?;
            let price = Price {
                input,
                output: per_m("output", p.output)?,
                cached_input: p
                    .cached_input
                    .map_or(Ok(input), |d| per_m("cached_input", d))?,
                cache_write: p
                    .cache_write
                    .map_or(Ok(input), |d| per_m("cache_write", d))?,
            };
            models.insert(name, price);
        }
        Ok(Prices { models })
    }

    /// Adds `other`'s models, replacing prices of the same names.
    pub fn extend(&mut self, other: Prices) {
        self.models.extend(other.models);
    }

    /// The price of `model` (`provider:name`, or a bare name): its full name, else its
    /// name without the provider, else the longest entry it is a dated version of.
    pub fn price(&self, model: &str) -> Option<Price> {
        let bare = model.split_once(':').map_or(model, |(_, n)| n);
        if let Some(p) = self.models.get(model).or_else(|| self.models.get(bare)) {
            return Some(*p);
        }
        self.models
            .iter()
            .filter(|(k, _)| {
                bare.strip_prefix(k.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
            })
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| *p)
    }

    /// What a request by `model` using `usage` costs, in nanodollars; `None` when the
    /// table has no price for the model.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<u64> {
        let p = self.price(model)?;
        let part = |tokens: u64, per_m: u64| {
            (u128::from(tokens) * u128::from(per_m) + 500_000) / 1_000_000
        };
        let sum = part(usage.prompt_tokens, p.input)
            + part(usage.completion_tokens, p.output)
            + part(usage.cache_read_tokens, p.cached_input)
            + part(usage.cache_creation_tokens, p.cache_write);
        Some(u64::try_from(sum).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_reads_and_prices_common_models() {
        let prices = Prices::parse(DEFAULT_PRICES).unwrap_or_else(|e| panic!("{e}"));
        let usage = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 1_000_000,
            ..Usage::default()
        };
        // $0.15 + $0.60
        assert_eq!(prices.cost("openai:gpt-4o-mini", &usage), Some(750_000_000));
        // A dated version takes its model's price, not a shorter name's.
        assert_eq!(
            prices.cost("openai:gpt-4o-mini-2024-07-18", &usage),
            Some(750_000_000)
        );
        assert_eq!(
            prices.cost("gpt-4o-2024-08-06", &usage),
            Some(12_500_000_000)
        );
        assert!(
            prices
                .price("anthropic:claude-sonnet-4-5-20250929")
                .is_some()
        );
        assert_eq!(prices.cost("scripted:replies.yaml", &usage), None);
    }

    #[test]
    fn a_file_replaces_and_adds() {
        let mut prices = Prices::builtin();
        prices.extend(
            Prices::parse(
                "models: {gpt-4o-mini: {input: 1, output: 1}, local: {input: 0, output: 0}}",
            )
            .unwrap_or_else(|e| panic!("{e}")),
        );
        let one = Usage {
            prompt_tokens: 1,
            ..Usage::default()
        };
        assert_eq!(prices.cost("gpt-4o-mini", &one), Some(1_000));
        assert_eq!(prices.cost("openai:local", &one), Some(0));
        assert!(Prices::parse("models: {x: {input: -1, output: 0}}").is_err());
        assert!(Prices::parse("models: {x: {input: 1}}").is_err());
    }
}
