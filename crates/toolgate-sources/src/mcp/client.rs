//! Running MCP servers: one per declaration in a process, shared by every run, on a
//! runtime of their own (so a server outlives the command or request that started it);
//! started by the first call of one of its tools (or to list its tools when none are
//! kept, then stopped), started again by the next call after it died. A server's
//! `notifications/tools/list_changed` keeps its new list (see `cache.rs`).
//! A call's progress notifications become `tool.output` events; a call dropped before
//! its reply (cancelled, timed out) sends `notifications/cancelled`.
//! A server that requires a user's OAuth token gets a connection per (tenant, user),
//! carrying the user's access token; a new token (refreshed) makes a new connection.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientRequest, ProgressNotificationParam, RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;

use super::config::{Connect, Declaration};
use toolgate_protocol::identity::DEFAULT_TENANT;
use toolgate_sandbox::{self as sandbox, SandboxPolicy};
use toolgate_tool::{Part, ToolContext, ToolError};

/// The connection that lists a server's tools (the default tenant's process, as it
/// always was; its list is every tenant's).
const LISTING: &str = DEFAULT_TENANT;

/// The time a server has to start and answer `initialize` and `tools/list`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Lines of a stdio server's stderr kept, to say why it stopped.
const STDERR_LINES: usize = 20;

/// The runtime every server connection lives on.
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("toolgate-mcp")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the MCP runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs `fut` on the MCP runtime and waits for it, from code that is not async (the
/// library is loaded synchronously). Never called from the MCP runtime itself.
pub fn block_on<T: Send + 'static>(
    fut: impl Future<Output = T> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    runtime()?.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().map_err(|_| "the MCP runtime stopped".to_string())
}

/// Runs `fut` on the MCP runtime from async code; dropping the returned future aborts it.
pub async fn on_runtime<T: Send + 'static>(
    fut: impl Future<Output = T> + Send + 'static,
) -> Result<T, ToolError> {
    struct Abort<T>(tokio::task::JoinHandle<T>);
    impl<T> Drop for Abort<T> {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let rt = runtime().map_err(ToolError::Execution)?;
    let mut task = Abort(rt.spawn(fut));
    match (&mut task.0).await {
        Ok(v) => Ok(v),
        Err(e) if e.is_panic() => Err(ToolError::Panicked("the MCP client panicked".into())),
        Err(_) => Err(ToolError::Cancelled),
    }
}

/// Calls in flight by progress token, so that progress reaches the right call.
type Listeners = Arc<Mutex<HashMap<String, ToolContext>>>;

/// A server's tool list (`tools/list`, as JSON) once known in this process.
type Listed = Arc<tokio::sync::Mutex<Option<Vec<Value>>>>;

/// toolgate's side of a connection: routes progress notifications, and keeps the new
/// tool list a server announces.
#[derive(Clone, Default)]
struct Handler {
    listeners: Listeners,
    /// The server's name, its tool list in this process and where it is kept.
    server: String,
    tools: Listed,
    cache: Option<std::path::PathBuf>,
}

/// The transport to a streamable HTTP server, with the declared headers and the user's
/// token; `refused` is set when the server answers 401.
fn http_transport(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    bearer: Option<&Bearer>,
    refused: &Arc<AtomicBool>,
) -> Result<StreamableHttpClientTransport<super::traced::Traced>, String> {
    let mut custom = HashMap::new();
    for (k, v) in headers {
        let name =
            http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header '{k}': {e}"))?;
        let value = http::HeaderValue::from_str(v).map_err(|e| format!("header '{k}': {e}"))?;
        custom.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    if let Some(bearer) = bearer {
        config = config.auth_header(bearer.token.clone());
    }
    Ok(StreamableHttpClientTransport::with_client(
        super::traced::Traced(reqwest::Client::default(), Arc::clone(refused)),
        config,
    ))
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let listed = tokio::time::timeout(START_TIMEOUT, context.peer.list_all_tools()).await;
        let Ok(Ok(listed)) = listed else {
            // (A server stopped just after it was listed cannot answer any more.)
            tracing::debug!(server = %self.server, "the MCP server's tools changed, but it did not list them");
            return;
        };
        let tools: Vec<Value> = listed
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        if let Some(file) = &self.cache {
            super::cache::write(file, &self.server, &tools);
        }
        tracing::info!(server = %self.server, tools = tools.len(), "the MCP server's tools changed; the next load of the library has them");
        *self.tools.lock().await = Some(tools);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = token_key(&params.progress_token);
        let ctx = self
            .listeners
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned());
        if let Some(ctx) = ctx {
            let of = params
                .total
                .map(|t| format!("/{}", num(t)))
                .unwrap_or_default();
            let message = params.message.map(|m| format!(": {m}")).unwrap_or_default();
            ctx.emit(Part::Text {
                text: format!("progress {}{of}{message}", num(params.progress)),
            });
        }
    }
}

