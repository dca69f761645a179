//! Bounded label values: each kind of label (agents, tools, models, ...) keeps the
//! first values it meets, up to a cap, and names every later one `other`, so that no
//! run, argument or misbehaving model can grow the number of series without end.

use std::collections::HashSet;
use std::sync::RwLock;

/// The label value that stands for every value past the cap.
pub const OTHER: &str = "other";

/// The values one kind of label may take.
#[derive(Debug)]
pub struct Vocabulary {
    cap: usize,
    seen: RwLock<HashSet<String>>,
}

impl Vocabulary {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            seen: RwLock::new(HashSet::new()),
        }
    }

    /// `value` when it is known or there is room for it, [`OTHER`] otherwise.
    pub fn label(&self, value: &str) -> String {
        {
            let seen = self.seen.read().unwrap_or_else(|p| p.into_inner());
            if seen.contains(value) {
                return value.to_string();
            }
            if seen.len() >= self.cap {
                return OTHER.to_string();
            }
        }
        let mut seen = self.seen.write().unwrap_or_else(|p| p.into_inner());
        if seen.contains(value) || seen.len() < self.cap {
            seen.insert(value.to_string());
            value.to_string()
        } else {
            OTHER.to_string()
        }
    }
}

/// The model label of a model name: `openai:gpt-4o` -> `gpt-4o`; a scripted model's
/// file is no model's name (`scripted`).
pub fn model_name(model: &str) -> &str {
    match model.split_once(':') {
        Some(("openai", name)) => name,
        Some(("scripted", _)) => "scripted",
        _ => model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_past_the_cap_are_other_and_known_ones_stay() {
        let v = Vocabulary::new(2);
        assert_eq!(v.label("a"), "a");
        assert_eq!(v.label("b"), "b");
        assert_eq!(v.label("c"), OTHER);
        assert_eq!(v.label("a"), "a");
    }

    #[test]
    fn model_labels_drop_the_provider_and_files() {
        assert_eq!(model_name("openai:gpt-4o-mini"), "gpt-4o-mini");
        assert_eq!(model_name("scripted:/tmp/x/replies.yaml"), "scripted");
        assert_eq!(model_name("none"), "none");
    }
}
