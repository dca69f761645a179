//! `toolgate stats`: a conversation's summary, one tool's statistics, or the whole
//! database's, as text or JSON.

use super::Wait;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use toolgate::protocol::Usage;
use toolgate::run::run_object;
use toolgate::store::{CallCounts, Durations, Scope, Store, ToolStats};

use super::calls::show_time;
use super::out::{self, print_json};
use super::{Failure, open_existing_store, table};

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// One conversation's summary.
    #[arg(long, conflicts_with = "tool")]
    conversation: Option<String>,
    /// One tool's statistics.
    #[arg(long, conflicts_with = "limits")]
    tool: Option<String>,
    /// A running server's limiter, live: per limiter and category, what runs, waits,
    /// was refused and timed out (GET /v1/limits on --server).
    #[arg(long, conflicts_with = "conversation")]
    limits: bool,
    /// Tokens and cost of the model requests, summed by conversation, agent, tenant
    /// or key (cost by the price table; see TOOLGATE_PRICES).
    #[arg(long, value_name = "BY", conflicts_with_all = ["conversation", "tool", "limits"])]
    spend_by: Option<String>,
    /// The server `--limits` asks (its API key from TOOLGATE_API_KEY).
    #[arg(
        long,
        env = "TOOLGATE_URL",
        default_value = "http://127.0.0.1:8080",
        value_name = "URL"
    )]
    server: String,
    #[arg(long)]
    json: bool,
}

fn durations(d: &Durations) -> String {
    format!("p50 {:.1} ms, p95 {:.1} ms", d.p50, d.p95)
}

/// `4 (2 succeeded, 2 failed, ...)`: how the calls ended.
fn tally(c: &CallCounts) -> String {
    format!(
        "{} ({} succeeded, {} failed, {} denied, {} timed out, {} cancelled, {} client)",
        c.total_calls,
        c.successful_calls,
        c.failed_calls,
        c.denied_calls,
        c.timeout_calls,
        c.cancelled_calls,
        c.client_calls
    )
}

/// One row per tool; a CACHE HITS column (hits, and their share) when some tool keeps
/// its results.
fn tool_rows(tools: &[ToolStats]) -> String {
    let caches = tools.iter().any(|t| t.cache.is_some());
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            let c = &t.calls;
            let mut row = vec![
                t.tool.clone(),
                c.total_calls.to_string(),
                c.successful_calls.to_string(),
                c.failed_calls.to_string(),
                c.denied_calls.to_string(),
                c.timeout_calls.to_string(),
                c.cancelled_calls.to_string(),
                c.client_calls.to_string(),
                format!("{:.1}%", c.success_rate),
                format!("{:.1}", t.duration_ms.p50),
                format!("{:.1}", t.duration_ms.p95),
            ];
            if caches {
                row.push(t.cache.map_or_else(
                    || "-".to_string(),
                    |k| format!("{} ({:.1}%)", k.hits, k.hit_rate),
                ));
            }
            row
        })
        .collect();
    let mut header = vec![
        "TOOL",
        "CALLS",
        "OK",
        "FAILED",
        "DENIED",
        "TIMEOUT",
        "CANCELLED",
        "CLIENT",
        "SUCCESS",
        "P50 MS",
        "P95 MS",
    ];
    if caches {
        header.push("CACHE HITS");
    }
    table::render(&header, &rows)
}

