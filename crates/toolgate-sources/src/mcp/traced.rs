//! The streamable HTTP client of MCP servers, carrying trace context: a request whose
//! `_meta` holds a `traceparent` (SEP-414, set on every `tools/call` while spans are
//! exported) goes out with the same `traceparent` HTTP header, so that the server's
//! HTTP layer continues the trace as well as its MCP layer. A 401 from the server (its
//! bearer token refused) is noted for the connection's owner. Everything else is
//! reqwest's own client, unchanged.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// reqwest's MCP client, lifting `_meta.traceparent` into the HTTP header; the flag
/// is set when the server answers 401.
#[derive(Clone, Default)]
pub struct Traced(pub reqwest::Client, pub Arc<AtomicBool>);

impl Traced {
    /// `answer`, the flag set first when it is a 401.
    fn noted<T>(
        &self,
        answer: Result<T, StreamableHttpError<reqwest::Error>>,
    ) -> Result<T, StreamableHttpError<reqwest::Error>> {
        if matches!(answer, Err(StreamableHttpError::AuthRequired(_))) {
            self.1.store(true, Ordering::Relaxed);
        }
        answer
    }
}

/// The `traceparent` a JSON-RPC request carries in `params._meta`.
fn traceparent(message: &ClientJsonRpcMessage) -> Option<HeaderValue> {
    if !toolgate_telemetry::propagate::exporting() {
        return None;
    }
    let value = serde_json::to_value(message).ok()?;
    let text = value.pointer("/params/_meta/traceparent")?.as_str()?;
    HeaderValue::from_str(text).ok()
}

impl StreamableHttpClient for Traced {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        if let Some(tp) = traceparent(&message) {
            custom_headers.insert(HeaderName::from_static("traceparent"), tp);
        }
        let answer = self
            .0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.noted(answer)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let answer = self
            .0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        self.noted(answer)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let answer = self
            .0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.noted(answer)
    }
}
