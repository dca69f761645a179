//! The sink a model streams into during one turn: text goes through the streaming
//! parser, so the person watching sees prose as `text.delta` events and calls as
//! `tool_call.parsed` events the moment each one is complete, and what the model thinks
//! (written in its text, or sent apart by the server) as `reasoning.delta` events. An
//! answer with no call in any dialect is read once more for bare JSON calls of the
//! agent's tools, outside its reasoning.

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
    reading: Reading,
    /// The whole text of the answer, for the bare-call reading at its end.
    raw: String,
    /// How much reasoning the server sent apart from the text (the next piece's start).
    native_reasoning: usize,
}

/// How the text of an answer is read for calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Not at all: a native-mode agent with `dialect: none`.
    Plain,
    /// With the dialect; an answer with no call then as bare JSON calls, prose before
    /// the calls allowed when `trailing` (native mode).
    Calls { trailing: bool },
}

impl<'a> TurnSink<'a> {
    pub(crate) fn new(
        run_id: &'a str,
        events: Option<&'a UnboundedSender<RunEvent>>,
        opts: ParseOptions,
        reading: Reading,
    ) -> Self {
        Self {
            run_id,
            events,
            parser: StreamParser::new(opts.clone()),
            opts,
            turn: ParsedTurn::default(),
            reading,
            raw: String::new(),
            native_reasoning: 0,
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
                StreamEvent::Reasoning(r) => self.emit(events::ReasoningDelta {
                    run_id,
                    text: r.text.clone(),
                }),
                StreamEvent::Call(call) => self.parsed(call),
                StreamEvent::Problem(p) => self.emit(events::ParseProblem {
                    run_id,
                    message: p.message.clone(),
                }),
            }
            collect(&mut self.turn, std::iter::once(event));
        }
    }

    /// The `tool_call.parsed` event of `call`; secret values never leave in an event.
    fn parsed(&self, call: &toolgate_parse::ToolCall) {
        self.emit(events::ToolCallParsed {
            run_id: self.run_id.to_string(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: serde_json::Value::Object(match self.opts.schemas.get(&call.name) {
                Some(schema) => toolgate_tool::secrets::mask_args(schema, &call.arguments),
                None => call.arguments.clone(),
            }),
        });
    }

    /// Ends the turn: the native calls join the text's, and the whole turn is returned.
    pub(crate) fn finish(mut self, native: NativeCalls) -> ParsedTurn {
        let had_native = !native.is_empty();
        let parser = std::mem::replace(&mut self.parser, StreamParser::new(self.opts.clone()));
        let events = parser.finish_native(native);
        self.take(events);
        if let Reading::Calls { trailing } = self.reading
            && !had_native
            && self.turn.calls.is_empty()
            && let Some(mut bare) = super::bare_calls::read(self.unthought(), &self.opts, trailing)
        {
            for call in &bare.calls {
                self.parsed(call);
            }
            for p in &bare.problems {
                self.emit(events::ParseProblem {
                    run_id: self.run_id.to_string(),
                    message: p.message.clone(),
                });
            }
            // The earlier reading's problems were about the same text, read otherwise.
            bare.reasoning = std::mem::take(&mut self.turn.reasoning);
            self.turn = bare;
        }
        self.turn
    }
}

impl TurnSink<'_> {
    /// The answer's text without its reasoning, for the bare-call reading.
    fn unthought(&self) -> &str {
        if self.turn.reasoning.is_empty() {
            &self.raw
        } else {
            &self.turn.text
        }
    }
}

impl ReplySink for TurnSink<'_> {
    fn text(&mut self, delta: &str) {
        self.raw.push_str(delta);
        if self.reading == Reading::Plain {
            self.turn.text.push_str(delta);
            self.emit(events::TextDelta {
                run_id: self.run_id.to_string(),
                text: delta.to_string(),
            });
            return;
        }
        let events = self.parser.feed(delta);
        self.take(events);
    }

    fn reasoning(&mut self, delta: &str) {
        let piece = toolgate_parse::Reasoning::new(delta, self.native_reasoning);
        self.native_reasoning = piece.end;
        self.take(vec![StreamEvent::Reasoning(piece)]);
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
        self.raw.clear();
        self.native_reasoning = 0;
    }
}
