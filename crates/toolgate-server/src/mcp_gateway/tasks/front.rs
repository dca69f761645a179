//! What the gateway answers itself and what it leaves to rmcp: the task methods and
//! task-augmented `tools/call` are answered here; `initialize` and `tools/list` go to
//! rmcp, and their answers get the task capability (`capabilities.tasks`) and each
//! tool's `execution.taskSupport`, which rmcp's model has no field for.

use serde_json::{Value, json};

/// A message from the client, sorted.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A request the gateway answers itself: its id, method and params.
    Task {
        id: Value,
        method: String,
        params: Value,
    },
    /// A message for rmcp; the answer to it needs `patch` (when some).
    Rmcp { id: Value, patch: Option<Patch> },
}

/// Which answer of rmcp gets task support added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patch {
    Initialize,
    ToolsList,
}

/// The task methods the gateway answers.
const TASK_METHODS: [&str; 4] = ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"];

/// Sorts one JSON-RPC message from the client.
pub fn classify(message: &Value) -> Inbound {
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let method = message.get("method").and_then(Value::as_str);
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let is_request = !id.is_null();
    match method {
        Some(m) if is_request && TASK_METHODS.contains(&m) => Inbound::Task {
            id,
            method: m.to_string(),
            params,
        },
        Some("tools/call") if is_request && params.get("task").is_some_and(Value::is_object) => {
            Inbound::Task {
                id,
                method: "tools/call".into(),
                params,
            }
        }
        Some("initialize") if is_request => Inbound::Rmcp {
            id,
            patch: Some(Patch::Initialize),
        },
        Some("tools/list") if is_request => Inbound::Rmcp {
            id,
            patch: Some(Patch::ToolsList),
        },
        _ => Inbound::Rmcp { id, patch: None },
    }
}

/// Adds task support to rmcp's answer `message` (a successful one; errors pass).
pub fn patch(kind: Patch, message: &mut Value) {
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return;
    };
    match kind {
        Patch::Initialize => {
            if let Some(caps) = result
                .get_mut("capabilities")
                .and_then(Value::as_object_mut)
            {
                caps.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
        }
        Patch::ToolsList => {
            let tools = result.get_mut("tools").and_then(Value::as_array_mut);
            for tool in tools.into_iter().flatten() {
                if let Some(t) = tool.as_object_mut() {
                    t.insert("execution".into(), json!({"taskSupport": "optional"}));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn task_requests_are_ours_and_the_rest_goes_to_rmcp() {
        let ours = classify(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x", "task": {"ttl": 5}}}),
        );
        assert!(matches!(ours, Inbound::Task { ref method, .. } if method == "tools/call"));
        let held = classify(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "x"}}),
        );
        assert_eq!(
            held,
            Inbound::Rmcp {
                id: json!(4),
                patch: None
            }
        );
        let get = classify(
            &json!({"jsonrpc": "2.0", "id": "a", "method": "tasks/get", "params": {"taskId": "t"}}),
        );
        assert!(matches!(get, Inbound::Task { ref method, .. } if method == "tasks/get"));
        let note = classify(&json!({"jsonrpc": "2.0", "method": "tasks/get"}));
        assert_eq!(
            note,
            Inbound::Rmcp {
                id: Value::Null,
                patch: None
            }
        );
        let init =
            classify(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}));
        assert_eq!(
            init,
            Inbound::Rmcp {
                id: json!(0),
                patch: Some(Patch::Initialize)
            }
        );
    }

    #[test]
    fn answers_get_the_task_capability_and_each_tool_its_task_support() {
        let mut init =
            json!({"jsonrpc": "2.0", "id": 0, "result": {"capabilities": {"tools": {}}}});
        patch(Patch::Initialize, &mut init);
        assert_eq!(
            init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
            json!({})
        );
        let mut list =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a"}, {"name": "b"}]}});
        patch(Patch::ToolsList, &mut list);
        assert_eq!(
            list["result"]["tools"][1]["execution"]["taskSupport"],
            "optional"
        );
        let mut failed = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "no"}});
        patch(Patch::ToolsList, &mut failed);
        assert!(failed.get("result").is_none());
    }
}
