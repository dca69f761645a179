//! `toolgate serve`: the runtime over HTTP. Handlers are thin: they parse, call the
//! shared [`Runner`], and map typed errors to statuses. Every run is driven on its own
//! task, so a client that goes away never leaves a run half-done; its events go to the
//! request that drives it and to anyone watching it (`GET /v1/runs/{id}/events`).
#![recursion_limit = "256"]

mod agents;
mod auth;
mod budgets;
mod catalogue_checks;
pub mod collect;
mod collect_wal;
mod deadlines;
mod error;
mod feed;
mod files;
mod follow;
pub mod guard;
mod hub;
mod inbox;
pub mod jwt;
pub mod key_update;
pub mod keys_http;
mod knowledge;
mod limits;
pub mod listen;
pub mod manage_keys;
pub mod manage_secrets;
mod mcp;
pub mod mcp_gateway;
mod mcp_tasks_http;
mod metrics;
pub mod notify;
mod oauth;
mod oauth_http;
mod openapi;
pub mod openapi_valid;
pub mod rate;
mod records;
pub mod responses;
mod roles;
mod runs;
mod scope;
mod secrets_http;
mod spend;
mod sse;
mod takeup;
pub mod tenants;
mod timeline;
mod tool_checks;
mod trace;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::{self, UnboundedReceiver};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use agents::{AgentInfo, Agents};
pub use auth::key_hash;
pub use error::{ApiError, ApiJson, ApiQuery, ErrorBody, PathId};
pub use hub::Hub;
pub use notify::NotifyConfig;
pub use openapi::{document, openapi};

use toolgate_protocol::identity::{Identity, RunOwner};
use toolgate_protocol::{RunEvent, RunObject};
use toolgate_runtime::agent::Agent;
use toolgate_runtime::run::{RunError, Runner, StartRun};

/// How a server is set up.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    /// The folder of agent files, addressed by their `name`.
    pub agents_dir: PathBuf,
    /// The tools folder (`None`: built-ins only).
    pub tools_dir: Option<PathBuf>,
    /// Overrides every agent's workspace.
    pub workspace: Option<PathBuf>,
    /// With a key, every `/v1/*` request needs `Authorization: Bearer KEY`; without
    /// one, only a loopback address may be bound.
    pub api_key: Option<String>,
    /// How long a held CONFIRM call from an MCP client (`/mcp/{agent}`) waits.
    pub mcp_approval_timeout: std::time::Duration,
    /// Where to POST a signed notification when a run pauses or fails; the run's link
    /// uses `public_url` (default: `http://` and the bound address).
    pub notify_urls: Vec<url::Url>,
    pub notify_secret: Option<String>,
    pub public_url: Option<url::Url>,
    /// Host names the server answers to besides loopback names and IP literals
    /// (`--allowed-host`; `*` for any).
    pub allowed_hosts: Vec<String>,
    /// A PEM certificate chain and key: serve HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Deadlines and the cap on connections.
    pub limits: listen::ConnLimits,
    /// Also serve `GET /metrics` here, without the key.
    pub metrics_addr: Option<SocketAddr>,
    /// How long before an approval expires `approval.expiring` is sent.
    pub approval_warning: std::time::Duration,
    /// Accept an app's JWTs (`--jwt-secret-file`, `--jwks`).
    pub jwt: Option<JwtSettings>,
    /// Requests per second and runs at once, per key and per tenant.
    pub rate_limits: Option<rate::RateConfig>,
    /// The agents and tools each tenant's callers may use (`--tenants`).
    pub tenant_allows: tenants::TenantAllows,
}

/// Where an app's JWT keys come from and how its claims map.
#[derive(Debug, Clone)]
pub struct JwtSettings {
    pub keys: jwt::KeySource,
    pub claims: jwt::ClaimMap,
    pub audience: Option<String>,
    pub issuer: Option<String>,
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Config(String),
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Io(std::io::Error),
}

