//! What the loop remembers to guard a run against a model gone astray: how often each
//! call (tool and arguments) was made, the answer cut by the output limit that the
//! model was asked to continue, and whether it was told not to forge results.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use toolgate_parse::ToolCall;

/// Saved with the run, so that a resumed run keeps its counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopMarks {
    /// Runs of each call so far, by [`key`] (a digest of the tool and arguments).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub made: BTreeMap<String, u32>,
    /// Continuations asked for in a row after cut answers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub continued: u32,
    /// The text of the cut answers so far, the start of the final answer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cut: String,
    /// The model was told that it cannot write tool results itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forged: bool,
    /// The model was asked once more for the call its `tool_choice` requires.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chose: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl LoopMarks {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Splits `calls` into those that may run and those that repeat a call made
    /// `max_repeats` times already in this run (within this turn too); counts the
    /// first. `max_repeats` 0: no bound.
    pub(super) fn admit(
        &mut self,
        calls: Vec<ToolCall>,
        max_repeats: u32,
    ) -> (Vec<ToolCall>, Vec<ToolCall>) {
        let mut run = Vec::with_capacity(calls.len());
        let mut repeated = Vec::new();
        for call in calls {
            let made = self.made.entry(key(&call)).or_default();
            if max_repeats > 0 && *made >= max_repeats {
                repeated.push(call);
            } else {
                *made += 1;
                run.push(call);
            }
        }
        (run, repeated)
    }
}

/// One call's identity for the count: the SHA-256 of its tool and its arguments (keys
/// in order). A digest, not the arguments: the run's saved state must hold no secret
/// value in clear.
fn key(call: &ToolCall) -> String {
    use sha2::Digest;
    let text = format!(
        "{}\u{0}{}",
        call.name,
        serde_json::Value::Object(call.arguments.clone())
    );
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the model is told for a call it repeated past the bound.
pub(super) fn repeated_note(max_repeats: u32) -> String {
    format!(
        "Not run: this exact call (same tool, same arguments) already ran {max_repeats} time(s) in this run. Use the results you have, change the arguments, or give your final answer."
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn call(id: &str, text: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "echo".into(),
            arguments: serde_json::json!({"text": text})
                .as_object()
                .unwrap()
                .clone(),
        }
    }

    #[test]
    fn repeats_past_the_bound_within_and_across_turns_are_held_back() {
        let mut marks = LoopMarks::default();
        let (run, held) = marks.admit(vec![call("1", "a"), call("2", "a"), call("3", "b")], 2);
        assert_eq!((run.len(), held.len()), (3, 0));
        let (run, held) = marks.admit(vec![call("4", "a"), call("5", "b")], 2);
        assert_eq!(run.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["5"]);
        assert_eq!(held[0].id, "4");
        // 0: no bound.
        let (run, held) = marks.admit(vec![call("6", "a"); 5], 0);
        assert_eq!((run.len(), held.len()), (5, 0));
    }

    #[test]
    fn saved_marks_read_back() {
        let mut marks = LoopMarks::default();
        marks.admit(vec![call("1", "a")], 3);
        marks.continued = 1;
        let back: LoopMarks =
            serde_json::from_value(serde_json::to_value(&marks).unwrap()).unwrap();
        assert_eq!(back, marks);
        assert!(LoopMarks::default().is_empty());
    }
}
