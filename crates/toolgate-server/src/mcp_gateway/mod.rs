//! toolgate as an MCP server: one agent's toolkit served to any MCP client, over stdio
//! (`toolgate mcp --agent FILE`) or streamable HTTP (`toolgate serve`, at
//! `/mcp/{agent}`: the transport is `server/mcp.rs`). Every `tools/call` is a single-call run in the store (one
//! conversation per MCP session), so it passes the same gate, engine and record as a
//! model's call, and a CONFIRM call waits as the run's pending item: asked through MCP
//! elicitation when the client supports it, otherwise held until `toolgate approve`,
//! `deny` or the HTTP API decides it from any process, or until the approval timeout.
//! A client that asks for a task (`tools/call` with `task`, protocol 2025-11-25) gets
//! one instead of a hold, and follows it for as long as it likes (`tasks/`).

mod cancel;
mod hold;
mod joined;
mod session;
mod single;
mod stdin;
mod stdio;
mod stdout;
pub mod tasks;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;

pub use session::Session;

use toolgate_runtime::agent::Agent;
use toolgate_runtime::run::Runner;

/// How long a held CONFIRM call waits for a decision by default: shorter than the
/// timeouts MCP clients give up after (the OpenAI Agents SDK's 5 s is the shortest in
/// common use), so the client reads "not approved in time" rather than its own
/// timeout. An agent sets its own (`mcp_hold:`); clients that ask their user
/// (elicitation) or extend their timeout on progress can be given longer.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(4);

/// What every session of one gateway shares.
#[derive(Clone)]
pub struct Gateway {
    pub runner: Runner,
    /// The tools folder (`None`: built-ins only).
    pub tools_dir: Option<PathBuf>,
    /// Overrides the agent's workspace.
    pub workspace: Option<PathBuf>,
    /// How long a held CONFIRM call waits for a decision before it is denied.
    pub approval_timeout: Duration,
    /// For whom calls run when the request names no caller (`toolgate mcp --tenant T`
    /// over stdio); over HTTP each call runs for the authenticated caller.
    pub owner: Option<toolgate_protocol::identity::RunOwner>,
}

/// Why the stdio gateway stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The client went away before the handshake ended (nothing to report).
    #[error("the MCP client closed the connection before the handshake ended")]
    Closed,
    #[error("the MCP client did not complete the handshake: {0}")]
    Handshake(String),
    #[error("the MCP session stopped: {0}")]
    Stopped(String),
}

impl Gateway {
    /// A new session (one MCP client connection) serving `agent`: its own conversation.
    pub fn session(&self, agent: Agent) -> Session {
        Session::new(Arc::new(self.clone()), agent)
    }

    /// Serves `agent` on stdin/stdout until the client closes either. Logs go to stderr
    /// only: stdout carries the protocol.
    pub async fn serve_stdio(&self, agent: Agent) -> Result<(), GatewayError> {
        let gateway = Arc::new(self.clone());
        let tasks = Arc::new(tasks::Tasks::new(Arc::clone(&gateway), agent.clone(), None));
        let _reaper = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(tasks::reap(gateway)));
        let session = self.session(agent);
        let conversation = session.conversation().to_string();
        tracing::info!(%conversation, "MCP session on stdio");
        let closed = tokio_util::sync::CancellationToken::new();
        let output = stdout::Output::new(closed.clone());
        // Stdin closing ends the session's held calls at once (rmcp would otherwise
        // wait for them before it stops).
        let input = stdin::Input::new(tokio::io::stdin(), session.ended());
        // Task methods are answered before rmcp, which speaks a later draft of them.
        let (_plumbing, rmcp_io) = stdio::plumb(input, output, tasks);
        let running = session.serve(rmcp_io).await.map_err(|e| match e {
            rmcp::service::ServerInitializeError::ConnectionClosed(_) => GatewayError::Closed,
            other => GatewayError::Handshake(other.to_string()),
        })?;
        let stop = running.cancellation_token();
        let ended = running.waiting();
        tokio::pin!(ended);
        let reason = tokio::select! {
            r = &mut ended => r,
            _ = closed.cancelled() => {
                // Nobody reads the answers any more: end the session.
                stop.cancel();
                ended.await
            }
        }
        .map_err(|e| GatewayError::Stopped(e.to_string()))?;
        tracing::info!(?reason, %conversation, "MCP session ended");
        Ok(())
    }
}