/// What every handler shares.
pub struct AppState {
    pub runner: Runner,
    pub agents: Agents,
    pub tools_dir: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub api_key: Option<String>,
    /// How long a held CONFIRM call from an MCP client (`/mcp/{agent}`) waits.
    pub mcp_approval_timeout: std::time::Duration,
    /// An app's JWTs, when accepted.
    pub jwt: Option<Arc<jwt::JwtVerifier>>,
    /// Rate limits, when configured.
    pub rates: Option<Arc<rate::RateLimits>>,
    /// The agents and tools each tenant's callers may use.
    pub tenant_allows: tenants::TenantAllows,
    /// The `Host` names requests may carry.
    pub allowed_hosts: guard::AllowedHosts,
    /// The origin of `--public-url`, which pages may call from besides this server's own.
    pub public_origin: Option<String>,
    pub hub: Hub,
    /// Fires when the server shuts down: streams end, drives stop at their next step.
    pub shutdown: CancellationToken,
    /// The drives in flight, waited for at shutdown.
    pub drives: TaskTracker,
}

/// What to drive.
pub enum Drive {
    Start(Box<StartRun>),
    Resume(String),
    /// A run nobody drives, taken up without waiting for a held lease.
    TakeUp(String),
    /// A start with what a client adds (a Responses request).
    StartWith(Box<StartRun>, Box<toolgate_runtime::run::Additions>),
    /// A resume with what a client changes (a Responses request).
    ResumeWith(String, Box<toolgate_runtime::run::Additions>),
}

/// A drive in flight: its events as they happen (they end when it does), and its end.
pub struct Driving {
    pub events: UnboundedReceiver<RunEvent>,
    pub done: JoinHandle<Result<RunObject, RunError>>,
}

impl AppState {
    /// Drives a run on its own task. Events go to the returned receiver and to the
    /// run's watchers.
    pub fn spawn_drive(self: &Arc<Self>, drive: Drive) -> Driving {
        let (tx, mut rx) = mpsc::unbounded_channel::<RunEvent>();
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let runner = self.runner.with_events(tx);
        let hub = self.hub.clone();
        let reader = self.runner.clone();
        // The run as the drive saved it, handed over before its events end.
        let (saved_tx, saved_rx) = tokio::sync::oneshot::channel::<RunObject>();
        self.drives.spawn(async move {
            let mut publisher = None;
            while let Some(event) = rx.recv().await {
                let publisher = publisher.get_or_insert_with(|| hub.publisher(event.run_id()));
                publisher.send(&event);
                let _ = out_tx.send(event);
            }
            // The drive has saved and let go of its events: its run as it now stands
            // (read again only when the drive did not end with it).
            if let Some(p) = publisher {
                let id = p.run_id().to_string();
                drop(p);
                let run = match saved_rx.await {
                    Ok(run) if run.id == id => Some(run),
                    _ => reader.get(&id).await.ok(),
                };
                if let Some(run) = run {
                    hub.settle(run);
                }
            }
        });
        let done = self.drives.spawn(tracing::Instrument::instrument(
            async move {
                let ended = match drive {
                    Drive::Start(start) => runner.start(*start).await,
                    Drive::Resume(id) => runner.resume(&id).await,
                    Drive::TakeUp(id) => runner.take_up(&id).await,
                    Drive::StartWith(start, additions) => {
                        runner.start_with(*start, *additions).await
                    }
                    Drive::ResumeWith(id, additions) => runner.resume_with(&id, *additions).await,
                };
                if let Ok(run) = &ended {
                    let _ = saved_tx.send(run.clone());
                }
                ended
            },
            // The request's span (a caller's trace, when it sent one) goes with the run.
            tracing::Span::current(),
        ));
        Driving {
            events: out_rx,
            done,
        }
    }

    /// Waits for a drive to end, dropping its events.
    pub async fn drive(self: &Arc<Self>, drive: Drive) -> Result<RunObject, ApiError> {
        let Driving { mut events, done } = self.spawn_drive(drive);
        while events.recv().await.is_some() {}
        joined(done.await)
    }

