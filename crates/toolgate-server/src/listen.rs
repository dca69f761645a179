//! The server's connections: accepted up to a cap (past it, a new connection gets a
//! 503 and is closed, with a log line), each given a deadline for its request headers
//! (which also bounds a keep-alive connection left idle) and its request body, served as
//! HTTP/1.1, over TLS when a certificate is given. Idle, dribbling or piled-up sockets
//! cannot take the server down before anyone's key is even looked at.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How connections are bounded.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// From the connection's start (or its last response) to its request's last header.
    pub header_timeout: Duration,
    /// From a request's headers to its body's last byte.
    pub body_timeout: Duration,
    /// Connections open at once; `None`: from the process's descriptor limit.
    pub max_connections: Option<usize>,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: None,
        }
    }
}

/// Descriptors kept for what is not a connection: the database, tool processes, MCP
/// servers, log files.
const RESERVED_DESCRIPTORS: u64 = 128;
/// How long a refused connection's 503 may take to write.
const REFUSAL_WRITE: Duration = Duration::from_secs(2);
/// How long open connections get to finish once the server stops.
const DRAIN: Duration = Duration::from_secs(30);

/// The connection cap: the one asked for, else what the descriptor limit leaves after
/// raising the soft limit to the hard one.
pub fn connection_cap(asked: Option<usize>) -> usize {
    let limit = raise_descriptor_limit();
    let fits = limit.saturating_sub(RESERVED_DESCRIPTORS).max(16);
    match asked {
        Some(n) => n.max(1),
        None => usize::try_from(fits.min(16_384)).unwrap_or(16_384),
    }
}

/// Raises this process's soft descriptor limit to its hard one; returns the limit in
/// force.
fn raise_descriptor_limit() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            limit = getrlimit(Resource::Nofile);
        }
    }
    limit.current.unwrap_or(1 << 20)
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(String);

