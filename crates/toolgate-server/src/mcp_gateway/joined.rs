//! The calls a session holds, by tool and exact arguments, so that a client retrying
//! an identical call while the first is held (a model told "an error occurred, try
//! again") joins the held run instead of adding a second pending write. The run is
//! cancelled only when the last request waiting on it gives up.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

/// The held calls of one session.
#[derive(Default)]
pub(super) struct HeldCalls {
    by_call: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    run_id: String,
    waiting: usize,
}

/// What identifies a call for joining: the tool and its arguments, keys sorted.
pub(super) fn call_key(tool: &str, arguments: &Map<String, Value>) -> String {
    format!(
        "{tool}\u{0}{}",
        canonical(&Value::Object(arguments.clone()))
    )
}

fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&m[k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

impl HeldCalls {
    /// The run held for `key`, now with one more request waiting on it.
    pub fn join(&self, key: &str) -> Option<String> {
        let mut map = self.by_call.lock().ok()?;
        let entry = map.get_mut(key)?;
        entry.waiting += 1;
        Some(entry.run_id.clone())
    }

    /// `run_id` is held for `key`, with its first request waiting.
    pub fn hold(&self, key: &str, run_id: &str) {
        if let Ok(mut map) = self.by_call.lock() {
            map.insert(
                key.to_string(),
                Entry {
                    run_id: run_id.to_string(),
                    waiting: 1,
                },
            );
        }
    }

    /// One request stopped waiting on `key`; true when it was the last one (the hold
    /// is then forgotten).
    pub fn leave(&self, key: &str) -> bool {
        let Ok(mut map) = self.by_call.lock() else {
            return true;
        };
        match map.get_mut(key) {
            Some(entry) if entry.waiting > 1 => {
                entry.waiting -= 1;
                false
            }
            Some(_) => {
                map.remove(key);
                true
            }
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn an_identical_call_joins_and_the_last_to_leave_says_so() {
        let held = HeldCalls::default();
        let a = json!({"path": "a.txt", "content": "x"});
        let b = json!({"content": "x", "path": "a.txt"});
        let key = call_key("write_file", a.as_object().unwrap());
        assert_eq!(key, call_key("write_file", b.as_object().unwrap()));
        assert_ne!(key, call_key("write_file", &Map::new()));
        assert_eq!(held.join(&key), None);
        held.hold(&key, "run_1");
        assert_eq!(held.join(&key).as_deref(), Some("run_1"));
        assert!(!held.leave(&key));
        assert!(held.leave(&key));
        assert_eq!(held.join(&key), None);
    }
}