    /// The agent called `name`.
    pub fn agent(&self, name: &str) -> Result<Agent, ApiError> {
        self.agents.get(&self.runner.loaded, name)
    }

    /// The agent called `name`, for `who` to run: 403 when its allow-lists do not name
    /// it (asked first, so that a refused caller learns nothing of which agents exist).
    pub fn agent_for(&self, who: &Identity, name: &str) -> Result<Agent, ApiError> {
        if !who.allow.agent(name) {
            return Err(ApiError::new(
                axum::http::StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "{} may not run agent '{name}' (its allow-list does not name it)",
                    who.name
                ),
            ));
        }
        self.agent(name)
    }

    /// A new run's request for `who`: the agent by name (one `who` may run), the
    /// server's tools and workspace, `who` as its owner. A model override must be an
    /// `openai:` one: a client never names a file here.
    pub async fn start_request(
        &self,
        who: &Identity,
        agent: &str,
        input: String,
        conversation: Option<String>,
        model: Option<String>,
    ) -> Result<StartRun, ApiError> {
        if blank(&input) {
            return Err(ApiError::bad_request("the input is empty"));
        }
        if let Some(m) = &model
            && m.strip_prefix("openai:")
                .or_else(|| m.strip_prefix("anthropic:"))
                .is_none_or(blank)
        {
            return Err(ApiError::bad_request(format!(
                "model '{m}' is not allowed over HTTP; use openai:NAME or anthropic:NAME, or name the model in the agent file"
            )));
        }
        Ok(StartRun {
            agent: self.agent_for(who, agent)?,
            model,
            conversation,
            message: input,
            tools_dir: self.tools_dir.clone(),
            workspace: self.workspace.clone(),
            priority: None,
            owner: Some(RunOwner {
                budgets: self.owner_budgets(who).await?,
                ..RunOwner::of(who)
            }),
        })
    }
}

/// Text with nothing but ASCII spaces, tabs and line breaks: what the document's
/// `[^ \t\n\r\f\v]` pattern refuses (the same set in every regex dialect, unlike `\s`).
pub fn blank(text: &str) -> bool {
    text.chars()
        .all(|c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
}

/// A drive's result, a panic in it included, as the API's error.
pub fn joined(
    r: Result<Result<RunObject, RunError>, tokio::task::JoinError>,
) -> Result<RunObject, ApiError> {
    match r {
        Ok(Ok(run)) => Ok(run),
        Ok(Err(e)) => Err(e.into()),
        Err(e) => Err(ApiError::internal(format!("the run's task stopped: {e}"))),
    }
}

/// The router: every route, with its OpenAPI document at `/openapi.json` and the MCP
/// gateway at `/mcp/{agent}` (held calls wait `state.mcp_approval_timeout`).
pub fn router(state: Arc<AppState>) -> axum::Router {
    let mcp = Arc::new(mcp::McpHttp::default());
    let (api, doc) = openapi::routes().split_for_parts();
    let mcp_route = axum::routing::any(
        move |axum::extract::State(state): axum::extract::State<Arc<AppState>>,
              PathId(agent): PathId,
              request: axum::extract::Request| {
            mcp::handle(state, Arc::clone(&mcp), agent, request)
        },
    );
    let doc = Arc::new(openapi_valid::finish(
        serde_json::to_value(&doc).unwrap_or_default(),
    ));
    api.route(
        "/openapi.json",
        axum::routing::get(move || {
            let doc = Arc::clone(&doc);
            async move { axum::Json(doc.as_ref().clone()) }
        }),
    )
    .route("/mcp/{agent}", mcp_route)
    .route("/metrics", axum::routing::get(metrics::scrape))
    .merge(inbox::routes())
    .fallback(unknown_route)
    .method_not_allowed_fallback(wrong_method)
    .layer(axum::middleware::from_fn(trace::continue_trace))
    .layer(axum::middleware::from_fn_with_state(
        Arc::clone(&state),
        auth::require_key,
    ))
    .layer(axum::middleware::from_fn_with_state(
        Arc::clone(&state),
        guard::check,
    ))
    .with_state(state)
}

/// A path no route has: the API's 404, in its error shape (not an empty body).
async fn unknown_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "there is no route {} (GET /openapi.json lists them)",
        uri.path()
    ))
}

