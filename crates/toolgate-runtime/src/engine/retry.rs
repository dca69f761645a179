//! A call tried again as its tool's retry policy says: only a tool that is read-only or
//! declared idempotent, only for the failures the policy names (a timeout, a failed or
//! dropped connection, a 429, a 5xx), waiting the backoff or the server's `Retry-After`
//! between tries. An MCP server that dropped is started again by the next try (the
//! tool's `ready`). Each try is kept for the call's record.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::Cancel;
use toolgate_store::Attempt;
use toolgate_tool::retry::{Failure, failure_of};
use toolgate_tool::{LoadedTool, ToolContext, ToolError, ToolOutput};

/// Bytes of a failed try's output kept in its attempt.
const ERROR_CAP: usize = 300;

/// What the tries of one call gave: the last try's result, and every try when there
/// was more than one.
pub(super) struct Tried {
    pub result: Result<ToolOutput, ToolError>,
    pub attempts: Vec<Attempt>,
}

/// Runs the call, and again while its policy says so; `cancel` cuts a try or a wait
/// short (the call ends cancelled).
pub(super) async fn invoke(
    tool: &LoadedTool,
    ctx: &ToolContext,
    args: Map<String, Value>,
    cancel: &Cancel,
) -> Tried {
    let policy = tool
        .policy
        .retry
        .as_ref()
        .filter(|p| p.applies(tool.spec.read_only));
    let Some(policy) = policy else {
        return Tried {
            result: once(tool, ctx, args, cancel).await,
            attempts: Vec::new(),
        };
    };
    let mut attempts = Vec::new();
    for n in 1u32.. {
        let start = Instant::now();
        // Nothing a previous try noted counts for this one.
        ctx.take_noted();
        let result = once(tool, ctx, args.clone(), cancel).await;
        let failure = failure_of(&result, ctx.take_noted());
        let wait = failure.as_ref().and_then(|f| policy.wait_before(n + 1, f));
        attempts.push(attempt(n, &result, failure.as_ref(), start.elapsed(), wait));
        let Some(wait) = wait else {
            return finished(result, attempts);
        };
        tracing::warn!(
            tool = %tool.spec.name,
            attempt = n,
            wait_ms = wait.as_millis() as u64,
            failure = failure.map_or("", |f| f.on.as_str()),
            "tool call failed; trying again"
        );
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => return finished(Err(ToolError::Cancelled), attempts),
        }
    }
    // `1u32..` ends only past u32::MAX tries, which no policy allows.
    finished(Err(ToolError::Execution("too many tries".into())), attempts)
}

/// One try, cut short by `cancel`.
async fn once(
    tool: &LoadedTool,
    ctx: &ToolContext,
    args: Map<String, Value>,
    cancel: &Cancel,
) -> Result<ToolOutput, ToolError> {
    tokio::select! {
        r = tool.invoke(ctx, args) => r,
        _ = cancel.cancelled() => Err(ToolError::Cancelled),
    }
}

/// The last result, with the tries kept only when there was more than one.
fn finished(result: Result<ToolOutput, ToolError>, mut attempts: Vec<Attempt>) -> Tried {
    if attempts.len() < 2 {
        attempts.clear();
    }
    Tried { result, attempts }
}

/// One try as its record keeps it.
fn attempt(
    n: u32,
    result: &Result<ToolOutput, ToolError>,
    failure: Option<&Failure>,
    took: Duration,
    wait: Option<Duration>,
) -> Attempt {
    let outcome = match (result, failure) {
        (_, Some(f)) => f.on.as_str(),
        (Ok(out), None) if !out.is_error => "succeeded",
        _ => "failed",
    };
    let error = match result {
        Ok(out) if out.is_error => Some(capped(out.to_text())),
        Ok(_) => None,
        Err(e) => Some(capped(e.to_string())),
    };
    Attempt {
        attempt: n,
        outcome: outcome.to_string(),
        error,
        duration_ms: took.as_secs_f64() * 1000.0,
        wait_ms: wait.map(|w| w.as_secs_f64() * 1000.0),
    }
}

/// `text` cut to [`ERROR_CAP`] bytes (on a character boundary).
fn capped(mut text: String) -> String {
    if text.len() > ERROR_CAP {
        let mut cut = ERROR_CAP;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}
