//! `toolgate serve` against hostile connections: sockets that never send a byte,
//! headers and bodies that dribble in, a server with few descriptors, SSE readers that
//! never read, and HTTPS with its own certificate. The soak of 1,000 idle and 1,000
//! slow connections (with /healthz latency printed) is `cargo test --release --test
//! all -- server_connections:: --ignored`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use serving::{Server, Site, bin, serve_command};

/// `toolgate serve` on `site` under `ulimit -n nofile` (hard and soft), with `extra`.
fn serve_limited(site: &Site, nofile: u32, extra: &[&str]) -> Server {
    let mut wrapper = Command::new("bash");
    wrapper
        .arg("-c")
        .arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\""))
        .arg(bin());
    let mut cmd = serve_command(site, wrapper, extra);
    cmd.env("RUST_LOG", "warn");
    Server::started(&mut cmd, None)
}

fn addr(server: &Server) -> SocketAddr {
    server.base.trim_start_matches("http://").parse().unwrap()
}

/// Whether the server closed `s` (a read gives 0 bytes, or an error) within `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            // A 408 or 503 the server wrote before closing: read on to the close.
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// 300 sockets that never send a byte, against a server with 256 descriptors: it
/// neither runs out of descriptors nor stops answering; the silent sockets are closed.
#[tokio::test(flavor = "multi_thread")]
async fn idle_sockets_cannot_starve_the_server() {
    let site = Site::new();
    let server = serve_limited(&site, 256, &["--header-timeout", "2s"]);
    let to = addr(&server);
    let mut idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(to).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let health = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    for _ in 0..5 {
        let r = health.get(server.url("/healthz")).send().await;
        let status = r.map(|r| r.status().as_u16());
        assert_eq!(
            status.ok(),
            Some(200),
            "/healthz with 300 idle sockets open"
        );
    }
    // Every idle socket is closed by the header deadline (or made room for others).
    let deadline = Instant::now() + Duration::from_secs(15);
    for (i, s) in idle.iter_mut().enumerate() {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(10));
        assert!(closed_within(s, left), "idle socket {i} still open");
    }
    let (status, _) = server.get("/v1/runs").await;
    assert_eq!(status, 200);
}

/// Headers sent one byte at a time, and a body that never ends: both cut by their
/// deadlines; a plain request between them is served.
#[tokio::test(flavor = "multi_thread")]
async fn dribbling_headers_and_bodies_are_cut_off() {
    let site = Site::new();
    let server = serve_limited(
        &site,
        1024,
        &["--header-timeout", "1s", "--body-timeout", "1s"],
    );
    let to = addr(&server);
    let dribbler = std::thread::spawn(move || {
        let mut s = TcpStream::connect(to).unwrap();
        let started = Instant::now();
        for b in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
            .iter()
            .cycle()
        {
            if s.write_all(&[*b]).is_err() {
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(100));
            if started.elapsed() > Duration::from_secs(20) {
                return None;
            }
        }
        None
    });
    let mut body = TcpStream::connect(to).unwrap();
    body.write_all(b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"agent\":")
        .unwrap();
    let (status, _) = server.get("/healthz").await;
    assert_eq!(status, 200);
    assert!(
        closed_within(&mut body, Duration::from_secs(10)),
        "a body that never ends keeps its connection"
    );
    let cut = dribbler.join().unwrap();
    assert!(
        cut.is_some(),
        "headers dribbled for 20 s were never cut off"
    );
}

/// A reader of /v1/events that never reads while 60 runs with 200 KB answers go by:
/// the server does not keep the events for it; it gets `event: lagged` and its stream
/// ends.
#[tokio::test(flavor = "multi_thread")]
async fn a_reader_that_never_reads_is_dropped() {
    let site = Site::new();
    let answer = "x".repeat(200_000);
    site.agent("big", "[]", &format!("  - content: {answer}\n"));
    let server = Server::start(&site, None, &[]);
    let pid = server.child.id();
    // A small receive window, and nothing read.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&addr(&server).into()).unwrap();
    let mut reader: TcpStream = socket.into();
    reader
        .write_all(
            b"GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let rss = || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap()
    };
    let before = rss();
    for _ in 0..60 {
        let (status, run) = server
            .post("/v1/runs", json!({"agent": "big", "input": "Talk."}))
            .await;
        assert_eq!(status, 200);
        assert_eq!(run["status"], "completed");
    }
    let after = rss();
    eprintln!(
        "server RSS: {} MB before, {} MB after 60 runs of 200 KB with a reader that never reads",
        before / 1024,
        after / 1024
    );
    // Now read everything there is: the stream ends with `lagged`.
    reader
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        if got.ends_with(b"0\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.contains("event: lagged"),
        "no lagged event in {} bytes",
        got.len()
    );
    assert!(
        got.len() < 60 * 200_000,
        "the stream carried everything ({} bytes): nothing was dropped",
        got.len()
    );
}

