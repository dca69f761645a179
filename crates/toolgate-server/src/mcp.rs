//! The MCP gateway over streamable HTTP: `toolgate serve` answers MCP at `/mcp/{agent}`
//! (behind the same bearer key as `/v1`), one rmcp service per agent, one session
//! (and conversation) per MCP client connection, every one with the server's approval
//! timeout (`AppState::mcp_approval_timeout`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tower::ServiceExt;

use super::{ApiError, AppState};
use crate::mcp_gateway::{Gateway, Session};
use toolgate_protocol::identity::Identity;

type Service = StreamableHttpService<Session, LocalSessionManager>;

/// The `/mcp` services of one server, by agent name.
#[derive(Default)]
pub struct McpHttp {
    services: Mutex<HashMap<String, Service>>,
}

impl McpHttp {
    /// The service for `agent`, made on first use. Each new session reads the agent
    /// file again, so an edited agent applies to the next connection.
    fn service(&self, state: &Arc<AppState>, agent: &str) -> Result<Service, ApiError> {
        let mut services = self
            .services
            .lock()
            .map_err(|_| ApiError::internal("the MCP services lock is poisoned"))?;
        if let Some(s) = services.get(agent) {
            return Ok(s.clone());
        }
        let gateway = Gateway {
            runner: state.runner.clone(),
            tools_dir: state.tools_dir.clone(),
            workspace: state.workspace.clone(),
            approval_timeout: state.mcp_approval_timeout,
            owner: None,
        };
        let (state, name) = (Arc::clone(state), agent.to_string());
        // The server's own guard has checked Host and Origin on every route already
        // (`--allowed-host` included), so rmcp's narrower check stays off.
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(state.shutdown.child_token())
            .disable_allowed_hosts();
        let service = StreamableHttpService::new(
            move || {
                let agent = state
                    .agent(&name)
                    .map_err(|e| std::io::Error::other(e.message))?;
                Ok(gateway.session(agent))
            },
            Arc::new(LocalSessionManager::default()),
            config,
        );
        services.insert(agent.to_string(), service.clone());
        Ok(service)
    }
}

/// `/mcp/{agent}`: any method; the rmcp service answers (POST messages, GET stream,
/// DELETE session).
pub async fn handle(
    state: Arc<AppState>,
    mcp: Arc<McpHttp>,
    agent: String,
    request: Request,
) -> Response {
    // An agent the caller may not run is the API's 403, and an unknown one its 404,
    // not MCP errors.
    let known = match request.extensions().get::<Identity>() {
        Some(who) => state.agent_for(who, &agent),
        None => state.agent(&agent),
    };
    if let Err(e) = known {
        return e.into_response();
    }
    let service = match mcp.service(&state, &agent) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = match service.oneshot(request).await {
        Ok(response) => response.map(Body::new),
        Err(never) => match never {},
    };
    // ("202 Accepted" for a closed session, which the Python SDK reports as a failure.)
    if delete && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
        *response.body_mut() = Body::empty();
    }
    response
}
