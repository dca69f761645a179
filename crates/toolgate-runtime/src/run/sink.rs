//! The sink a model streams into during one turn: text goes through the streaming
//! parser, so the person watching sees prose as `text.delta` events and calls as
//! `tool_call.parsed` events the moment each one is complete.

use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use toolgate_model::ReplySink;
use toolgate_parse::{NativeCalls, ParseOptions, ParsedTurn, StreamEvent, StreamParser, collect};
use toolgate_protocol::{RunEvent, events};

pub(crate) struct TurnSink<'a> {
    run_id: &'a str,
    events: Option<&'a UnboundedSender<RunEvent>>,
    opts: ParseOptions,
    parser: StreamParser,
    turn: ParsedTurn,
}

impl<'a> TurnSink<'a> {
    pub(crate) fn new(
        run_id: &'a str,
        events: Option<&'a UnboundedSender<RunEvent>>,
        opts: ParseOptions,
    ) -> Self {
        Self {
            run_id,
            events,
            parser: StreamParser::new(opts.clone()),
            opts,
            turn: ParsedTurn::default(),
        }
    }

    fn emit(&self, event: impl Into<RunEvent>) {
        if let Some(tx) = self.events {
            let _ = tx.send(event.into());
        }
    }

    fn take(&mut self, events: Vec<StreamEvent>) {
        for event in events {
            let run_id = self.run_id.to_string();
            match &event {
                StreamEvent::Text(text) => self.emit(events::TextDelta {
                    run_id,
                    text: text.clone(),
                }),
                StreamEvent::Call(call) => {
                    self.emit(events::ToolCallParsed {
                        run_id,
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        // Secret values never leave in an event.
                        arguments: serde_json::Value::Object(
                            match self.opts.schemas.get(&call.name) {
                                Some(schema) => {
                                    toolgate_tool::secrets::mask_args(schema, &call.arguments)
                                }
                                None => call.arguments.clone(),
                            },
                        ),
                    })
                }
                StreamEvent::Problem(p) => self.emit(events::ParseProblem {
                    run_id,
                    message: p.message.clone(),
                }),
            }
            collect(&mut self.turn, std::iter::once(event));
        }
    }

    /// Ends the turn: the native calls join the text's, and the whole turn is returned.
    pub(crate) fn finish(mut self, native: NativeCalls) -> ParsedTurn {
        let parser = std::mem::replace(&mut self.parser, StreamParser::new(self.opts.clone()));
        let events = parser.finish_native(native);
        self.take(events);
        self.turn
    }
}

impl ReplySink for TurnSink<'_> {
    fn text(&mut self, delta: &str) {
        let events = self.parser.feed(delta);
        self.take(events);
    }

    fn retrying(&mut self, attempt: u32, wait: Duration, error: &str) {
        self.emit(events::ModelRetry {
            run_id: self.run_id.to_string(),
            attempt,
            wait_ms: wait.as_millis() as u64,
            error: error.to_string(),
        });
        self.parser = StreamParser::new(self.opts.clone());
        self.turn = ParsedTurn::default();
    }
}
