//! The loop's guards against a model gone astray, as an agent file sets them: how often
//! one identical call may run in a run (`max_repeats:`), how many calls one answer may
//! run (`max_calls_per_turn:`), and what a cut answer does (`on_truncated:`).

use serde::{Deserialize, Serialize};

/// How many times one call (same tool, same arguments) runs in a run when
/// `max_repeats:` is absent; a model that repeats itself more is told so instead.
pub const DEFAULT_MAX_REPEATS: u32 = 3;

/// How many times in a row a cut answer is continued before the run fails.
pub const MAX_CONTINUATIONS: u32 = 2;

/// What an answer cut by the model's output limit (`finish_reason: length`) does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnTruncated {
    /// The model is asked to continue (at most [`MAX_CONTINUATIONS`] times in a row),
    /// then the run fails.
    #[default]
    Continue,
    /// The run fails with the reason at once.
    Fail,
}

/// The loop's guards of one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopGuards {
    /// Runs of one identical call allowed in a run; 0: no bound.
    pub max_repeats: u32,
    pub on_truncated: OnTruncated,
    /// Calls run from one answer (`max_calls_per_turn:`); the rest are told to wait.
    /// 0: no bound.
    pub max_calls_per_turn: u32,
}

impl Default for LoopGuards {
    fn default() -> Self {
        Self {
            max_repeats: DEFAULT_MAX_REPEATS,
            on_truncated: OnTruncated::Continue,
            max_calls_per_turn: 0,
        }
    }
}

impl LoopGuards {
    /// From the agent file's `max_repeats:` and `on_truncated:`; a wrong value is
    /// `(field, message)`.
    pub fn read(
        max_repeats: Option<u32>,
        on_truncated: Option<&str>,
    ) -> Result<Self, (&'static str, String)> {
        let on_truncated = match on_truncated {
            None | Some("continue") => OnTruncated::Continue,
            Some("fail") => OnTruncated::Fail,
            Some(other) => {
                return Err((
                    "on_truncated",
                    format!("field 'on_truncated': '{other}' is not one of: continue, fail"),
                ));
            }
        };
        Ok(Self {
            max_repeats: max_repeats.unwrap_or(DEFAULT_MAX_REPEATS),
            on_truncated,
            max_calls_per_turn: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_the_fields_and_refuses_a_wrong_word() {
        assert_eq!(LoopGuards::read(None, None).unwrap(), LoopGuards::default());
        let set = LoopGuards::read(Some(0), Some("fail")).unwrap();
        assert_eq!((set.max_repeats, set.on_truncated), (0, OnTruncated::Fail));
        let (field, message) = LoopGuards::read(None, Some("retry")).unwrap_err();
        assert_eq!(field, "on_truncated");
        assert!(message.contains("continue, fail"), "{message}");
    }
}
