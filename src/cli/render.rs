//! How a run looks on the terminal: events as they happen (text on stdout, progress and
//! the model's reasoning, under a `thinking` label, on stderr), or one JSON object per
//! line with `--json`; and the run's outcome at the end.

use std::io::Write;

use toolgate::protocol::{RunEvent, RunObject, RunStatus, events};
use toolgate::tool::ToolOutput;

use super::{Failure, out};

/// Prints events in order; remembers whether model text is mid-line. Writes go through
/// [`out`]: once stdout's reader has gone, events are dropped and the run goes on.
#[derive(Default)]
pub struct Printer {
    json: bool,
    text_open: bool,
    /// The model's reasoning is being shown on stderr (mid-section).
    thinking_open: bool,
    /// The tool of each call that started in the run, for its streamed lines.
    tools: std::collections::HashMap<String, String>,
}

impl Printer {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            ..Self::default()
        }
    }

    /// Prints one event. A failed write of stdout (not a closed pipe: a full disk) is
    /// said once on stderr; the run is not stopped for it.
    pub fn event(&mut self, e: &RunEvent) -> Result<(), Failure> {
        let mut stdout = out::stdout();
        if self.json {
            return out::print_json(&mut stdout, e, false);
        }
        if let RunEvent::ReasoningDelta(events::ReasoningDelta { text, .. }) = e {
            self.thinking(text);
            return Ok(());
        }
        if self.thinking_open {
            self.thinking_open = false;
            let _ = writeln!(out::stderr(), "\n· end of thinking");
        }
        if let RunEvent::TextDelta(events::TextDelta { text, .. }) = e {
            self.text_open = !text.ends_with('\n');
            return stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(out::write_failure);
        }
        if self.text_open {
            self.text_open = false;
            out::print("\n")?;
        }
        match e {
            RunEvent::ToolStarted(events::ToolStarted { call_id, tool, .. }) => {
                self.tools.insert(call_id.clone(), tool.clone());
            }
            RunEvent::ToolOutput(events::ToolOutputEvent { call_id, part, .. }) => {
                // A streamed line, as the tool wrote it, under its tool's name.
                let tool = self.tools.get(call_id).map_or("tool", String::as_str);
                // Several calls of one tool in this run: each line says whose it is.
                let twins = self.tools.values().filter(|t| *t == tool).count() > 1;
                let who = if twins {
                    format!("{tool} ({call_id})")
                } else {
                    tool.to_string()
                };
                let text = ToolOutput {
                    parts: vec![part.clone()],
                    is_error: false,
                }
                .to_text();
                let mut err = out::stderr();
                for line in text.lines() {
                    let _ = writeln!(err, "  {who} │ {line}");
                }
                return Ok(());
            }
            _ => {}
        }
        human(e);
        Ok(())
    }

    /// A piece of the model's reasoning, on stderr, in a section of its own.
    fn thinking(&mut self, text: &str) {
        let mut err = out::stderr();
        if !self.thinking_open {
            self.thinking_open = true;
            if self.text_open {
                self.text_open = false;
                let _ = out::print("\n");
            }
            let _ = writeln!(err, "· thinking:");
        }
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
    }
}

