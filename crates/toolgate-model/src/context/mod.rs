//! The context budget of an agent (`context: {max_tokens, result_tokens, strategy}`):
//! how many tokens a request may hold, how long a tool result may be before it is cut,
//! and how older turns are compacted when the next request would not fit. Token
//! counting, the table of model windows, result cutting and the compaction plan live
//! in the submodules; the run loop applies them.

mod compact;
mod cut;
mod tokens;
mod windows;

use serde::{Deserialize, Serialize};

pub use compact::{Compaction, Plan, first_user, plan, transcript, view};
pub use cut::{cut_result, page};
pub use tokens::{BYTES_PER_TOKEN, Counter, PER_MESSAGE, floor_boundary};
pub use windows::{DEFAULT_WINDOW, window_of};

/// The tokens one message takes in a request: its text, its calls, and the framing
/// ([`PER_MESSAGE`]).
pub fn message_tokens(counter: &Counter, m: &crate::Message) -> u64 {
    let calls: u64 = m
        .tool_calls
        .iter()
        .map(|c| {
            counter.count(&c.name)
                + counter.count(&serde_json::Value::Object(c.arguments.clone()).to_string())
        })
        .sum();
    PER_MESSAGE + counter.count(&m.content) + calls
}

/// How older turns make room.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Strategy {
    /// The model is asked for a summary of the oldest turns, which replaces them.
    #[default]
    Summarize,
    /// The oldest turns are dropped.
    Truncate,
}

impl Strategy {
    /// Its name in an agent file (`summarize`, `truncate`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// An agent file's `context:` block, every field optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    /// The most tokens a request (prompt and answer) may take; the model's window
    /// when unset.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The most tokens of one tool result the model sees; an eighth of `max_tokens`
    /// when unset.
    #[serde(default)]
    pub result_tokens: Option<u64>,
    /// What makes room when the conversation outgrows the budget (default summarize).
    #[serde(default)]
    pub strategy: Option<Strategy>,
}

/// The smallest `max_tokens` accepted.
pub const MIN_MAX_TOKENS: u64 = 1_024;
/// The smallest `result_tokens` accepted.
pub const MIN_RESULT_TOKENS: u64 = 64;
/// The answer room kept free when the model's `max_tokens` setting is unset.
pub const DEFAULT_ANSWER_TOKENS: u64 = 4_096;

/// Why a `context:` section is refused; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    #[error("'max_tokens' must be at least {MIN_MAX_TOKENS}, not {0}")]
    MaxTokens(u64),
    #[error("'result_tokens' must be at least {MIN_RESULT_TOKENS}, not {0}")]
    ResultTokens(u64),
    #[error("'result_tokens' ({result}) must be at most half of 'max_tokens' ({max})")]
    ResultOverHalf { result: u64, max: u64 },
}

impl From<ContextError> for String {
    fn from(e: ContextError) -> String {
        e.to_string()
    }
}

impl ContextConfig {
    /// Checks the values against each other; the message names the field.
    pub fn check(&self) -> Result<(), ContextError> {
        if let Some(m) = self.max_tokens
            && m < MIN_MAX_TOKENS
        {
            return Err(ContextError::MaxTokens(m));
        }
        if let Some(r) = self.result_tokens {
            if r < MIN_RESULT_TOKENS {
                return Err(ContextError::ResultTokens(r));
            }
            if let Some(m) = self.max_tokens
                && r > m / 2
            {
                return Err(ContextError::ResultOverHalf { result: r, max: m });
            }
        }
        Ok(())
    }
}

/// A budget made concrete for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub max_tokens: u64,
    pub result_tokens: u64,
    pub strategy: Strategy,
    /// Tokens kept free for the answer: a request's prompt may take
    /// `max_tokens - answer_tokens`.
    pub answer_tokens: u64,
}

impl Budget {
    /// `config` with the model's defaults filled in: the window of `model` (see
    /// [`window_of`]), an eighth of it per result, `summarize`, and room for the answer
    /// of the model's `max_tokens` setting (else [`DEFAULT_ANSWER_TOKENS`]), at most a
    /// quarter of the budget.
    pub fn resolve(config: Option<&ContextConfig>, model: &str, answer: Option<u32>) -> Budget {
        let config = config.cloned().unwrap_or_default();
        let max_tokens = config.max_tokens.unwrap_or_else(|| window_of(model));
        Budget {
            max_tokens,
            result_tokens: config.result_tokens.unwrap_or(max_tokens / 8),
            strategy: config.strategy.unwrap_or_default(),
            answer_tokens: answer
                .map_or(DEFAULT_ANSWER_TOKENS, u64::from)
                .min(max_tokens / 4),
        }
    }

    /// The most tokens a request's prompt may hold.
    pub fn prompt_limit(&self) -> u64 {
        self.max_tokens - self.answer_tokens
    }

    /// What a compaction aims for: three fifths of the prompt limit, so that the next
    /// few turns fit before another one.
    pub fn compaction_target(&self) -> u64 {
        self.prompt_limit() * 3 / 5
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn defaults_come_from_the_model() {
        let b = Budget::resolve(None, "openai:gpt-4o", None);
        assert_eq!(b.max_tokens, 128_000);
        assert_eq!(b.result_tokens, 16_000);
        assert_eq!(b.strategy, Strategy::Summarize);
        assert_eq!(b.prompt_limit(), 128_000 - 4_096);
        let c = ContextConfig {
            max_tokens: Some(8_000),
            result_tokens: None,
            strategy: Some(Strategy::Truncate),
        };
        let b = Budget::resolve(Some(&c), "openai:whatever", Some(100_000));
        assert_eq!(
            (b.max_tokens, b.result_tokens, b.answer_tokens),
            (8_000, 1_000, 2_000)
        );
    }

    #[test]
    fn bad_budgets_are_named() {
        let c = |m, r| ContextConfig {
            max_tokens: m,
            result_tokens: r,
            strategy: None,
        };
        assert!(
            c(Some(10), None)
                .check()
                .unwrap_err()
                .to_string()
                .contains("max_tokens")
        );
        assert!(
            c(None, Some(1))
                .check()
                .unwrap_err()
                .to_string()
                .contains("result_tokens")
        );
        assert!(
            c(Some(2_000), Some(1_500))
                .check()
                .unwrap_err()
                .to_string()
                .contains("half")
        );
        assert!(c(Some(2_000), Some(500)).check().is_ok());
    }

    #[test]
    fn every_strategy_is_named_as_serde_names_it() {
        use strum::VariantArray;
        for s in Strategy::VARIANTS {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
            assert_eq!(s.as_str().parse::<Strategy>().unwrap(), *s);
        }
    }
}
