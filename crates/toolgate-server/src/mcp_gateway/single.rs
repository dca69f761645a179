//! One `tools/call` as a single-call run, whichever way the client waits for it (held,
//! asked by elicitation, or followed as an MCP task): the run started through the
//! gate, the engine and the record, and the MCP result an ended run reads as.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use super::Gateway;
use toolgate_protocol::identity::{DecisionRule, RunOwner};
use toolgate_protocol::{CallStatus, RunObject, RunStatus};
use toolgate_runtime::agent::Agent;
use toolgate_runtime::run::StartCall;
use toolgate_store::CallQuery;

/// A call to start: which tool, with what, in which conversation, for whom.
pub(super) struct Call<'a> {
    pub gateway: &'a Gateway,
    pub agent: &'a Agent,
    pub conversation: String,
    pub name: &'a str,
    pub arguments: Map<String, Value>,
    /// The caller (`None`: the gateway's owner, else the default tenant).
    pub owner: Option<RunOwner>,
}

/// Starts `call` as a single-call run and drives it until it ends or pauses; returns
/// the run and the rule for who may decide its call, or the error the client reads.
pub(super) async fn start(call: Call<'_>) -> Result<(RunObject, DecisionRule), CallToolResult> {
    let Call {
        gateway,
        agent,
        conversation,
        name,
        arguments,
        owner,
    } = call;
    // Who decides this tool's calls: the agent's rule, with the tool's own.
    let mut rule = agent.decision_rule.clone();
    match gateway
        .runner
        .toolkit_of(agent, gateway.tools_dir.as_deref())
    {
        Err(e) => {
            return Err(error(format!(
                "toolgate cannot load the agent's tools: {e}"
            )));
        }
        Ok(toolkit) => {
            if let Ok(tool) = toolkit.resolve(name) {
                if tool.definition_only() {
                    return Err(error(format!(
                        "'{name}' is a client tool (definition-only): toolgate does not run it, so it is not served over MCP"
                    )));
                }
                rule = rule.with(&tool.rule);
            }
        }
    }
    let id = format!(
        "call_mcp_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let started = gateway
        .runner
        .start_call(StartCall {
            agent: agent.clone(),
            conversation,
            call: toolgate_runtime::engine::call(&id, name, arguments),
            tools_dir: gateway.tools_dir.clone(),
            workspace: gateway.workspace.clone(),
            owner: owner.or_else(|| gateway.owner.clone()),
        })
        .await;
    match started {
        Ok(run) => Ok((run, rule)),
        Err(e) => Err(error(format!("toolgate could not run '{name}': {e}"))),
    }
}

/// The MCP result of an ended single-call run: its output, an error when the call's
/// record says it did not succeed.
pub(super) async fn result(gateway: &Gateway, run: &RunObject) -> CallToolResult {
    if run.status != RunStatus::Completed {
        return error(format!(
            "the call did not finish (run {} is {}): {}",
            run.id,
            run.status.as_str(),
            run.last_error.as_deref().unwrap_or("no reason recorded")
        ));
    }
    let q = CallQuery {
        run_id: Some(run.id.clone()),
        limit: Some(1),
        ..CallQuery::default()
    };
    let record = gateway
        .runner
        .store
        .calls(&q)
        .await
        .map(|page| page.calls.into_iter().next());
    let output = run.output.clone().unwrap_or_default();
    match record {
        Ok(Some(r)) if r.record.status == CallStatus::Succeeded => {
            CallToolResult::success(vec![ContentBlock::text(output)])
        }
        Ok(Some(_)) => error(output),
        Ok(None) => error(format!("run {} ended without a call record", run.id)),
        Err(e) => error(format!("cannot read the call's record: {e}")),
    }
}

/// An error result: the client (and its model) reads the text.
pub(super) fn error(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}
