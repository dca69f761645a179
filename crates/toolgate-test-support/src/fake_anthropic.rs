//! A fake Anthropic Messages API server for the loop's end-to-end tests: each request
//! is recorded (its JSON body and its head) and answered with the next queued reply, or
//! with what a responder makes of it: the documented event sequence (`message_start`,
//! `content_block_start`, `content_block_delta` with `text_delta` / `input_json_delta` /
//! `thinking_delta` / `signature_delta`, `content_block_stop`, `message_delta`,
//! `message_stop`, `ping`, `error`) written chunk by chunk, each event flushed on its
//! own; an error status; or a stream cut off mid-block.

// The fake OpenAI server's request reader.
use crate::fake_openai::request;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// One answer.
pub enum Reply {
    /// These events, each as `event: TYPE` and `data: JSON`.
    Stream(Vec<Value>),
    /// An HTTP error with this status and body.
    Status(u16, String),
    /// These events, then the connection closes: no `message_stop`.
    Cut(Vec<Value>),
}

pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

pub struct FakeAnthropic {
    /// The server's root, as `ANTHROPIC_BASE_URL` takes it.
    pub base_url: String,
    #[allow(
        dead_code,
        reason = "the queue the server task answers from, held with the server"
    )]
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Value>>>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl FakeAnthropic {
    pub async fn start(replies: Vec<Reply>) -> FakeAnthropic {
        Self::launch(replies, None).await
    }

    pub async fn respond(f: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeAnthropic {
        Self::launch(Vec::new(), Some(Arc::new(f))).await
    }

    async fn launch(replies: Vec<Reply>, responder: Option<Responder>) -> FakeAnthropic {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (r, q, h) = (
            Arc::clone(&replies),
            Arc::clone(&requests),
            Arc::clone(&heads),
        );
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let (r, q, h, f) = (
                    Arc::clone(&r),
                    Arc::clone(&q),
                    Arc::clone(&h),
                    responder.clone(),
                );
                tokio::spawn(async move { serve(socket, r, q, h, f).await });
            }
        });
        FakeAnthropic {
            base_url,
            replies,
            requests,
            heads,
        }
    }

    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// Request heads (request line and headers, lower-cased).
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: tokio::net::TcpStream,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Value>>>,
    heads: Arc<Mutex<Vec<String>>>,
    responder: Option<Responder>,
) {
    let Some((head, body)) = request::read(&mut socket).await else {
        return;
    };
    let reply = match &responder {
        Some(f) => Some(f(&body)),
        None => replies.lock().unwrap().pop_front(),
    };
    requests.lock().unwrap().push(body);
    heads.lock().unwrap().push(head);
    match reply {
        None => {
            let msg = r#"{"type":"error","error":{"type":"invalid_request_error","message":"the fake server has no reply left"}}"#;
            let _ = socket
                .write_all(format!("HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{msg}", msg.len()).as_bytes())
                .await;
            let _ = socket.shutdown().await;
        }
        Some(Reply::Status(code, text)) => {
            let _ = socket
                .write_all(format!("HTTP/1.1 {code} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}", text.len()).as_bytes())
                .await;
            let _ = socket.shutdown().await;
        }
        Some(Reply::Stream(events)) | Some(Reply::Cut(events)) => {
            write_events(socket, events).await
        }
    }
}

async fn write_events(mut socket: tokio::net::TcpStream, events: Vec<Value>) {
    let _ = socket
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n")
        .await;
    for e in events {
        let kind = e["type"].as_str().unwrap_or("message").to_string();
        let _ = socket
            .write_all(format!("event: {kind}\ndata: {e}\n\n").as_bytes())
            .await;
        let _ = socket.flush().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let _ = socket.shutdown().await;
}

pub fn ev_message_start(input: u64, cache_read: u64, cache_creation: u64) -> Value {
    json!({"type": "message_start", "message": {
        "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": 1,
                  "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_creation}
    }})
}

pub fn ev_text_start(index: u64) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
}

pub fn ev_text_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

pub fn ev_tool_start(index: u64, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}

pub fn ev_json_delta(index: u64, part: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}})
}

pub fn ev_thinking_start(index: u64) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}})
}

pub fn ev_thinking_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": text}})
}

pub fn ev_signature_delta(index: u64, signature: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}})
}

pub fn ev_block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

pub fn ev_message_delta(stop_reason: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output}})
}

pub fn ev_message_stop() -> Value {
    json!({"type": "message_stop"})
}

pub fn ev_ping() -> Value {
    json!({"type": "ping"})
}

pub fn ev_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// Text in pieces of `piece` bytes, as one text block.
fn text_events(index: u64, text: &str, piece: usize) -> Vec<Value> {
    let mut events = vec![ev_text_start(index)];
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + piece).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        events.push(ev_text_delta(index, &text[start..end]));
        start = end;
    }
    events.push(ev_block_stop(index));
    events
}

/// A tool_use block, its input sent in three fragments.
fn tool_events(index: u64, id: &str, name: &str, input: &Value) -> Vec<Value> {
    let mut events = vec![ev_tool_start(index, id, name)];
    let args = input.to_string();
    let third = args.len() / 3;
    for w in [0, third, 2 * third, args.len()].windows(2) {
        events.push(ev_json_delta(index, &args[w[0]..w[1]]));
    }
    events.push(ev_block_stop(index));
    events
}

/// A whole text answer.
pub fn text_reply(text: &str) -> Reply {
    let mut events = vec![ev_message_start(12, 0, 0), ev_ping()];
    events.extend(text_events(0, text, 4));
    events.push(ev_message_delta("end_turn", 6));
    events.push(ev_message_stop());
    Reply::Stream(events)
}

/// Optional text, then tool_use blocks: (id, name, input).
pub fn tools_reply(text: &str, calls: &[(&str, &str, Value)]) -> Reply {
    Reply::Stream(tools_events(None, text, calls))
}

/// A thinking block (with its signature), optional text, then tool_use blocks.
pub fn thinking_reply(thinking: &str, signature: &str, calls: &[(&str, &str, Value)]) -> Reply {
    Reply::Stream(tools_events(Some((thinking, signature)), "", calls))
}

pub fn tools_events(
    thinking: Option<(&str, &str)>,
    text: &str,
    calls: &[(&str, &str, Value)],
) -> Vec<Value> {
    let mut events = vec![ev_message_start(20, 7, 3)];
    let mut index = 0;
    if let Some((thought, signature)) = thinking {
        events.push(ev_thinking_start(index));
        let half = thought.len() / 2;
        events.push(ev_thinking_delta(index, &thought[..half]));
        events.push(ev_thinking_delta(index, &thought[half..]));
        events.push(ev_signature_delta(index, signature));
        events.push(ev_block_stop(index));
        index += 1;
    }
    if !text.is_empty() {
        events.extend(text_events(index, text, 5));
        index += 1;
    }
    for (id, name, input) in calls {
        events.extend(tool_events(index, id, name, input));
        index += 1;
    }
    events.push(ev_message_delta("tool_use", 9));
    events.push(ev_message_stop());
    events
}