/// A route asked with a method it does not take: 405, in the API's error shape.
async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} {} is not a route (GET /openapi.json lists the methods each path takes)",
            method,
            uri.path()
        ),
    )
}

/// Runs the server until SIGTERM or Ctrl-C; then stops accepting, stops the runs it
/// drives at their next step (given back, still in progress, for the next server to
/// take up), and returns.
pub async fn serve(config: ServeConfig, mut runner: Runner) -> Result<(), ServeError> {
    // At shutdown its runs are given back, for this server's next start or another
    // server on the same store to take up.
    runner.hand_back = true;
    // Runs continue with the agents and tools this server is deployed with.
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    runner.folders = Some(toolgate_runtime::run::Folders {
        agents: absolute(&config.agents_dir),
        tools: config.tools_dir.as_deref().map(absolute),
        workspace: config.workspace.as_deref().map(absolute),
    });
    check_config(&config, &runner).await?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|error| ServeError::Bind {
            addr: config.addr,
            error,
        })?;
    let addr = listener.local_addr().map_err(ServeError::Io)?;
    let mut allowed_hosts = guard::AllowedHosts::new(&config.allowed_hosts)
        .map_err(|e| ServeError::Config(e.to_string()))?;
    if let Some(u) = &config.public_url {
        allowed_hosts.add_url(u);
    }
    let tls = match &config.tls {
        Some((cert, key)) => {
            Some(listen::tls_acceptor(cert, key).map_err(|e| ServeError::Config(e.to_string()))?)
        }
        None => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    runner.oauth_callback = oauth::callback_url(config.public_url.as_ref(), scheme, addr);
    let jwt = match &config.jwt {
        Some(j) => Some(Arc::new(
            jwt::JwtVerifier::load(
                &j.keys,
                j.claims.clone(),
                j.audience.clone(),
                j.issuer.clone(),
            )
            .await
            .map_err(|e| ServeError::Config(e.to_string()))?,
        )),
        None => None,
    };
    let notify = notify_config(&config, addr, scheme)?;
    let state = Arc::new(AppState {
        runner,
        agents: Agents::new(config.agents_dir),
        tools_dir: config.tools_dir,
        workspace: config.workspace,
        api_key: config.api_key,
        mcp_approval_timeout: config.mcp_approval_timeout,
        jwt,
        rates: config
            .rate_limits
            .map(|c| Arc::new(rate::RateLimits::new(c))),
        tenant_allows: config.tenant_allows,
        allowed_hosts,
        public_origin: config
            .public_url
            .as_ref()
            .map(|u| u.origin().ascii_serialization()),
        hub: Hub::default(),
        shutdown: CancellationToken::new(),
        drives: TaskTracker::new(),
    });
    metrics::start(&state, config.metrics_addr, state.shutdown.clone()).await?;
    spawn_jwks_refresh(&state);
    // The one line a script waits for (stdout), then logs on stderr.
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "toolgate serve: listening on {scheme}://{addr}");
        let _ = out.flush();
    }
    tracing::info!(%addr, "listening");
    if !auth::needs_key(&state).await.unwrap_or(true) {
        eprintln!(
            "toolgate serve: open on loopback: no API key, issued key or JWT settings, so every caller is the local admin (a bearer token, if sent, is not checked)"
        );
    }
    let notifier = notify.and_then(notify::Notifier::new);
    if let Some(n) = &notifier {
        tracing::info!(
            urls = n.config.urls.len(),
            "notifications on: runs that pause or fail are posted"
        );
        notify::spawn(&state.hub, n.clone(), state.shutdown.clone());
    }
    // What other processes do to runs, and the runs nobody drives.
    follow::spawn(Arc::clone(&state));
    takeup::spawn(Arc::clone(&state));
    // Deadlines, from the start: those that passed while no server ran go first.
    deadlines::spawn(Arc::clone(&state), config.approval_warning, notifier);
    let app = router(Arc::clone(&state));
    let stop = spawn_stop_signal(&state);
    let result = listen::serve(listener, app, config.limits, tls, stop)
        .await
        .map_err(ServeError::Io);
    state.drives.close();
    state.drives.wait().await;
    state.runner.store.close();
    result
}

