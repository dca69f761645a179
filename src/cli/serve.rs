//! `toolgate serve`: the run API, SSE and the OpenAI Responses endpoint over HTTP, on
//! the same database, tools and agents as the other commands.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use toolgate::server::{ServeConfig, ServeError};

use super::Failure;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The address to listen on; without an API key, only a loopback one.
    #[arg(long, env = "TOOLGATE_ADDR", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// The folder of agent files; clients name agents by their `name`.
    #[arg(long, env = "TOOLGATE_AGENTS", default_value = "agents")]
    agents: PathBuf,
    /// The tools folder (default ./tools; built-in tools are always there).
    #[arg(long, env = "TOOLGATE_TOOLS")]
    tools: Option<PathBuf>,
    /// The root for file tools, created when missing (default: each agent's workspace,
    /// else the current folder).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// A file holding the API key (else TOOLGATE_API_KEY); every /v1 request then needs
    /// `Authorization: Bearer KEY`.
    #[arg(long)]
    api_key_file: Option<PathBuf>,
    /// How long a held CONFIRM call from an MCP client (`/mcp/{agent}`) waits for a
    /// decision before it is denied (e.g. 4s, 5m); an agent's `mcp_hold:` wins.
    #[arg(long, default_value = "4s", value_parser = super::mcp::parse_duration)]
    mcp_approval_timeout: std::time::Duration,
    /// How long before an approval's deadline (`approval_timeout` in agent and tool
    /// files) `approval.expiring` is sent, as an event and a notification (e.g. 5m).
    #[arg(long, default_value = "5m", value_parser = super::mcp::parse_duration)]
    approval_warning: std::time::Duration,
    /// POST a signed JSON notification to URL when a run pauses for a person or fails,
    /// or an approval is about to expire or expired (repeatable); signed with
    /// HMAC-SHA256 under TOOLGATE_NOTIFY_SECRET.
    #[arg(long = "notify-url", value_name = "URL")]
    notify_url: Vec<url::Url>,
    /// The address people open the inbox at, for the links in notifications (default:
    /// http:// and the bound address).
    #[arg(long, env = "TOOLGATE_PUBLIC_URL", value_name = "URL")]
    public_url: Option<url::Url>,
    /// How often the tools folder is looked at for added, changed and removed files,
    /// picked up without a restart (e.g. 1s, 500ms; 0 turns it off).
    #[arg(long, env = "TOOLGATE_RELOAD_EVERY", default_value = "1s", value_parser = super::mcp::parse_duration)]
    reload_every: std::time::Duration,
    /// A host name this server answers to besides loopback names and IP addresses
    /// (repeatable; NAME or NAME:PORT; `*` for any, when a proxy in front checks Host).
    /// Requests naming another Host are refused (421): a defence against DNS rebinding.
    #[arg(
        long = "allowed-host",
        env = "TOOLGATE_ALLOWED_HOSTS",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    allowed_host: Vec<String>,
    /// A PEM certificate chain: serve HTTPS (with --tls-key).
    #[arg(long, requires = "tls_key", value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert", value_name = "FILE")]
    tls_key: Option<PathBuf>,
    /// How long a connection may take to send a request's headers, and how long a
    /// kept-alive connection may sit idle (e.g. 10s).
    #[arg(long, default_value = "10s", value_parser = super::mcp::parse_duration)]
    header_timeout: std::time::Duration,
    /// How long a request's body may take to arrive, once its headers have (e.g. 30s).
    #[arg(long, default_value = "30s", value_parser = super::mcp::parse_duration)]
    body_timeout: std::time::Duration,
    /// Connections open at once; past it a new one gets 503 (default: what the
    /// process's descriptor limit leaves, at most 16384).
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Also serve `GET /metrics` (Prometheus) on this address, without the API key
    /// (it is always at /metrics on the main address, behind the key).
    #[arg(long, env = "TOOLGATE_METRICS_ADDR", value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Accept an app's JWTs signed with this HS256 secret (a file of at least 32 bytes).
    #[arg(long, value_name = "FILE", conflicts_with = "jwks")]
    jwt_secret_file: Option<PathBuf>,
    /// Accept an app's JWTs signed with a key of this JWKS (RS256 or ES256): a file or
    /// an http(s):// URL, read at start.
    #[arg(long, value_name = "FILE|URL")]
    jwks: Option<String>,
    /// Which claims hold the subject, tenant, roles and groups
    /// (e.g. sub=sub,tenant=org_id,roles=roles,groups=groups).
    #[arg(
        long,
        value_name = "MAP",
        default_value = "sub=sub,tenant=tenant,roles=roles,groups=groups"
    )]
    jwt_claims: String,
    /// The `aud` a token must name.
    #[arg(long, value_name = "AUD")]
    jwt_audience: Option<String>,
    /// The `iss` a token must name.
    #[arg(long, value_name = "ISS")]
    jwt_issuer: Option<String>,
    /// Requests per second and runs at once, per key and per tenant (a YAML file:
    /// `per_key: {requests_per_second: 5, burst: 10, runs_at_once: 2}`, `per_tenant: ...`).
    #[arg(long, value_name = "FILE")]
    rate_limits: Option<PathBuf>,
    /// The agents and tools each tenant's callers may use (a YAML file:
    /// `acme: {agents: [a, b], tools: [x, y]}`), met with each key's or token's own.
    #[arg(long, env = "TOOLGATE_TENANTS", value_name = "FILE")]
    tenants: Option<PathBuf>,
    #[command(flatten)]
    limits: super::limits::LimitArgs,
    /// Print the OpenAPI document and exit.
    #[arg(long)]
    openapi: bool,
}

