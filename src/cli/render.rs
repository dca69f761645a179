//! How a run looks on the terminal: events as they happen (text on stdout, progress on
//! stderr), or one JSON object per line with `--json`; and the run's outcome at the end.

use std::io::Write;

use toolgate::protocol::{Event, RunEvent, RunObject, RunStatus};

/// Prints events in order; remembers whether model text is mid-line.
#[derive(Default)]
pub struct Printer {
    json: bool,
    text_open: bool,
}

impl Printer {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            text_open: false,
        }
    }

    /// Prints one event.
    pub fn event(&mut self, e: &RunEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(e) {
                println!("{line}");
            }
            return;
        }
        if let RunEvent::TextDelta { text, .. } = e {
            print!("{text}");
            let _ = std::io::stdout().flush();
            self.text_open = !text.ends_with('\n');
            return;
        }
        if self.text_open {
            println!();
            self.text_open = false;
        }
        human(e);
    }
}

fn human(e: &RunEvent) {
    let mut err = std::io::stderr().lock();
    match e {
        RunEvent::RunStarted {
            run_id,
            agent,
            model,
            resumed,
            ..
        } => {
            let verb = if *resumed { "continuing" } else { "started" };
            let _ = writeln!(err, "· run {run_id} {verb} (agent {agent}, model {model})");
        }
        RunEvent::TextDelta { .. } | RunEvent::ToolCallParsed { .. } => {}
        RunEvent::ParseProblem { message, .. } => {
            let _ = writeln!(err, "· note: {message}");
        }
        RunEvent::ApprovalRequested { item, .. } => {
            let _ = writeln!(
                err,
                "· {} waits for {}: {} {}",
                item.call_id,
                match item.kind {
                    toolgate::protocol::ItemKind::Approval => "approval",
                    toolgate::protocol::ItemKind::SubmitToolOutput => "the client's output",
                },
                item.tool,
                item.arguments
            );
        }
        RunEvent::ToolResolved {
            call_id,
            tool,
            status,
            output,
            ..
        } => {
            let _ = writeln!(
                err,
                "· {tool} ({call_id}) {}: {}",
                status.as_str(),
                first_line(output)
            );
        }
        RunEvent::ModelRetry {
            attempt,
            wait_ms,
            error,
            ..
        } => {
            let _ = writeln!(
                err,
                "· the model failed (attempt {attempt}): {error}; trying again in {:.1} s",
                *wait_ms as f64 / 1000.0
            );
        }
        RunEvent::Tool {
            event: Event::ToolStarted { call_id, tool, .. },
            ..
        } => {
            let _ = writeln!(err, "· running {tool} ({call_id})");
        }
        RunEvent::Tool {
            event: Event::ToolOutput { .. },
            ..
        } => {}
        RunEvent::Tool {
            event:
                Event::ToolFinished {
                    tool,
                    status,
                    duration_ms,
                    ..
                },
            ..
        } => {
            let _ = writeln!(err, "· {tool} {} in {duration_ms:.0} ms", status.as_str());
        }
        RunEvent::RunRequiresAction { .. }
        | RunEvent::RunCompleted { .. }
        | RunEvent::RunIncomplete { .. }
        | RunEvent::RunFailed { .. }
        | RunEvent::RunCancelled { .. } => {}
    }
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
pub fn outcome(run: &RunObject, json: bool) {
    if json {
        if let Ok(line) = serde_json::to_string(run) {
            println!("{line}");
        }
        return;
    }
    println!();
    let usage = &run.usage;
    let tokens = if usage.total_tokens > 0 {
        format!(", {} tokens", usage.total_tokens)
    } else {
        String::new()
    };
    match run.status {
        RunStatus::RequiresAction => {
            println!(
                "run {} paused: {} item(s) wait (conversation {})",
                run.id,
                run.required_action.as_ref().map_or(0, |r| r.items.len()),
                run.conversation_id
            );
            for item in run.required_action.iter().flat_map(|r| &r.items) {
                println!(
                    "  {}  {}  {}  {}",
                    item.call_id,
                    item.kind.as_str(),
                    item.tool,
                    item.arguments
                );
            }
            println!("continue it with:");
            println!(
                "  toolgate approve {} --call ID [--always] [--args JSON]",
                run.id
            );
            println!("  toolgate deny {} --call ID --reason TEXT", run.id);
            println!("  toolgate submit {} --call ID --output TEXT", run.id);
        }
        status => {
            println!(
                "run {} {} after {} model turn(s){tokens} (conversation {})",
                run.id,
                status.as_str(),
                run.iteration,
                run.conversation_id
            );
            if let Some(e) = &run.last_error {
                println!("  {e}");
            }
        }
    }
}
