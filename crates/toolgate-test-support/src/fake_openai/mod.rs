//! A fake OpenAI chat-completions server for the loop's end-to-end tests: each request
//! is recorded (its JSON body) and answered with the next queued reply, an SSE stream
//! written chunk by chunk (each `data:` line flushed on its own) or an error status.
//! Small constructors build the chunks the way OpenAI sends them.

pub(crate) mod request;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// One queued answer.
pub enum Reply {
    /// A streamed completion: these chunk objects, then `data: [DONE]`.
    Stream(Vec<Value>),
    /// An HTTP error with this status and body.
    Status(u16, String),
    /// A stream cut off after these chunks: no finish, no `[DONE]`.
    Cut(Vec<Value>),
    /// The response head, then silence this long before the connection closes.
    Stall(Duration),
}

/// Answers a request (its JSON body) when the server was started with one.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

pub struct FakeOpenAi {
    pub base_url: String,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Value>>>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl FakeOpenAi {
    pub async fn start(replies: Vec<Reply>) -> FakeOpenAi {
        Self::launch(replies, None).await
    }

    /// A server that answers each request with what `f` makes of it (no queue).
    pub async fn respond(f: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeOpenAi {
        Self::launch(Vec::new(), Some(Arc::new(f))).await
    }

    async fn launch(replies: Vec<Reply>, responder: Option<Responder>) -> FakeOpenAi {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
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
                let (r, q, h) = (Arc::clone(&r), Arc::clone(&q), Arc::clone(&h));
                let f = responder.clone();
                tokio::spawn(async move { serve(socket, r, q, h, f).await });
            }
        });
        FakeOpenAi {
            base_url,
            replies,
            requests,
            heads,
        }
    }

    /// The request heads received so far (request line and headers, lower-cased), in
    /// order.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// The JSON bodies received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    pub fn remaining(&self) -> usize {
        self.replies.lock().unwrap().len()
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
            let msg = r#"{"error":{"message":"the fake server has no reply left","type":"invalid_request_error","param":null,"code":null}}"#;
            let _ = socket
                .write_all(format!("HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{msg}", msg.len()).as_bytes())
                .await;
        }
        Some(Reply::Status(code, text)) => {
            let _ = socket
                .write_all(format!("HTTP/1.1 {code} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}", text.len()).as_bytes())
                .await;
        }
        Some(Reply::Stall(wait)) => {
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
                .await;
            let _ = socket.flush().await;
            tokio::time::sleep(wait).await;
        }
        Some(Reply::Cut(chunks)) => {
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
                .await;
            for c in chunks {
                let _ = socket.write_all(format!("data: {c}\n\n").as_bytes()).await;
            }
        }
        Some(Reply::Stream(chunks)) => {
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n")
                .await;
            for c in chunks {
                let _ = socket.write_all(format!("data: {c}\n\n").as_bytes()).await;
                let _ = socket.flush().await;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let _ = socket.write_all(b"data: [DONE]\n\n").await;
            let _ = socket.flush().await;
        }
    }
    let _ = socket.shutdown().await;
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

/// The first chunk: the role.
pub fn ev_role() -> Value {
    chunk(json!({"role": "assistant", "content": ""}), None)
}

/// A piece of text.
pub fn ev_text(text: &str) -> Value {
    chunk(json!({"content": text}), None)
}

/// The start of a tool call: its index, id and name, no arguments yet.
pub fn ev_call_start(index: u64, id: &str, name: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
        None,
    )
}

/// A fragment of a tool call's arguments.
pub fn ev_call_args(index: u64, fragment: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
        None,
    )
}

/// A call of a custom (freeform) tool, its input streamed in three pieces, as chat
/// completions streams `type: custom` tool calls.
pub fn custom_call_reply(id: &str, name: &str, input: &str) -> Reply {
    let start = json!({"tool_calls": [{"index": 0, "id": id, "type": "custom",
        "custom": {"name": name, "input": ""}}]});
    let mut chunks = vec![ev_role(), chunk(start, None)];
    let cut: Vec<usize> = (0..=3).map(|i| input.len() * i / 3).collect();
    for w in cut.windows(2) {
        let piece = input.get(w[0]..w[1]).unwrap_or_default();
        chunks.push(chunk(
            json!({"tool_calls": [{"index": 0, "custom": {"input": piece}}]}),
            None,
        ));
    }
    chunks.push(ev_finish("tool_calls"));
    chunks.push(ev_usage(20, 8));
    Reply::Stream(chunks)
}

/// The last choice chunk.
pub fn ev_finish(reason: &str) -> Value {
    chunk(json!({}), Some(reason))
}

/// The usage chunk (`stream_options.include_usage`): no choices.
pub fn ev_usage(prompt: u64, completion: u64) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    })
}

/// A whole streamed answer: text in pieces of `piece` bytes.
pub fn text_reply(text: &str, piece: usize) -> Reply {
    let mut chunks = vec![ev_role()];
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let mut end = (start + piece).min(bytes.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        chunks.push(ev_text(&text[start..end]));
        start = end;
    }
    chunks.push(ev_finish("stop"));
    chunks.push(ev_usage(10, 5));
    Reply::Stream(chunks)
}

/// A streamed answer with native calls: (id, name, arguments JSON), each call's
/// arguments sent in three fragments.
pub fn calls_reply(text: &str, calls: &[(&str, &str, Value)]) -> Reply {
    let mut chunks = vec![ev_role()];
    if !text.is_empty() {
        chunks.push(ev_text(text));
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        chunks.push(ev_call_start(i as u64, id, name));
        let args = args.to_string();
        let third = args.len() / 3;
        let cuts = [0, third, 2 * third, args.len()];
        for w in cuts.windows(2) {
            chunks.push(ev_call_args(i as u64, &args[w[0]..w[1]]));
        }
    }
    chunks.push(ev_finish("tool_calls"));
    chunks.push(ev_usage(20, 8));
    Reply::Stream(chunks)
}