/// `--tls-cert` and `--tls-key`: HTTPS with the given certificate; plain HTTP to the
/// same port gets nothing.
#[tokio::test(flavor = "multi_thread")]
async fn https_with_its_own_certificate() {
    let site = Site::new();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(site.path().join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(
        site.path().join("key.pem"),
        cert.signing_key.serialize_pem(),
    )
    .unwrap();
    let server = Server::start(
        &site,
        None,
        &["--tls-cert", "cert.pem", "--tls-key", "key.pem"],
    );
    let base = server.base.clone();
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let port = base.rsplit(':').next().unwrap();
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert.cert.pem().as_bytes()).unwrap())
        .resolve("localhost", format!("127.0.0.1:{port}").parse().unwrap())
        .build()
        .unwrap();
    let r = client
        .get(format!("https://localhost:{port}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let plain = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await;
    assert!(plain.is_err() || !plain.unwrap().status().is_success());
    // A key that does not go with the certificate: one clear line, exit 2.
    let other = rcgen::generate_simple_self_signed(vec!["x".to_string()]).unwrap();
    std::fs::write(
        site.path().join("other.pem"),
        other.signing_key.serialize_pem(),
    )
    .unwrap();
    let out = Command::new(bin())
        .current_dir(site.path())
        .arg("--db")
        .arg(site.db())
        .args(["serve", "--addr", "127.0.0.1:0", "--agents", "agents"])
        .args(["--tls-cert", "cert.pem", "--tls-key", "other.pem"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not go with the certificate"), "{err}");
}

/// The soak: 1,000 sockets that never send a byte and 1,000 that dribble headers, held
/// open (and reopened when closed) while /healthz is timed 500 times. Prints p50, p99
/// and the worst; every /healthz must answer 200.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a soak: cargo test --release --test all -- server_connections:: --ignored --nocapture"]
async fn soak_idle_and_slow_connections() {
    // 2,000 sockets here, and as many there: both processes at their hard limit (the
    // server raises its own).
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    )
    .unwrap();
    let site = Site::new();
    let server = Server::start(&site, None, &[]);
    let to = addr(&server);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut holders = Vec::new();
    for kind in ["idle", "slow"] {
        for _ in 0..4 {
            let stop = stop.clone();
            holders.push(std::thread::spawn(move || {
                // 250 sockets per thread, each reopened when the server closes it.
                let open = || TcpStream::connect(to).ok();
                let mut socks: Vec<Option<TcpStream>> = (0..250).map(|_| open()).collect();
                let mut reopened = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for s in socks.iter_mut() {
                        let alive = match s {
                            Some(sock) if kind == "slow" => sock.write_all(b"X").is_ok(),
                            Some(sock) => {
                                sock.set_nonblocking(true).unwrap();
                                let mut b = [0u8; 1];
                                let r = sock.read(&mut b);
                                !matches!(r, Ok(0)) && !matches!(&r, Err(e) if e.kind() != std::io::ErrorKind::WouldBlock)
                            }
                            None => false,
                        };
                        if !alive {
                            *s = open();
                            if let Some(sock) = s
                                && kind == "slow"
                            {
                                let _ = sock.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
                            }
                            reopened += 1;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                reopened
            }));
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut times = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        let r = client.get(server.url("/healthz")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        times.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reopened: u64 = holders.into_iter().map(|h| h.join().unwrap()).sum();
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!(
        "soak: 1000 idle + 1000 slow sockets ({reopened} reopened); /healthz over {} requests: p50 {:?}, p99 {:?}, max {:?}",
        times.len(),
        at(0.5),
        at(0.99),
        times[times.len() - 1]
    );
}
