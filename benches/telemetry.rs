//! What metrics and trace export cost per call: whole runs on the scripted model whose
//! every turn calls `echo` once (so a call is one model turn, one tool call and one
//! saved step), and runs of one turn calling `echo` 16 times, driven three ways in the
//! same process: with nothing on, with the Prometheus metrics counting, and with the
//! metrics and the OTLP span exporter on (posting to a local sink that takes every
//! batch, over HTTP/protobuf, in batches off the hot path as in production).
//!
//! `ratios` measures the three interleaved, medians of 31 rounds, and prints
//! microseconds per call and each mode's ratio to "off".
//!
//! Run: `cargo bench --bench telemetry` (`-- ratios` for the ratios alone;
//! `BENCH_DIR=/dev/shm` puts the database on tmpfs).
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use divan::Bencher;
use divan::counter::ItemsCount;
use toolgate::agent::Agent;
use toolgate::protocol::RunStatus;
use toolgate::run::{Runner, StartRun};
use toolgate::store::Store;
use toolgate::telemetry::{metrics, otel};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;

fn main() {
    // Every span exported, none dropped: batches every 100 ms, a queue for all of them
    // (the defaults, 5 s and 2,048 spans, drop most of what these fast runs make).
    // SAFETY: set before any other thread starts.
    unsafe {
        std::env::set_var("OTEL_BSP_SCHEDULE_DELAY", "100");
        std::env::set_var("OTEL_BSP_MAX_QUEUE_SIZE", "100000");
    }
    divan::main();
}

/// How a run is observed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Off,
    Metrics,
    Traces,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Off => "off",
            Mode::Metrics => "metrics",
            Mode::Traces => "metrics+traces",
        })
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    runner: Runner,
    /// Agents: one call per turn (20 turns), and 16 calls in one turn.
    serial: Agent,
    batch: Agent,
    workspace: std::path::PathBuf,
    runtime: tokio::runtime::Runtime,
}

/// Spans go to the exporter (`Mode::Traces`); otherwise the subscriber takes none.
static TRACING: AtomicBool = AtomicBool::new(false);

/// The process's subscriber: the OTLP layer, switched by [`TRACING`], exporting to a
/// local sink. Made once (it is the global default).
fn install_tracing() {
    static EXPORTING: OnceLock<otel::Exporting> = OnceLock::new();
    EXPORTING.get_or_init(|| {
        let settings = otel::OtelSettings {
            endpoint: sink(),
            trace_content: false,
        };
        let (layer, exporting) = otel::layer::<tracing_subscriber::Registry>(&settings)
            .unwrap_or_else(|e| panic!("{e}"));
        // Asked at every span (a plain filter_fn would be asked once per callsite).
        let switched = layer.with_filter(tracing_subscriber::filter::DynFilterFn::new(|_, _| {
            TRACING.load(Ordering::Relaxed)
        }));
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(switched))
            .unwrap_or_else(|e| panic!("{e}"));
        exporting
    });
}

/// Batches the sink took, and their bytes.
static BATCHES: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

/// A local OTLP endpoint that takes every POST (200, empty body); its URL.
fn sink() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let url = format!(
        "http://{}",
        listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || take_posts(stream));
        }
    });
    url
}

/// Reads requests off one connection (head, then `content-length` bytes) and answers
/// each with 200.
fn take_posts(mut s: std::net::TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let Some(head) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let text = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
        let length: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head + 4 + length {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..head + 4 + length);
        BATCHES.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(length, Ordering::Relaxed);
        if s.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )
        .is_err()
        {
            return;
        }
    }
}