/// Refuses a configuration the server must not run with: no way to authenticate on
/// an address other than loopback, or no agents folder.
async fn check_config(config: &ServeConfig, runner: &Runner) -> Result<(), ServeError> {
    let keys_issued = runner
        .store
        .any_live_key()
        .await
        .map_err(|e| ServeError::Config(e.to_string()))?;
    if config.api_key.is_none()
        && config.jwt.is_none()
        && !keys_issued
        && !config.addr.ip().is_loopback()
    {
        return Err(ServeError::Config(format!(
            "refusing to listen on {} without an API key: set TOOLGATE_API_KEY (or --api-key-file), create keys (toolgate keys create), give --jwt-secret-file or --jwks, or bind a loopback address such as 127.0.0.1",
            config.addr
        )));
    }
    if !config.agents_dir.is_dir() {
        return Err(ServeError::Config(format!(
            "agents folder {} does not exist (--agents DIR, default ./agents)",
            config.agents_dir.display()
        )));
    }
    Ok(())
}

/// Reads the JWKS again every [`jwt::JWKS_REFRESH`] until shutdown, when the keys came
/// from a URL; a failed read keeps the keys in hand.
fn spawn_jwks_refresh(state: &Arc<AppState>) {
    if let Some(jwt) = state.jwt.clone().filter(|j| j.refreshes()) {
        let stop = state.shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(jwt::JWKS_REFRESH) => {}
                }
                if let Err(e) = jwt.refresh().await {
                    tracing::warn!(error = %e, "the JWKS could not be read again; the keys in hand stay");
                }
            }
        });
    }
}

/// Waits for SIGTERM or Ctrl-C in the background; then stops new requests and the runs
/// this server drives. The token returned is cancelled then.
fn spawn_stop_signal(state: &Arc<AppState>) -> CancellationToken {
    let stopping = Arc::clone(state);
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        stop_signal().await;
        tracing::info!(
            "shutting down: no new requests; running runs are given back for the next server to take up"
        );
        stopping.shutdown.cancel();
        stopping.runner.interrupt.cancel();
        stopped.cancel();
    });
    stop
}

/// The notifications' settings, when URLs are given: they need the signing key.
fn notify_config(
    config: &ServeConfig,
    addr: SocketAddr,
    scheme: &str,
) -> Result<Option<NotifyConfig>, ServeError> {
    if config.notify_urls.is_empty() {
        return Ok(None);
    }
    if let Some(u) = config
        .notify_urls
        .iter()
        .find(|u| !matches!(u.scheme(), "http" | "https"))
    {
        return Err(ServeError::Config(format!(
            "--notify-url {u} is not an http:// or https:// address"
        )));
    }
    let Some(secret) = config
        .notify_secret
        .clone()
        .filter(|s| !s.trim().is_empty())
    else {
        return Err(ServeError::Config(format!(
            "--notify-url needs a signing key: set {} (receivers check X-Toolgate-Signature with it)",
            notify::SECRET_ENV
        )));
    };
    let public_url = match &config.public_url {
        Some(u) => u.clone(),
        None => url::Url::parse(&format!("{scheme}://{addr}"))
            .map_err(|e| ServeError::Config(format!("no public URL for {scheme}://{addr}: {e}")))?,
    };
    Ok(Some(NotifyConfig {
        urls: config.notify_urls.clone(),
        secret,
        public_url,
    }))
}

/// SIGTERM or Ctrl-C.
async fn stop_signal() {
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
