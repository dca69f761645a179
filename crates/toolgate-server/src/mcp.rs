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

use super::mcp_tasks_http::{self, Sorted};
use super::{ApiError, AppState};
use crate::mcp_gateway::tasks::Tasks;
use crate::mcp_gateway::{Gateway, Session};
use toolgate_protocol::identity::Identity;

type Service = StreamableHttpService<Session, LocalSessionManager>;

/// The `/mcp` services of one server, by agent name, with their sessions; and the
/// reaper of expired MCP tasks, started with the first service.
#[derive(Default)]
pub struct McpHttp {
    services: Mutex<HashMap<String, (Service, Arc<LocalSessionManager>)>>,
    reaper: std::sync::OnceLock<tokio_util::task::AbortOnDropHandle<()>>,
}

/// The gateway the server's MCP sessions share.
fn gateway(state: &AppState) -> Gateway {
    Gateway {
        runner: state.runner.clone(),
        tools_dir: state.tools_dir.clone(),
        workspace: state.workspace.clone(),
        approval_timeout: state.mcp_approval_timeout,
        owner: None,
    }
}

impl McpHttp {
    /// The service for `agent`, made on first use. Each new session reads the agent
    /// file again, so an edited agent applies to the next connection.
    fn service(
        &self,
        state: &Arc<AppState>,
        agent: &str,
    ) -> Result<(Service, Arc<LocalSessionManager>), ApiError> {
        let mut services = self
            .services
            .lock()
            .map_err(|_| ApiError::internal("the MCP services lock is poisoned"))?;
        if let Some(s) = services.get(agent) {
            return Ok(s.clone());
        }
        self.reaper.get_or_init(|| {
            let reap = crate::mcp_gateway::tasks::reap(Arc::new(gateway(state)));
            tokio_util::task::AbortOnDropHandle::new(tokio::spawn(reap))
        });
        let gateway = gateway(state);
        let sessions = Arc::new(LocalSessionManager::default());
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
            Arc::clone(&sessions),
            config,
        );
        services.insert(agent.to_string(), (service.clone(), Arc::clone(&sessions)));
        Ok((service, sessions))
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
    let who = request.extensions().get::<Identity>().cloned();
    let known = match &who {
        Some(who) => state.agent_for(who, &agent),
        None => state.agent(&agent),
    };
    let known = match known {
        Ok(agent) => agent,
        Err(e) => return e.into_response(),
    };
    let (service, sessions) = match mcp.service(&state, &agent) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let (request, patch) = match mcp_tasks_http::sort(request).await {
        Err(refused) => return refused,
        Ok(Sorted::Rmcp(request, patch)) => (request, patch),
        Ok(Sorted::Task {
            id,
            method,
            params,
            session,
        }) => {
            let live = match session.as_deref() {
                Some(s) => sessions.sessions.read().await.contains_key(s),
                None => false,
            };
            if !live {
                return mcp_tasks_http::no_session(session.as_deref());
            }
            let tasks = Tasks::new(Arc::new(gateway(&state)), known, who);
            return mcp_tasks_http::answer(tasks, id, method, params);
        }
    };
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = match service.oneshot(request).await {
        Ok(response) => response.map(Body::new),
        Err(never) => match never {},
    };
    if let Some(patch) = patch {
        response = mcp_tasks_http::patched(response, patch);
    }
    // ("202 Accepted" for a closed session, which the Python SDK reports as a failure.)
    if delete && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
        *response.body_mut() = Body::empty();
    }
    response
}