fn agent(dir: &std::path::Path, name: &str, turns: usize, calls: usize) -> Agent {
    let mut replies = String::from("replies:\n");
    for t in 0..turns {
        let list: Vec<String> = (0..calls)
            .map(|c| format!("{{name: echo, arguments: {{text: \"t{t} c{c}\"}}}}"))
            .collect();
        replies.push_str(&format!(
            "  - content: Step {t}.\n    tool_calls: [{}]\n",
            list.join(", ")
        ));
    }
    replies.push_str("  - content: Finished.\n");
    std::fs::write(dir.join(format!("{name}.replies.yaml")), replies)
        .unwrap_or_else(|e| panic!("{e}"));
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &file,
        format!(
            "name: {name}\nmodel: scripted:{name}.replies.yaml\ntools: [echo]\nmax_iterations: {}\n",
            turns + 1
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Agent::load(&file).unwrap_or_else(|e| panic!("{e}"))
}

fn setup() -> Setup {
    let dir = tempfile::tempdir_in(
        std::env::var("BENCH_DIR").unwrap_or_else(|_| std::env::temp_dir().display().to_string()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (serial, batch) = (
        agent(dir.path(), "serial", 20, 1),
        agent(dir.path(), "batch", 1, 16),
    );
    let store = Store::open(dir.path().join("bench.db")).unwrap_or_else(|e| panic!("{e}"));
    let runner = Runner::new(store, toolgate::tool::sources::standard());
    let (limits, store) = (Arc::clone(&runner.limits), runner.store.clone());
    metrics::install(|registry, bounds| {
        toolgate::server::collect::register(registry, bounds, limits, store);
    });
    install_tracing();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    Setup {
        workspace: dir.path().to_path_buf(),
        _dir: dir,
        runner,
        serial,
        batch,
        runtime,
    }
}

/// One whole run of `agent`, observed as `mode` says.
fn run_once(s: &Setup, agent: &Agent, mode: Mode) {
    let start = StartRun {
        priority: None,
        owner: None,
        agent: agent.clone(),
        model: None,
        conversation: None,
        message: "go".into(),
        tools_dir: None,
        workspace: Some(s.workspace.clone()),
    };
    metrics::set_recording(mode != Mode::Off);
    TRACING.store(mode == Mode::Traces, Ordering::Relaxed);
    let run = s
        .runtime
        .block_on(s.runner.start(start))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.status, RunStatus::Completed);
}

const MODES: [Mode; 3] = [Mode::Off, Mode::Metrics, Mode::Traces];

/// Runs of 20 turns, one call each: per call (a turn, a call, a saved step).
#[divan::bench(args = MODES, sample_count = 15)]
fn call_per_turn(bencher: Bencher, mode: Mode) {
    let s = setup();
    bencher
        .counter(ItemsCount::new(20usize))
        .bench_local(|| run_once(&s, &s.serial, mode));
}

/// Runs of one turn of 16 calls: per call, the turn shared.
#[divan::bench(args = MODES, sample_count = 15)]
fn calls_in_one_turn(bencher: Bencher, mode: Mode) {
    let s = setup();
    bencher
        .counter(ItemsCount::new(16usize))
        .bench_local(|| run_once(&s, &s.batch, mode));
}

/// The three modes interleaved, medians of 31 rounds: microseconds per call and each
/// mode's ratio to "off"; then what the sink took (proof the spans went out).
#[divan::bench(sample_count = 1, sample_size = 1)]
fn ratios() {
    const ROUNDS: usize = 31;
    let s = setup();
    // Warm up: files read, statements prepared, label sets made, the exporter started.
    for mode in MODES {
        run_once(&s, &s.serial, mode);
        run_once(&s, &s.batch, mode);
    }
    let time = |calls: usize, agent: &Agent, mode: Mode| {
        let start = std::time::Instant::now();
        run_once(&s, agent, mode);
        start.elapsed().as_secs_f64() * 1e6 / calls as f64
    };
    for (what, agent, calls) in [
        ("one call per turn (20 turns)", &s.serial, 20),
        ("16 calls in one turn", &s.batch, 16),
    ] {
        let mut rows: [Vec<f64>; 3] = Default::default();
        for _ in 0..ROUNDS {
            for (i, mode) in MODES.into_iter().enumerate() {
                rows[i].push(time(calls, agent, mode));
            }
        }
        let m: Vec<f64> = rows
            .iter_mut()
            .map(|v| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            })
            .collect();
        println!(
            "{what}: off {:.1} us/call; metrics {:.1} us ({:.3}x); metrics+traces {:.1} us ({:.3}x)",
            m[0],
            m[1],
            m[1] / m[0],
            m[2],
            m[2] / m[0]
        );
    }
    metrics::set_recording(true);
    TRACING.store(false, Ordering::Relaxed);
    // The exporter sends what it holds every 100 ms: wait for the last batch.
    std::thread::sleep(std::time::Duration::from_secs(2));
    println!(
        "the OTLP sink took {} batches, {} KB",
        BATCHES.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed) / 1024
    );
}