/// Writes the progress line of an event on stderr (none for some).
fn human(e: &RunEvent) {
    let mut err = out::stderr();
    match e {
        RunEvent::RunStarted(events::RunStarted {
            run_id,
            agent,
            model,
            resumed,
            ..
        }) => {
            let verb = if *resumed { "continuing" } else { "started" };
            let _ = writeln!(err, "· run {run_id} {verb} (agent {agent}, model {model})");
        }
        RunEvent::TextDelta(_) | RunEvent::ReasoningDelta(_) | RunEvent::ToolCallParsed(_) => {}
        RunEvent::ParseProblem(events::ParseProblem { message, .. }) => {
            let _ = writeln!(err, "· note: {message}");
        }
        RunEvent::ApprovalRequested(events::ApprovalRequested { item, .. }) => {
            requested(&mut err, item);
        }
        RunEvent::ApprovalExpiring(events::ApprovalExpiring { item, .. }) => {
            let _ = writeln!(
                err,
                "· the approval of {} ({}) expires soon",
                item.call_id, item.tool
            );
        }
        RunEvent::ApprovalExpired(events::ApprovalExpired { item, .. }) => {
            expired(&mut err, item);
        }
        RunEvent::ToolResolved(events::ToolResolved {
            call_id,
            tool,
            status,
            output,
            ..
        }) => {
            let _ = writeln!(
                err,
                "· {tool} ({call_id}) {}: {}",
                status.as_str(),
                first_line(output)
            );
        }
        RunEvent::ModelRetry(events::ModelRetry {
            attempt,
            wait_ms,
            error,
            ..
        }) => {
            let _ = writeln!(
                err,
                "· the model failed (attempt {attempt}): {error}; trying again in {:.1} s",
                *wait_ms as f64 / 1000.0
            );
        }
        RunEvent::ToolStarted(events::ToolStarted { call_id, tool, .. }) => {
            let _ = writeln!(err, "· running {tool} ({call_id})");
        }
        RunEvent::ToolOutput(events::ToolOutputEvent { .. }) => {}
        RunEvent::ContextCompacted(events::ContextCompacted {
            strategy,
            messages,
            tokens_before,
            tokens_after,
            ..
        }) => {
            let _ = writeln!(
                err,
                "· context compacted ({strategy}): {messages} message(s), {tokens_before} -> {tokens_after} tokens"
            );
        }
        RunEvent::ToolFinished(events::ToolFinished {
            tool,
            status,
            duration_ms,
            ..
        }) => {
            let _ = writeln!(err, "· {tool} {} in {duration_ms:.0} ms", status.as_str());
        }
        RunEvent::BudgetReached(events::BudgetReached {
            whose,
            per,
            unit,
            limit,
            spent,
            on_limit,
            ..
        }) => {
            let _ = writeln!(
                err,
                "· budget of {whose} reached: {spent} of {limit} {unit} per {per} ({on_limit})"
            );
        }
        RunEvent::RunRequiresAction(_)
        | RunEvent::RunCompleted(_)
        | RunEvent::RunIncomplete(_)
        | RunEvent::RunFailed(_)
        | RunEvent::RunCancelled(_) => {}
    }
}

/// The line of an item that waits: what for, its call, and the reason it waits.
fn requested(err: &mut impl Write, item: &toolgate::protocol::RequiredItem) {
    let _ = writeln!(
        err,
        "· {} waits for {}: {} {}",
        item.call_id,
        match item.kind {
            toolgate::protocol::ItemKind::Approval => "approval",
            toolgate::protocol::ItemKind::SubmitToolOutput => "the client's output",
            toolgate::protocol::ItemKind::Budget => "an approver to raise a spend limit",
            toolgate::protocol::ItemKind::Authorization => "the user to connect an account",
        },
        item.tool,
        item.arguments
    );
    if let Some(url) = item.arguments.get("consent_url").and_then(|u| u.as_str()) {
        let _ = writeln!(err, "  connect: {url}");
    }
    if let Some(reason) = &item.reason {
        let _ = writeln!(err, "  because {reason}");
    }
}

/// The line of an approval whose deadline passed, with what happened to its call.
fn expired(err: &mut impl Write, item: &toolgate::protocol::RequiredItem) {
    let _ = writeln!(
        err,
        "· the approval of {} ({}) expired: {}",
        item.call_id,
        item.tool,
        item.on_timeout.unwrap_or_default().as_str()
    );
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(160).collect::<String>())
    } else {
        line.to_string()
    }
}

/// Prints how the run stands at the end: the run object with `--json`, otherwise a
/// short summary and, for a paused run, the commands that continue it.
pub fn outcome(run: &RunObject, json: bool) -> Result<(), Failure> {
    if json {
        return out::print_json(&mut out::stdout(), run, false);
    }
    out::print(&summary(run))
}

fn summary(run: &RunObject) -> String {
    let mut text = String::from("\n");
    let mut line = |l: String| {
        text.push_str(&l);
        text.push('\n');
    };
    let usage = &run.usage;
    let tokens = if usage.total_tokens > 0 {
        format!(", {} tokens", usage.total_tokens)
    } else {
        String::new()
    };
    match run.status {
        RunStatus::RequiresAction => {
            line(format!(
                "run {} paused: {} item(s) wait (conversation {})",
                run.id,
                run.required_action.as_ref().map_or(0, |r| r.items.len()),
                run.conversation_id
            ));
            for item in run.required_action.iter().flat_map(|r| &r.items) {
                line(format!(
                    "  {}  {}  {}  {}",
                    item.call_id,
                    item.kind.as_str(),
                    item.tool,
                    item.arguments
                ));
            }
            line("continue it with:".into());
            line(format!(
                "  toolgate approve {} --call ID [--always] [--args JSON]",
                run.id
            ));
            line(format!(
                "  toolgate deny {} --call ID --reason TEXT",
                run.id
            ));
            line(format!(
                "  toolgate submit {} --call ID --output TEXT",
                run.id
            ));
        }
        status => {
            line(format!(
                "run {} {} after {} model turn(s){tokens} (conversation {})",
                run.id,
                status.as_str(),
                run.iteration,
                run.conversation_id
            ));
            if let Some(e) = &run.last_error {
                line(format!("  {e}"));
            }
        }
    }
    text
}
