//! A recorded (or live) SSE stream of chat.completion.chunk objects, read line by line
//! in chunks of any size: content deltas go to the text parser, tool-call deltas to
//! the native accumulator.

use serde_json::Value;

use super::native::NativeCalls;
use super::types::{Problem, ProblemKind};

/// What one line of the stream carried.
#[derive(Debug, Default)]
pub(crate) struct LineOut {
    pub content: String,
    /// The delta's `reasoning_content` (or `reasoning`).
    pub reasoning: Option<String>,
    pub problem: Option<Problem>,
}

/// Splits a byte stream into SSE lines and reads each `data:` line.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    line: String,
    /// Absolute offset of the start of `line`.
    offset: usize,
    done: bool,
}

impl SseReader {
    /// Feeds text; calls `each` with what every complete line carried.
    pub(crate) fn feed(
        &mut self,
        chunk: &str,
        calls: &mut NativeCalls,
        mut each: impl FnMut(LineOut),
    ) {
        let mut rest = chunk;
        while let Some(nl) = rest.find('\n') {
            self.line.push_str(&rest[..nl]);
            rest = &rest[nl + 1..];
            let line = std::mem::take(&mut self.line);
            let out = self.read_line(&line, calls);
            self.offset += line.len() + 1;
            each(out);
        }
        self.line.push_str(rest);
    }

    pub(crate) fn finish(&mut self, calls: &mut NativeCalls) -> LineOut {
        let line = std::mem::take(&mut self.line);
        self.read_line(&line, calls)
    }

    fn read_line(&mut self, line: &str, calls: &mut NativeCalls) -> LineOut {
        let line = line.trim_end_matches('\r');
        let mut out = LineOut::default();
        let Some(data) = line.strip_prefix("data:") else {
            let known = line.is_empty()
                || line.starts_with(':')
                || line.starts_with("event:")
                || line.starts_with("id:")
                || line.starts_with("retry:");
            if !known {
                out.problem = Some(Problem::new(
                    ProblemKind::InvalidChunk,
                    self.offset,
                    format!("not an SSE line: {}", super::block::short(line)),
                ));
            }
            return out;
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return out;
        }
        if self.done || data.is_empty() {
            return out;
        }
        let chunk = match serde_json::from_str::<Value>(data) {
            Ok(v) => v,
            Err(e) => {
                out.problem = Some(Problem::new(
                    ProblemKind::InvalidChunk,
                    self.offset,
                    format!("a data line is not JSON ({e})"),
                ));
                return out;
            }
        };
        if let Some(err) = chunk.get("error") {
            out.problem = Some(Problem::new(
                ProblemKind::InvalidChunk,
                self.offset,
                format!("the stream reported an error: {err}"),
            ));
            return out;
        }
        let Some(delta) = chunk
            .get("choices")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("delta"))
        else {
            return out;
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            out.content.push_str(text);
        }
        out.reasoning = super::reasoning::native_reasoning(delta).map(str::to_string);
        if let Some(list) = delta.get("tool_calls").and_then(Value::as_array) {
            for (i, call) in list.iter().enumerate() {
                calls.delta_json(i, call, self.offset);
            }
        }
        if let Some(legacy) = delta.get("function_call").filter(|v| v.is_object()) {
            calls.delta_json(
                0,
                &serde_json::json!({ "index": 0, "function": legacy }),
                self.offset,
            );
        }
        out
    }
}