/// A certificate chain and its key, from PEM files.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |p: &PathBuf, what: &str| {
        std::fs::read(p)
            .map_err(|e| TlsError(format!("cannot read the TLS {what} {}: {e}", p.display())))
    };
    let cert_pem = read(&cert.to_path_buf(), "certificate")?;
    let key_pem = read(&key.to_path_buf(), "key")?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            TlsError(format!(
                "{} holds no readable PEM certificate: {e}",
                cert.display()
            ))
        })?;
    if chain.is_empty() {
        return Err(TlsError(format!(
            "{} holds no certificate (a PEM file with -----BEGIN CERTIFICATE-----)",
            cert.display()
        )));
    }
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        TlsError(format!(
            "{} holds no readable PEM private key: {e}",
            key.display()
        ))
    })?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(format!("TLS cannot start: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            TlsError(format!(
                "the TLS key {} does not go with the certificate {}: {e}",
                key.display(),
                cert.display()
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves `app` on `listener` until `stop` fires, then lets open connections finish
/// (they are told to close after their current response) for up to [`DRAIN`].
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let cap = connection_cap(limits.max_connections);
    tracing::info!(
        max_connections = cap,
        header_timeout_ms = limits.header_timeout.as_millis() as u64,
        "accepting connections"
    );
    let permits = Arc::new(Semaphore::new(cap));
    let silent = Arc::new(Silent::default());
    let open = TaskTracker::new();
    let full_logged = Throttle::default();
    let error_logged = Throttle::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, most often: wait a moment rather than spin.
                if error_logged.due() {
                    tracing::error!(error = %e, "cannot accept a connection");
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(p) => Some(p),
            // Full: the connection that has been silent longest makes room.
            Err(_) if silent.evict_oldest() => {
                tokio::time::timeout(EVICTION_WAIT, Arc::clone(&permits).acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
            Err(_) => None,
        };
        let Some(permit) = permit else {
            if full_logged.due() {
                tracing::warn!(
                    max_connections = cap,
                    "connection cap reached with every connection busy: new connections get 503 until some close (--max-connections)"
                );
            }
            open.spawn(refuse(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (app, tls, stop) = (app.clone(), tls.clone(), stop.clone());
        let watch = silent.enter();
        open.spawn(async move {
            let evicted = watch.evicted.clone();
            let serving = async {
                match tls {
                    None => connection(TokioIo::new(stream), app, limits, &watch, stop).await,
                    Some(acceptor) => {
                        match tokio::time::timeout(limits.header_timeout, acceptor.accept(stream))
                            .await
                        {
                            Ok(Ok(tls)) => {
                                connection(TokioIo::new(tls), app, limits, &watch, stop).await
                            }
                            Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                            Err(_) => tracing::debug!("TLS handshake timed out"),
                        }
                    }
                }
            };
            tokio::select! {
                _ = serving => {}
                _ = evicted.cancelled() => tracing::debug!("a silent connection was closed to make room"),
            }
            drop(watch);
            drop(permit);
        });
    }
    open.close();
    if tokio::time::timeout(DRAIN, open.wait()).await.is_err() {
        tracing::warn!(
            "connections still open after {}s; closing them",
            DRAIN.as_secs()
        );
    }
    Ok(())
}

/// How long a new connection waits for the room an eviction makes.
const EVICTION_WAIT: Duration = Duration::from_secs(1);

/// The connections that have not sent a whole request yet, oldest first: what is
/// closed first when the cap is reached (idle and dribbling sockets, not the busy ones).
#[derive(Default)]
struct Silent {
    next: AtomicU64,
    waiting: std::sync::Mutex<std::collections::BTreeMap<u64, CancellationToken>>,
}

/// One connection's place in [`Silent`]; leaves it when dropped.
struct Watch {
    id: u64,
    silent: Arc<Silent>,
    evicted: CancellationToken,
}

impl Silent {
    fn enter(self: &Arc<Self>) -> Watch {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let evicted = CancellationToken::new();
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(id, evicted.clone());
        }
        Watch {
            id,
            silent: Arc::clone(self),
            evicted,
        }
    }

    /// Closes the oldest silent connection; false when there is none.
    fn evict_oldest(&self) -> bool {
        let oldest = self.waiting.lock().ok().and_then(|mut w| w.pop_first());
        oldest.map(|(_, token)| token.cancel()).is_some()
    }
}

impl Watch {
    /// The connection sent a request: it is not silent any more.
    fn spoke(&self) {
        if let Ok(mut w) = self.silent.waiting.lock() {
            w.remove(&self.id);
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.spoke();
    }
}

/// One connection, HTTP/1.1, until it closes, fails, or the server stops.
async fn connection<I>(
    io: TokioIo<I>,
    app: axum::Router,
    limits: ConnLimits,
    watch: &Watch,
    stop: CancellationToken,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let body_timeout = limits.body_timeout;
    let spoke = std::sync::atomic::AtomicBool::new(false);
    let service = hyper::service::service_fn(|req: hyper::Request<hyper::body::Incoming>| {
        if !spoke.swap(true, Ordering::Relaxed) {
            watch.spoke();
        }
        let req = req.map(|b| axum::body::Body::new(Deadline::new(b, body_timeout)));
        let mut app = app.clone();
        async move { tower::Service::call(&mut app, req).await }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(64 * 1024);
    let conn = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r { tracing::debug!(error = %e, "connection ended"); }
        }
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// The answer to a connection past the cap.
async fn refuse(mut stream: TcpStream) {
    const BODY: &str = r#"{"error":{"type":"overloaded","message":"the server has as many connections open as it takes; try again shortly"}}"#;
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(REFUSAL_WRITE, async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// At most one log line per interval.
#[derive(Default)]
struct Throttle(AtomicU64);

impl Throttle {
    fn due(&self) -> bool {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        let now = START.get_or_init(Instant::now).elapsed().as_secs() + 1;
        let last = self.0.load(Ordering::Relaxed);
        (last == 0 || now >= last + 10)
            && self
                .0
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// A request body that must arrive whole by a deadline, however it dribbles.
struct Deadline<B> {
    body: B,
    /// `None` for a body that is over before it starts (a GET's): no timer for it.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<B: Body> Deadline<B> {
    fn new(body: B, within: Duration) -> Self {
        let sleep = (!body.is_end_stream()).then(|| Box::pin(tokio::time::sleep(within)));
        Deadline { body, sleep }
    }
}

/// The body took longer than its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
struct BodyTimedOut;

impl<B> Body for Deadline<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.sleep.as_mut().map(|s| s.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Some(Err(Box::new(BodyTimedOut)))),
            _ => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
