//! An embedding of toolgate: a program that depends on the crates, not the binary. It
//! adds a tool source of its own (a shop's two tools, written in Rust) and a model
//! provider of its own (`shop:rules`, a rule-based stand-in for a real model), drives a
//! run that pauses because placing an order needs a person's approval, approves it,
//! lets the run finish, and reads the call records back from the store.
//!
//! `cargo run -p toolgate-embed-example` prints each step; the test below runs it too.

mod shop;

use std::path::Path;

use toolgate_protocol::{Decision, RunStatus};
use toolgate_runtime::agent::Agent;
use toolgate_runtime::run::{Runner, StartRun};
use toolgate_store::{CallQuery, Store};

/// What the embedding saw, step by step.
#[derive(Debug)]
pub struct Outcome {
    /// The run's status when it paused, and the tools its items wait on.
    pub paused: (RunStatus, Vec<String>),
    /// The run's status and final answer after the approval.
    pub finished: (RunStatus, Option<String>),
    /// Each recorded call: its tool and status.
    pub records: Vec<(String, String)>,
    /// How many orders the shop really placed.
    pub orders: usize,
}

/// Runs the whole embedding in `dir` (its database and workspace), saying each step on
/// `say`.
pub async fn embed(
    dir: &Path,
    say: &mut dyn FnMut(String),
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let shop = shop::Shop::default();
    // The composition root: the standard sources with the shop's asked first, the
    // standard model providers with the shop's beside them, a SQLite store.
    let sources = toolgate_sources::standard().with_first(shop.source());
    let store = Store::open(dir.join("embed.db"))?;
    let mut runner = Runner::new(store, sources);
    runner.models = runner.models.clone().with("shop", shop::RulesProvider);
    let agent = Agent::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("agent.yaml"))?;
    let start = StartRun {
        agent,
        model: None,
        conversation: None,
        message: "Two teas, please.".into(),
        tools_dir: None,
        workspace: Some(dir.to_path_buf()),
        priority: None,
        owner: None,
    };
    let run = runner.start(start).await?;
    let items = run
        .required_action
        .as_ref()
        .map(|a| a.items.clone())
        .unwrap_or_default();
    say(format!(
        "run {} is {}: waiting on {:?}",
        run.id,
        run.status.as_str(),
        items.iter().map(|i| &i.tool).collect::<Vec<_>>()
    ));
    let paused = (run.status, items.iter().map(|i| i.tool.clone()).collect());
    for item in &items {
        say(format!("approving {} {}", item.tool, item.arguments));
        runner
            .decide(&run.id, Some(&item.call_id), Decision::Approve)
            .await?;
    }
    let run = runner.resume(&run.id).await?;
    say(format!(
        "run {} is {}: {}",
        run.id,
        run.status.as_str(),
        run.output.clone().unwrap_or_default()
    ));
    let query = CallQuery {
        run_id: Some(run.id.clone()),
        ..CallQuery::default()
    };
    let records: Vec<(String, String)> = runner
        .store
        .calls(&query)
        .await?
        .calls
        .into_iter()
        .map(|c| (c.record.tool, c.record.status.as_str().to_string()))
        .collect();
    for (tool, status) in &records {
        say(format!("recorded: {tool} {status}"));
    }
    Ok(Outcome {
        paused,
        finished: (run.status, run.output),
        records,
        orders: shop.orders(),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    // A closed pipe (`| head`) ends the printing quietly; the embedding still runs to its end.
    let mut say = |line: String| {
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), "{line}");
    };
    embed(dir.path(), &mut say).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn the_embedding_pauses_for_approval_then_completes_and_records_each_call() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = Vec::new();
        let outcome = embed(dir.path(), &mut |l| lines.push(l)).await.unwrap();
        assert_eq!(
            outcome.paused,
            (RunStatus::RequiresAction, vec!["place_order".to_string()]),
            "{lines:#?}"
        );
        assert_eq!(outcome.finished.0, RunStatus::Completed, "{lines:#?}");
        assert_eq!(
            outcome.finished.1.as_deref(),
            Some("Ordered 2 tea at 3.50 each: 7.00 in all.")
        );
        let mut records = outcome.records.clone();
        records.sort();
        assert_eq!(
            records,
            [
                ("lookup_price".to_string(), "succeeded".to_string()),
                ("place_order".to_string(), "succeeded".to_string())
            ]
        );
        assert_eq!(outcome.orders, 1, "the approved order ran exactly once");
    }
}
