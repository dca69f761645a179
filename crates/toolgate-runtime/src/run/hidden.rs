//! Hidden tools (`hidden: true` in a tool file): their calls are recorded and their
//! results go to the model, but their events (`tool_call.parsed`, `tool.started`,
//! `tool.output`, `tool.finished`, `tool.resolved`) are left out of what a run streams,
//! so neither `--json`, SSE nor the command line's output shows them. A hidden call
//! that waits for approval is still shown: a person has to see what they decide.

use std::collections::HashSet;

use tokio::sync::mpsc::unbounded_channel;

use super::{Live, Runner};
use toolgate_protocol::{RunEvent, events};

/// What one run leaves out of its events.
struct Hiding {
    run_id: String,
    /// The hidden tools of the run's toolkit.
    tools: HashSet<String>,
    /// Calls of those tools seen so far (a streamed part names only its call).
    calls: HashSet<String>,
}

impl Hiding {
    /// Whether `event` may be shown.
    fn shows(&mut self, event: &RunEvent) -> bool {
        if event.run_id() != self.run_id {
            // A sub-agent's run: its own toolkit decides.
            return true;
        }
        let (call, tool) = match event {
            RunEvent::ToolCallParsed(events::ToolCallParsed { call_id, tool, .. })
            | RunEvent::ToolResolved(events::ToolResolved { call_id, tool, .. })
            | RunEvent::ToolStarted(events::ToolStarted { call_id, tool, .. })
            | RunEvent::ToolFinished(events::ToolFinished { call_id, tool, .. }) => {
                (call_id, Some(tool))
            }
            RunEvent::ToolOutput(events::ToolOutputEvent { call_id, .. }) => (call_id, None),
            _ => return true,
        };
        if tool.is_some_and(|t| self.tools.contains(t)) {
            self.calls.insert(call.clone());
            return false;
        }
        !self.calls.contains(call)
    }
}

impl Runner {
    /// This runner, or (when the run's toolkit has hidden tools and someone follows
    /// the events) a clone whose events pass a filter that leaves the hidden calls out.
    /// The filter keeps the events' order; it ends once the clone and its copies drop.
    pub(super) fn hiding(&self, live: &Live) -> Runner {
        // Every tool of the toolkit, offered or not (a refused call is hidden too).
        let tools: HashSet<String> = live
            .toolkit
            .names()
            .iter()
            .filter_map(|n| live.toolkit.resolve(n).ok())
            .filter(|t| t.spec.hidden)
            .map(|t| t.spec.name.clone())
            .collect();
        let Some(out) = self.events.clone().filter(|_| !tools.is_empty()) else {
            return self.clone();
        };
        let mut hiding = Hiding {
            run_id: live.run_id.clone(),
            tools,
            calls: HashSet::new(),
        };
        let (tx, mut rx) = unbounded_channel::<RunEvent>();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if hiding.shows(&event) {
                    let _ = out.send(event);
                }
            }
        });
        self.with_events(tx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::sync::mpsc::UnboundedSender;
    use toolgate_protocol::{CallStatus, Event};
    use toolgate_tool::Part;

    /// A sender whose events pass a filter hiding `hidden` in `run_id`.
    fn filtered(
        run_id: &str,
        hidden: &[&str],
        out: UnboundedSender<RunEvent>,
    ) -> impl FnMut(RunEvent) {
        let mut hiding = Hiding {
            run_id: run_id.to_string(),
            tools: hidden.iter().map(|s| s.to_string()).collect(),
            calls: HashSet::new(),
        };
        move |e| {
            if hiding.shows(&e) {
                let _ = out.send(e);
            }
        }
    }

    fn tool(run: &str, event: Event) -> RunEvent {
        event.in_run(run.into())
    }

    #[test]
    fn a_hidden_calls_events_are_left_out_and_the_rest_kept_in_order() {
        let (tx, mut rx) = unbounded_channel();
        let mut send = filtered("run_a", &["secretive"], tx);
        let started = |id: &str, t: &str| Event::ToolStarted {
            call_id: id.into(),
            tool: t.into(),
            conversation_id: "c".into(),
        };
        let part = |id: &str| Event::ToolOutput {
            call_id: id.into(),
            part: Part::Text { text: "x".into() },
        };
        send(tool("run_a", started("c1", "secretive")));
        send(tool("run_a", started("c2", "open")));
        send(tool("run_a", part("c1")));
        send(tool("run_a", part("c2")));
        send(tool(
            "run_a",
            Event::ToolFinished {
                call_id: "c1".into(),
                tool: "secretive".into(),
                status: CallStatus::Succeeded,
                duration_ms: 1.0,
                error_kind: None,
            },
        ));
        // A sub-agent's tool of the same name is its own business.
        send(tool("run_child", started("c9", "secretive")));
        send(RunEvent::RunCompleted(events::RunCompleted {
            run_id: "run_a".into(),
        }));
        let mut seen = Vec::new();
        while let Ok(e) = rx.try_recv() {
            seen.push(format!("{} {}", e.name(), e.run_id()));
        }
        assert_eq!(
            seen,
            [
                "tool.started run_a",
                "tool.output run_a",
                "tool.started run_child",
                "run.completed run_a"
            ]
        );
    }
}
