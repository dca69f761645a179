//! A read-only tool's kept result (`cache:`): looked up before the call takes a slot,
//! kept after it succeeds (with its credentials already masked: nothing secret at rest).
//! The key holds the tenant, the tool and the canonical arguments, and whatever of the
//! run the tool can see and answer by: the user for a tool acting for its user through
//! OAuth, a command tool (it gets `TOOLGATE_USER`) or one whose binding names
//! `${context:user}`; the run or conversation when its binding names them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_tool::cache::{self, ResultCache};
use toolgate_tool::{Entry, LoadedTool, RunContext, ToolOutput};

/// Where a call's result is looked up and kept.
pub(super) struct Kept {
    cache: Arc<dyn ResultCache>,
    key: String,
    tenant: String,
    ttl: Duration,
}

impl Kept {
    /// The plan for this call, when its tool keeps results, a cache is there, and no
    /// argument is a secret (unless the tool allows it).
    pub(super) fn plan(
        cache: Option<&Arc<dyn ResultCache>>,
        tool: &LoadedTool,
        run: &RunContext,
        args: &Map<String, Value>,
    ) -> Option<Kept> {
        let policy = tool.policy.cache.as_ref().filter(|_| tool.spec.read_only)?;
        let cache = cache?;
        if !policy.admits(&tool.schema, args) {
            return None;
        }
        let tenant = run
            .tenant
            .clone()
            .unwrap_or_else(|| toolgate_protocol::identity::DEFAULT_TENANT.to_string());
        let seen = seen_of(tool, run);
        Some(Kept {
            cache: Arc::clone(cache),
            key: cache::key(&tenant, Some(&seen), &tool.spec.name, args),
            tenant,
            ttl: policy.ttl,
        })
    }

    /// The kept output, if any (a store that cannot answer is a miss).
    pub(super) async fn get(&self) -> Option<ToolOutput> {
        self.cache.get(&self.key).await
    }

    /// Keeps `output` when it may be kept.
    pub(super) async fn put(&self, tool: &str, output: &ToolOutput) {
        if let Some(text) = cache::keepable(output) {
            self.cache
                .put(&self.key, &self.tenant, tool, text, self.ttl)
                .await;
        }
    }
}

/// What of the run (besides its tenant) the tool can see and so answer by, as the
/// key's part: `user=...` and, when its binding names them, `run_id=...`,
/// `conversation_id=...`; empty for a tool that sees none of it.
fn seen_of(tool: &LoadedTool, run: &RunContext) -> String {
    let binding = serde_json::to_string(&tool.spec.entry).unwrap_or_default();
    let names = |name: &str| binding.contains(&format!("${{context:{name}}}"));
    let user = names("user")
        || tool.user_oauth().is_some()
        || matches!(&tool.spec.entry, Entry::Command { .. });
    let mut seen = Vec::new();
    for (name, wanted) in [
        ("user", user),
        ("run_id", names("run_id")),
        ("conversation_id", names("conversation_id")),
    ] {
        if wanted {
            seen.push(format!("{name}={}", run.get(name).unwrap_or("")));
        }
    }
    seen.join("\n")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolgate_tool::{Permission, ToolSpec};

    fn tool(entry: Entry) -> LoadedTool {
        let mut spec = ToolSpec::new(
            "t",
            "",
            Permission::Auto,
            serde_json::json!({"type": "object"}),
        );
        spec.entry = entry;
        let schema = toolgate_tool::Schema::compile_full(&spec.parameters).unwrap();
        LoadedTool::new(spec, schema, None, toolgate_tool::Origin::PROGRAM, None)
    }

    #[test]
    fn what_a_tool_can_see_of_the_run_is_in_its_key() {
        let run = RunContext {
            tenant: Some("acme".into()),
            user: Some("ann".into()),
            run_id: Some("run_1".into()),
            conversation_id: Some("conv_1".into()),
        };
        let http = |headers: &[(&str, &str)]| Entry::Http {
            url: "https://x.example/a".into(),
            method: "GET".into(),
            query: Default::default(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: None,
            max_response: None,
            allow_hosts: Vec::new(),
            oauth: None,
            retries: 0,
            backoff: None,
            retry_non_idempotent: false,
            validate: None,
        };
        assert_eq!(seen_of(&tool(http(&[])), &run), "");
        assert_eq!(
            seen_of(&tool(http(&[("X-User", "${context:user}")])), &run),
            "user=ann"
        );
        assert_eq!(
            seen_of(
                &tool(http(&[("X-Conv", "${context:conversation_id}")])),
                &run
            ),
            "conversation_id=conv_1"
        );
        let command = Entry::Command {
            command: "sh".into(),
            args: Vec::new(),
            env: Default::default(),
            max_output: None,
            stream: true,
        };
        assert_eq!(seen_of(&tool(command), &run), "user=ann");
    }
}