fn num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

fn token_key(token: &impl serde::Serialize) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

/// One live connection.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    listeners: Listeners,
    /// A stdio server's process group, killed with everything in it when the
    /// connection goes, or by its guard when toolgate dies first.
    _group: Option<toolgate_tool::process::GroupKeeper>,
    /// A stdio server's sandbox, kept while it runs (its temporary folder goes with it).
    _confined: Option<sandbox::Confined>,
    /// Set when the server refused the connection's token (401).
    refused: Arc<AtomicBool>,
    /// The digest of the user's token it carries, if any.
    token: Option<String>,
}

impl Connection {
    fn alive(&self) -> bool {
        !self.service.peer().is_transport_closed() && !self.refused.load(Ordering::Relaxed)
    }
}

/// The user a call runs as on a server that requires OAuth, and their access token.
/// Prints without the token.
#[derive(Clone)]
pub struct Bearer {
    pub user: String,
    pub token: String,
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bearer")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The hex SHA-256 of a token: what a connection remembers of it.
fn digest(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One declared server, started on demand and again after it died.
pub struct Server {
    pub name: String,
    connect: Connect,
    /// The sandbox of a stdio server.
    policy: Option<SandboxPolicy>,
    /// Where it is declared (the first file, when several declare the same server).
    file: String,
    /// Its live connections by tenant: a process (or an HTTP session) of each tenant's
    /// own, never shared with another tenant.
    connections: tokio::sync::Mutex<HashMap<String, Arc<Connection>>>,
    /// The last lines a stdio server wrote to stderr.
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Its tools as listed when it first started (`tools/list`, as JSON), or as it
    /// last announced them.
    tools: Listed,
    /// Where its tool list is kept between processes.
    cache: Option<std::path::PathBuf>,
}

/// A server's name, how it is reached and its sandbox: equal keys share one server in a
/// process.
type ServerKey = (String, Connect, Option<SandboxPolicy>);

/// The servers of this process.
static SERVERS: LazyLock<Mutex<HashMap<ServerKey, Arc<Server>>>> = LazyLock::new(Default::default);

/// The process's server for `decl`, made (not started) when it is the first.
pub fn server(decl: &Declaration) -> Arc<Server> {
    shared(
        &decl.name,
        &decl.connect,
        decl.sandbox.clone(),
        decl.path.display().to_string(),
        super::cache::file_of(decl),
    )
}

/// The process's server of this name, connection and sandbox.
fn shared(
    name: &str,
    connect: &Connect,
    policy: Option<SandboxPolicy>,
    file: String,
    cache: Option<std::path::PathBuf>,
) -> Arc<Server> {
    let key = (name.to_string(), connect.clone(), policy.clone());
    let make = || {
        Arc::new(Server {
            name: name.to_string(),
            connect: connect.clone(),
            policy: policy.clone(),
            file: file.clone(),
            connections: tokio::sync::Mutex::default(),
            stderr: Arc::default(),
            tools: Arc::default(),
            cache: cache.clone(),
        })
    };
    match SERVERS.lock() {
        Ok(mut all) => Arc::clone(all.entry(key).or_insert_with(make)),
        Err(_) => make(),
    }
}

/// Stops the servers that no loaded tool uses any more (their declaration was removed
/// or changed, and the library that had them was loaded again), and forgets them: a
/// declaration that comes back starts a new one. Returns their names.
pub fn stop_unused() -> Vec<String> {
    let unused: Vec<Arc<Server>> = match SERVERS.lock() {
        Ok(mut all) => {
            // Only this map holds it: no library's tool, no call in flight.
            let keys: Vec<ServerKey> = all
                .iter()
                .filter(|(_, s)| Arc::strong_count(s) == 1)
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter().filter_map(|k| all.remove(k)).collect()
        }
        Err(_) => Vec::new(),
    };
    let names = unused.iter().map(|s| s.name.clone()).collect();
    if let Ok(rt) = runtime() {
        for server in unused {
            rt.spawn(async move {
                let conns = std::mem::take(&mut *server.connections.lock().await);
                for (_, conn) in conns {
                    tracing::info!(server = %server.name, file = %server.file, "MCP server no longer declared; stopping it");
                    match Arc::try_unwrap(conn) {
                        Ok(c) => {
                            let _ = c.service.cancel().await;
                        }
                        Err(shared) => drop(shared),
                    }
                }
            });
        }
    }
    names
}

impl Server {
    /// The same server started in `policy`'s sandbox (a process of its own); `None` for
    /// a server reached by URL.
    pub fn with_sandbox(&self, policy: SandboxPolicy) -> Option<Arc<Server>> {
        self.policy.as_ref()?;
        Some(shared(
            &self.name,
            &self.connect,
            Some(policy),
            self.file.clone(),
            self.cache.clone(),
        ))
    }

    /// Its tools, listed by starting it when it is not running; a server started only
    /// for this is stopped again (its first call starts it). Keeps the list.
    pub async fn list_once(&self) -> Result<Vec<Value>, String> {
        let running = self
            .connections
            .lock()
            .await
            .get(LISTING)
            .is_some_and(|c| c.alive());
        let listed = self.tools().await;
        if !running {
            self.stop().await;
        }
        let tools = listed?;
        if let Some(file) = &self.cache {
            super::cache::write(file, &self.name, &tools);
        }
        Ok(tools)
    }

    /// A credential check: a process of its own started with `extra` in its environment,
    /// initialized and asked for its tools, then stopped. `Ok` with the number of tools,
    /// or why it failed (the program's last words on stderr included).
    pub async fn check(&self, tenant: &str, extra: &Extra) -> Result<usize, String> {
        let conn = self.start(tenant, extra, None).await?;
        let listed = tokio::time::timeout(START_TIMEOUT, conn.service.peer().list_all_tools())
            .await
            .map_err(|_| {
                format!(
                    "did not list its tools within {} s",
                    START_TIMEOUT.as_secs()
                )
            })
            .and_then(|r| r.map_err(|e| format!("could not list its tools: {e}")));
        let _ = conn.service.cancel().await;
        listed.map(|tools| tools.len())
    }

    /// Starts `tenant`'s process if it is not running; the error says why it could not
    /// start.
    pub async fn start_if_stopped(&self, tenant: &str, extra: &Extra) -> Result<(), ToolError> {
        self.connection(tenant, extra, None)
            .await
            .map(|_| ())
            .map_err(|why| {
                ToolError::ServerUnavailable(format!(
                    "the MCP server '{}' ({}) {why}",
                    self.name, self.file
                ))
            })
    }

    /// Stops the process started to list its tools, if it runs (a later call starts
    /// it again).
    async fn stop(&self) {
        let conn = self.connections.lock().await.remove(LISTING);
        if let Some(Ok(c)) = conn.map(Arc::try_unwrap) {
            let _ = c.service.cancel().await;
        }
    }

    /// Its tools (`tools/list`, every page), starting it if need be; listed once per
    /// process.
    pub async fn tools(&self) -> Result<Vec<Value>, String> {
        let mut cached = self.tools.lock().await;
        if let Some(tools) = cached.as_ref() {
            return Ok(tools.clone());
        }
        let conn = self.connection(LISTING, &Extra::new(), None).await?;
        let listed = tokio::time::timeout(START_TIMEOUT, conn.service.peer().list_all_tools())
            .await
            .map_err(|_| {
                format!(
                    "did not list its tools within {} s",
                    START_TIMEOUT.as_secs()
                )
            })?
            .map_err(|e| format!("could not list its tools: {e}"))?;
        let tools: Vec<Value> = listed
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        *cached = Some(tools.clone());
        Ok(tools)
    }

    /// `tenant`'s live connection with `extra` in its environment (as `bearer`'s user,
    /// with their token, when given), started (again) when there is none, it died, or
    /// its token is not this one. Other credential values (a secret set anew) make
    /// another process.
    async fn connection(
        &self,
        tenant: &str,
        extra: &Extra,
        bearer: Option<&Bearer>,
    ) -> Result<Arc<Connection>, String> {
        // (The user after a separator no name holds; and a connection is only ever
        // reused with the very token it carries.)
        let key = match bearer {
            Some(b) => format!("{}\u{1f}{}", connection_key(tenant, extra), b.user),
            None => connection_key(tenant, extra),
        };
        let token = bearer.map(|b| digest(&b.token));
        let mut all = self.connections.lock().await;
        if let Some(conn) = all.get(&key).filter(|c| c.alive() && c.token == token) {
            return Ok(Arc::clone(conn));
        }
        all.remove(&key);
        let conn = Arc::new(self.start(tenant, extra, bearer).await?);
        all.insert(key, Arc::clone(&conn));
        if bearer.is_some() {
            self.keep_listing(&conn);
        }
        Ok(conn)
    }

    /// Lists the tools on a user's new connection and keeps them: the next load of
    /// the library has the server's own list instead of the declared one.
    fn keep_listing(&self, conn: &Connection) {
        let (peer, tools, cache, name) = (
            conn.service.peer().clone(),
            Arc::clone(&self.tools),
            self.cache.clone(),
            self.name.clone(),
        );
        tokio::spawn(async move {
            let Ok(Ok(listed)) = tokio::time::timeout(START_TIMEOUT, peer.list_all_tools()).await
            else {
                return;
            };
            let listed: Vec<Value> = listed
                .iter()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect();
            if let Some(file) = &cache {
                super::cache::write(file, &name, &listed);
            }
            *tools.lock().await = Some(listed);
        });
    }

    async fn start(
        &self,
        tenant: &str,
        extra: &Extra,
        bearer: Option<&Bearer>,
    ) -> Result<Connection, String> {
        if let Ok(mut k) = self.stderr.lock() {
            k.clear();
        }
        let handler = Handler {
            server: self.name.clone(),
            tools: Arc::clone(&self.tools),
            cache: self.cache.clone(),
            ..Handler::default()
        };
        let listeners = Arc::clone(&handler.listeners);
        let refused = Arc::new(AtomicBool::new(false));
        let (mut confined, mut group) = (None, None);
        let started = match &self.connect {
            Connect::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut env = env.clone();
                env.extend(extra.iter().cloned());
                let (transport, guard) = self.spawn(command, args, &env, cwd.as_deref(), tenant)?;
                group = transport.id().map(toolgate_tool::process::GroupKeeper::new);
                confined = Some(guard);
                tokio::time::timeout(START_TIMEOUT, handler.serve(transport))
                    .await
                    .map(|r| r.map_err(|e| e.to_string()))
            }
            Connect::Http { url, headers } => {
                let transport = http_transport(url, headers, bearer, &refused)?;
                tokio::time::timeout(START_TIMEOUT, handler.serve(transport))
                    .await
                    .map(|r| r.map_err(|e| e.to_string()))
            }
        };
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(_)) if refused.load(Ordering::Relaxed) => {
                return Err(REFUSED.to_string());
            }
            Ok(Err(why)) => {
                // Give the stderr reader a moment to catch the program's last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(self.with_stderr(format!("did not start: {why}")));
            }
            Err(_) => {
                return Err(self.with_stderr(format!(
                    "did not answer initialize within {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
        };
        Ok(Connection {
            service,
            listeners,
            _group: group,
            _confined: confined,
            refused,
            token: bearer.map(|b| digest(&b.token)),
        })
    }

    /// Starts the server's program in its sandbox, its stderr kept (the last
    /// [`STDERR_LINES`] lines) for error messages.
    fn spawn(
        &self,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: Option<&std::path::Path>,
        tenant: &str,
    ) -> Result<(TokioChildProcess, sandbox::Confined), String> {
        // Its workspace: the folder it is declared to run in, else toolgate's; another
        // tenant's process gets a folder of its own (see `tenant_folder`).
        let declared = match cwd {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir()
                .map_err(|e| format!("cannot tell the current folder: {e}"))?,
        };
        let (command, args, workspace) = if tenant == DEFAULT_TENANT || tenant == LISTING {
            (command.to_string(), args.to_vec(), declared)
        } else {
            let (command, args) = anchored(command, args, &declared);
            (command, args, self.tenant_folder(tenant)?)
        };
        let (command, args) = (command.as_str(), args.as_slice());
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args).current_dir(&workspace);
        // A group of its own, for its keeper to kill whole (see `Connection`).
        cmd.process_group(0);
        let declared: Vec<(String, String)> =
            env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let who = format!("MCP server '{}'", self.name);
        let launch = sandbox::Launch {
            who: &who,
            workspace: &workspace,
            program: Some((command, args)),
            env: &declared,
        };
        let policy = self.policy.clone().unwrap_or_default();
        let confined = sandbox::confine(&mut cmd, &policy, &launch).map_err(|e| e.to_string())?;
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run '{command}': {e}"))?;
        if let Some(stderr) = stderr {
            let kept = Arc::clone(&self.stderr);
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut k) = kept.lock() {
                        if k.len() == STDERR_LINES {
                            k.pop_front();
                        }
                        k.push_back(line);
                    }
                }
            });
        }
        Ok((transport, confined))
    }

    /// The folder of `tenant`'s process (not the default tenant's): under toolgate's
    /// state folder, `mcp/SERVER/tenants/TENANT/`, made when missing; never inside the
    /// folder the server is declared to run in, which every tenant's agents may share.
    fn tenant_folder(&self, tenant: &str) -> Result<std::path::PathBuf, String> {
        let state = std::env::var_os("XDG_STATE_HOME")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".local/state"))
            })
            .unwrap_or_else(std::env::temp_dir);
        let root = state.join("toolgate/mcp").join(&self.name);
        std::fs::create_dir_all(&root)
            .map_err(|e| format!("cannot make its folder under {}: {e}", root.display()))?;
        let folder = toolgate_tool::workspace::tenant_workspace(&root, tenant);
        if !folder.is_dir() {
            return Err(format!(
                "cannot make tenant {tenant}'s folder {}",
                folder.display()
            ));
        }
        Ok(folder)
    }

    /// `why`, with the last line the server wrote to stderr, if any.
    fn with_stderr(&self, why: String) -> String {
        let last = self
            .stderr
            .lock()
            .ok()
            .and_then(|k| k.iter().rev().find(|l| !l.trim().is_empty()).cloned());
        match last {
            Some(line) => format!("{why} (its last words: {})", line.trim()),
            None => why,
        }
    }

    /// Calls `tool` with `args`; progress goes to `ctx`'s events. Runs on the MCP
    /// runtime (see [`on_runtime`]).
    pub async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: ToolContext,
        traceparent: Option<String>,
        bearer: Option<Bearer>,
    ) -> Result<rmcp::model::CallToolResult, ToolError> {
        let tenant = tenant_of(&ctx);
        let extra = extra_env(&ctx);
        let mut args = args;
        for (var, _) in &extra {
            args.remove(var);
        }
        let conn = match self.connection(&tenant, &extra, bearer.as_ref()).await {
            Ok(conn) => conn,
            Err(why) if why == REFUSED => {
                ctx.note(unauthorized());
                return Err(ToolError::Execution(format!(
                    "the MCP server '{}' {REFUSED}",
                    self.name
                )));
            }
            Err(why) => {
                return Err(ToolError::ServerUnavailable(format!(
                    "the MCP server '{}' ({}) {why}",
                    self.name, self.file
                )));
            }
        };
        let result = self
            .call_on(&conn, tool, args, ctx.clone(), traceparent)
            .await;
        if result.is_err() && conn.refused.load(Ordering::Relaxed) {
            ctx.note(unauthorized());
            return Err(ToolError::Execution(format!(
                "the MCP server '{}' {REFUSED}",
                self.name
            )));
        }
        result
    }

    /// Calls `tool` on `conn`.
    async fn call_on(
        &self,
        conn: &Connection,
        tool: &str,
        args: Map<String, Value>,
        ctx: ToolContext,
        traceparent: Option<String>,
    ) -> Result<rmcp::model::CallToolResult, ToolError> {
        let peer = conn.service.peer().clone();
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        if let Some(tp) = traceparent {
            // The call's span, for the server to continue (SEP-414; over HTTP, the
            // header too: see `traced`).
            let mut meta = rmcp::model::RequestMetaObject::default();
            meta.0.set_traceparent(tp);
            params.meta = Some(meta);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.lost(e))?;
        let key = token_key(&handle.progress_token);
        if let Ok(mut m) = conn.listeners.lock() {
            m.insert(key.clone(), ctx);
        }
        let mut pending = InFlight {
            peer,
            id: Some(handle.id.clone()),
            listeners: Arc::clone(&conn.listeners),
            key,
        };
        let result = handle.await_response().await;
        pending.id = None;
        // rmcp hands each notification to a task of its own: let the ones that came
        // before the reply (the last progress) run before the call stops listening.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        match result {
            Ok(ServerResult::CallToolResult(r)) => Ok(r),
            Ok(_) => Err(ToolError::Execution(format!(
                "the MCP server '{}' answered tools/call with something else than a result",
                self.name
            ))),
            Err(ServiceError::McpError(e)) => Err(ToolError::Execution(format!(
                "the MCP server '{}' refused the call: {}",
                self.name, e.message
            ))),
            Err(e) => Err(self.lost(e)),
        }
    }

    /// The error of a call whose server went away.
    fn lost(&self, e: ServiceError) -> ToolError {
        let why = match e {
            ServiceError::TransportClosed => "the connection closed".to_string(),
            other => other.to_string(),
        };
        ToolError::ServerUnavailable(format!(
            "the MCP server '{}' ({}) stopped during the call ({why}); the next call starts it again",
            self.name, self.file
        ))
    }
}