fn api_key(file: Option<&Path>) -> Result<Option<String>, Failure> {
    let key = match file {
        Some(f) => Some(std::fs::read_to_string(f).map_err(|e| {
            Failure::bad_input(format!("cannot read the API key file {}: {e}", f.display()))
        })?),
        None => std::env::var(super::environment::API_KEY).ok(),
    };
    match key.map(|k| k.trim().to_string()) {
        Some(k) if k.is_empty() => Err(Failure::bad_input(
            "the API key is empty; set a key, or unset TOOLGATE_API_KEY to serve on loopback without one",
        )),
        other => Ok(other),
    }
}

pub fn run(args: ServeArgs, db: &Path) -> Result<ExitCode, Failure> {
    if args.openapi {
        let doc = toolgate::server::document();
        super::out::print_json(&mut super::out::stdout(), &doc, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    args.limits.apply()?;
    let tools_dir = super::tools_dir(args.tools)?;
    let tools_dir = tools_dir.map(|d| std::path::absolute(&d).unwrap_or(d));
    let watched = tools_dir.clone();
    let keys = match (args.jwt_secret_file, args.jwks) {
        (Some(f), _) => Some(toolgate::server::jwt::KeySource::SecretFile(f)),
        (None, Some(j)) => Some(toolgate::server::jwt::KeySource::Jwks(j)),
        (None, None) => None,
    };
    let jwt = match keys {
        Some(keys) => Some(toolgate::server::JwtSettings {
            keys,
            claims: toolgate::server::jwt::ClaimMap::parse(&args.jwt_claims)
                .map_err(|e| Failure::bad_input(e.to_string()))?,
            audience: args.jwt_audience,
            issuer: args.jwt_issuer,
        }),
        None => None,
    };
    let rate_limits = match &args.rate_limits {
        Some(f) => Some(
            toolgate::server::rate::RateConfig::load(f)
                .map_err(|e| Failure::bad_input(e.to_string()))?,
        ),
        None => None,
    };
    let tenant_allows = match &args.tenants {
        Some(f) => toolgate::server::tenants::TenantAllows::load(f)
            .map_err(|e| Failure::bad_input(e.to_string()))?,
        None => Default::default(),
    };
    let config = ServeConfig {
        jwt,
        rate_limits,
        tenant_allows,
        metrics_addr: args.metrics_addr,
        addr: args.addr,
        agents_dir: args.agents,
        tools_dir,
        workspace: super::workspace_dir(args.workspace)?,
        api_key: api_key(args.api_key_file.as_deref())?,
        mcp_approval_timeout: args.mcp_approval_timeout,
        notify_urls: args.notify_url,
        notify_secret: std::env::var(toolgate::server::notify::SECRET_ENV).ok(),
        public_url: args.public_url,
        allowed_hosts: args.allowed_host,
        tls: args.tls_cert.zip(args.tls_key),
        limits: toolgate::server::listen::ConnLimits {
            header_timeout: args.header_timeout,
            body_timeout: args.body_timeout,
            max_connections: args.max_connections,
        },
        approval_warning: args.approval_warning,
    };
    let store = super::open_store(db)?;
    let runner = super::run::runner(store);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(super::run::STACK)
        .enable_all()
        .build()
        .map_err(|e| Failure::other(format!("cannot start the runtime: {e}")))?;
    rt.block_on(async {
        let _watching = runner.watch_tools(watched, args.reload_every);
        toolgate::server::serve(config, runner).await
    })
    .map_err(|e| match e {
        ServeError::Config(_) | ServeError::Bind { .. } => Failure::bad_input(e.to_string()),
        ServeError::Io(_) => Failure::other(e.to_string()),
    })?;
    Ok(ExitCode::SUCCESS)
}