/// A conversation's summary: its calls, its runs' model usage and its sub-agent trees.
/// `None`: printed as JSON already.
fn conversation(
    store: &Store,
    conv: &str,
    json: bool,
    out: &mut out::Stdout,
) -> Result<Option<String>, Failure> {
    let s = store
        .conversation_summary(conv)
        .wait()?
        .map_err(super::store_failure)?;
    // The conversation's runs and what they asked of the model.
    let runs = store
        .runs(Scope::All, None, Some(conv), 100_000)
        .wait()?
        .map_err(|e| super::run::run_failure(e.into()))?;
    let mut usage = Usage::default();
    for r in &runs {
        usage.add(run_object(r, &[]).usage);
    }
    // Each top run with its sub-agent runs below it, and the totals with them.
    let trees = store
        .conversation_trees(conv)
        .wait()?
        .map_err(|e| super::run::run_failure(e.into()))?;
    let mut totals = toolgate::protocol::TreeTally::default();
    for t in &trees {
        totals.add(&t.totals);
    }
    if json {
        let mut value = serde_json::to_value(&s)
            .map_err(|e| Failure::other(format!("cannot encode the summary: {e}")))?;
        value["runs"] = runs.len().into();
        value["model_usage"] = serde_json::to_value(usage).unwrap_or_default();
        value["spend"] = spend_of(store, conv)?;
        value["run_trees"] = serde_json::to_value(&trees).unwrap_or_default();
        value["totals_with_subagents"] = serde_json::to_value(totals).unwrap_or_default();
        return print_json(out, &value, false).map(|()| None);
    }
    if s.calls.total_calls == 0 && runs.is_empty() {
        return Err(Failure::bad_input(format!(
            "no calls recorded for conversation '{conv}' in {}",
            store.path().display()
        )));
    }
    let mut text = format!(
        "conversation {}\n  calls:    {}\n  success:  {:.1}%\n  duration: {}\n  first:    {}\n  last:     {}\n\n",
        s.conversation_id,
        tally(&s.calls),
        s.calls.success_rate,
        durations(&s.duration_ms),
        s.first_call_at.map(show_time).unwrap_or_default(),
        s.last_call_at.map(show_time).unwrap_or_default(),
    );
    if !runs.is_empty() {
        text.insert_str(
            text.len() - 1,
            &format!(
                "  runs:     {} ({} model call(s), {} tokens: {} prompt + {} completion)\n",
                runs.len(),
                usage.model_calls,
                usage.total_tokens,
                usage.prompt_tokens,
                usage.completion_tokens
            ),
        );
    }
    let rows: Vec<Vec<String>> = s
        .tool_usage
        .iter()
        .map(|(k, v)| vec![k.clone(), v.to_string()])
        .collect();
    text.push_str(&table::render(&["TOOL", "CALLS"], &rows));
    if trees.iter().any(|t| !t.children.is_empty()) {
        text.push_str("\nsub-agents (agent, run, status, its own calls, success, tokens, time)\n");
        for t in &trees {
            for l in super::tree::render(t).lines() {
                text.push_str(&format!("  {l}\n"));
            }
        }
        text.push_str(&format!(
            "  with sub-agents: {}\n",
            super::tree::tally(&totals)
        ));
    }
    Ok(Some(text))
}

/// A conversation's spend: its model requests' tokens and cost (`cost_usd` exact).
fn spend_of(store: &Store, conv: &str) -> Result<serde_json::Value, Failure> {
    let filter = toolgate::store::SpendFilter {
        conversation: Some(conv.to_string()),
        ..Default::default()
    };
    let spend = store.spend(&filter).wait()?.map_err(super::store_failure)?;
    let mut v = serde_json::to_value(spend).unwrap_or_default();
    v["cost_usd"] = toolgate::protocol::budget::usd(spend.cost_nanos).into();
    Ok(v)
}

/// `toolgate stats`.
pub fn run(args: StatsArgs, db: &Path) -> Result<ExitCode, Failure> {
    if args.limits {
        let key = std::env::var(super::environment::API_KEY).ok();
        return super::stats_limits::show(&args.server, key.as_deref(), args.json);
    }
    let store = open_existing_store(db)?;
    if let Some(by) = &args.spend_by {
        super::stats_spend::show(&store, by, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = out::stdout();
    let text = if let Some(conv) = &args.conversation {
        match conversation(&store, conv, args.json, &mut out)? {
            Some(text) => text,
            None => return Ok(ExitCode::SUCCESS),
        }
    } else if let Some(tool) = &args.tool {
        let t = store
            .tool_stats(Scope::All, tool)
            .wait()?
            .map_err(super::store_failure)?;
        if args.json {
            return print_json(&mut out, &t, false).map(|()| ExitCode::SUCCESS);
        }
        tool_rows(std::slice::from_ref(&t))
    } else {
        let g = store
            .global_stats(Scope::All)
            .wait()?
            .map_err(super::store_failure)?;
        if args.json {
            return print_json(&mut out, &g, false).map(|()| ExitCode::SUCCESS);
        }
        format!(
            "all {} conversation(s)\n  calls:    {}\n  success:  {:.1}%\n  duration: {}\n\n{}",
            g.conversations,
            tally(&g.calls),
            g.calls.success_rate,
            durations(&g.duration_ms),
            tool_rows(&g.tools)
        )
    };
    out.write_all(text.as_bytes()).map_err(out::write_failure)?;
    Ok(ExitCode::SUCCESS)
}