/// What a server that refused the user's token (401) did, in words.
const REFUSED: &str = "refused the user's access token (HTTP 401)";

/// The note of a refused token: the caller refreshes it once and tries again.
fn unauthorized() -> toolgate_tool::retry::Noted {
    toolgate_tool::retry::Noted::Status {
        status: 401,
        retry_after: None,
    }
}

/// Variables a server's process gets beyond its declared `env`: its credentials, as the
/// engine resolved them for the call's tenant.
pub type Extra = Vec<(String, String)>;

/// The connection key of a call's tenant.
pub fn tenant_of(ctx: &ToolContext) -> String {
    ctx.run
        .tenant
        .clone()
        .unwrap_or_else(|| DEFAULT_TENANT.to_string())
}

/// The credentials the engine injected into a call, as environment variables.
pub fn extra_env(ctx: &ToolContext) -> Extra {
    ctx.injected
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect()
}

/// A connection's key: the tenant, and a digest of its credential values (never the
/// values themselves).
fn connection_key(tenant: &str, extra: &Extra) -> String {
    if extra.is_empty() {
        return tenant.to_string();
    }
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    extra.hash(&mut h);
    format!("{tenant}#{:016x}", h.finish())
}

/// `command` and `args` with each one that names an existing path relative to `dir`
/// made absolute: a process started in another folder still finds its files.
fn anchored(command: &str, args: &[String], dir: &std::path::Path) -> (String, Vec<String>) {
    let fix = |a: &str| {
        let p = std::path::Path::new(a);
        if a.starts_with('-') || p.is_absolute() || !a.contains(['/', '.']) {
            return a.to_string();
        }
        let full = dir.join(p);
        if full.exists() {
            full.display().to_string()
        } else {
            a.to_string()
        }
    };
    (fix(command), args.iter().map(|a| fix(a)).collect())
}

/// A call waiting for its reply: dropped before it (cancelled, timed out), it tells the
/// server with `notifications/cancelled`; either way it stops listening for progress.
struct InFlight {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    listeners: Listeners,
    key: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut m) = self.listeners.lock() {
            m.remove(&self.key);
        }
        if let Some(id) = self.id.take()
            && let Ok(rt) = runtime()
        {
            let peer = self.peer.clone();
            rt.spawn(async move {
                let note = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("the call was cancelled or timed out".into()),
                ));
                let _ = peer.send_notification(note.into()).await;
            });
        }
    }
}
