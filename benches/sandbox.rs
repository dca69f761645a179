//! The cost of the sandbox per call: starting `true` (and waiting for it) through
//! `tool::process::run`, unsandboxed (`sandbox: off`) and in the default sandbox
//! (Landlock ruleset built, per-call folder made and removed, seccomp filter, limits,
//! the user dropped when root), in the same run; then the ratio of the two, measured
//! interleaved so that the machine's load weighs on both alike.
//!
//! Run: `cargo bench --bench sandbox`
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use divan::Bencher;
use toolgate::sandbox::{self, Launch, SandboxPolicy};
use toolgate::tool::process;

fn main() {
    divan::main();
    ratio();
}

fn workspace() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-bench-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir
}

/// One call of `true` under `policy`.
async fn call(policy: &SandboxPolicy, ws: &PathBuf) {
    let mut cmd = tokio::process::Command::new("true");
    let launch = Launch {
        who: "tool 'bench'",
        workspace: ws,
        program: None,
        env: &[],
    };
    let confined = sandbox::confine(&mut cmd, policy, &launch).unwrap_or_else(|e| panic!("{e}"));
    let done = process::run(cmd, b"", Duration::from_secs(10), 1024)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.code, Some(0));
    drop(confined);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[divan::bench(sample_count = 50)]
fn unsandboxed(bencher: Bencher) {
    let (rt, ws) = (runtime(), workspace());
    bencher.bench_local(|| rt.block_on(call(&SandboxPolicy::Off, &ws)));
}

#[divan::bench(sample_count = 50)]
fn sandboxed(bencher: Bencher) {
    let (rt, ws) = (runtime(), workspace());
    let policy = SandboxPolicy::default();
    bencher.bench_local(|| rt.block_on(call(&policy, &ws)));
}

/// Interleaved runs of both, and what the sandbox adds.
fn ratio() {
    const ROUNDS: u32 = 200;
    let (rt, ws) = (runtime(), workspace());
    let sandboxed = SandboxPolicy::default();
    let (mut off, mut on) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        rt.block_on(call(&SandboxPolicy::Off, &ws));
        off += t.elapsed();
        let t = Instant::now();
        rt.block_on(call(&sandboxed, &ws));
        on += t.elapsed();
    }
    let (off, on) = (off / ROUNDS, on / ROUNDS);
    let _ = std::fs::remove_dir_all(&ws);
    let line = format!(
        "sandbox set-up: {:.0} µs per call ({:.0} µs unsandboxed, {:.0} µs sandboxed), ratio {:.2}\n",
        (on.as_secs_f64() - off.as_secs_f64()) * 1e6,
        off.as_secs_f64() * 1e6,
        on.as_secs_f64() * 1e6,
        on.as_secs_f64() / off.as_secs_f64()
    );
    use std::io::Write;
    let _ = std::io::stdout().write_all(line.as_bytes());
}
