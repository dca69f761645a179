//! `toolgate calls`: the recorded calls, filtered and paged, as a table or JSON.

use super::Wait;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use toolgate::protocol::CallStatus;
use toolgate::store::CallQuery;

use super::out::{self, print_json};
use super::{Failure, open_existing_store, table};

#[derive(Args, Debug)]
pub struct CallsArgs {
    #[arg(long)]
    conversation: Option<String>,
    #[arg(long)]
    run: Option<String>,
    #[arg(long)]
    tool: Option<String>,
    /// succeeded, failed, denied, timeout, cancelled or client.
    #[arg(long)]
    status: Option<String>,
    /// From this time on (RFC 3339, e.g. 2026-11-22T10:00:00Z, or unix milliseconds).
    #[arg(long)]
    since: Option<String>,
    /// Before this time.
    #[arg(long)]
    until: Option<String>,
    /// Records per page.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Records to skip.
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// Newest first.
    #[arg(long)]
    newest: bool,
    #[arg(long)]
    json: bool,
}

/// A time given on the command line, as unix milliseconds.
pub fn parse_time(s: &str) -> Result<i64, Failure> {
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    s.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|e| {
            Failure::bad_input(format!(
                "'{s}' is not a time (RFC 3339 or unix milliseconds): {e}"
            ))
        })
}

/// Unix milliseconds as `2026-11-22 10:00:00.123` (UTC).
pub fn show_time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_else(|_| ms.to_string())
}

pub fn run(args: CallsArgs, db: &Path) -> Result<ExitCode, Failure> {
    let status = match &args.status {
        None => None,
        Some(s) => Some(s.parse::<CallStatus>().map_err(|_| {
            Failure::bad_input(format!(
                "unknown status '{s}' (one of: succeeded, failed, denied, timeout, cancelled, client)"
            ))
        })?),
    };
    let query = CallQuery {
        conversation_id: args.conversation,
        run_id: args.run,
        tool: args.tool,
        status,
        since: args.since.as_deref().map(parse_time).transpose()?,
        until: args.until.as_deref().map(parse_time).transpose()?,
        limit: Some(args.limit),
        offset: args.offset,
        newest_first: args.newest,
        tenant: super::tenant().map(str::to_string),
    };
    let store = open_existing_store(db)?;
    let page = store.calls(&query).wait()?.map_err(super::store_failure)?;
    let mut out = out::stdout();
    if args.json {
        print_json(&mut out, &page, false)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = page
        .calls
        .iter()
        .map(|c| {
            let r = &c.record;
            let detail = r
                .error_message
                .clone()
                .or_else(|| r.result.clone())
                .unwrap_or_default();
            let detail: String = detail.replace('\n', " ").chars().take(60).collect();
            vec![
                c.id.to_string(),
                show_time(r.started_at),
                r.conversation_id.clone(),
                r.tool.clone(),
                r.status.as_str().to_string(),
                format!("{:.1}", r.duration_ms),
                detail,
            ]
        })
        .collect();
    let mut text = table::render(
        &[
            "ID",
            "STARTED (UTC)",
            "CONVERSATION",
            "TOOL",
            "STATUS",
            "MS",
            "RESULT / ERROR",
        ],
        &rows,
    );
    let shown_to = page.offset + page.calls.len();
    text.push_str(&format!(
        "{} of {} call(s) shown ({}-{})\n",
        page.calls.len(),
        page.total,
        if page.calls.is_empty() {
            0
        } else {
            page.offset + 1
        },
        shown_to
    ));
    out.write_all(text.as_bytes()).map_err(out::write_failure)?;
    Ok(ExitCode::SUCCESS)
}
