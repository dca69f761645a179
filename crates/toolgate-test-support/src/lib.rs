//! What the workspace's tests share: the built `toolgate` binary launched with a clean
//! environment ([`toolgate`]), `toolgate serve` on a free port with a folder of scripted
//! agents ([`serving`]), the shell-style launch helpers ([`launching`]), fake OpenAI
//! and Anthropic servers ([`fake_openai`], [`fake_anthropic`]), and the tests' PostgreSQL
//! server with a fresh database per test ([`postgres`]).
//!
//! Dev-only: the root package and the crates take it as a dev-dependency, never a
//! normal one (the crate's tests/crate_graph.rs checks).
#![allow(clippy::too_many_lines, reason = "scenario tests read best whole")]
// Test helpers fail the test that called them: a panic with the reason is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod fake_anthropic;
pub mod fake_openai;
pub mod launching;
pub mod postgres;
pub mod serving;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The environment variables that would point the binary at the caller's own setup (a
/// database, tools, keys, log settings): [`toolgate`] removes them.
pub const CLEARED_ENV: &[&str] = &[
    "TOOLGATE_DB",
    "TOOLGATE_TOOLS",
    "TOOLGATE_WORKSPACE",
    "TOOLGATE_SECRET_KEY",
    "TOOLGATE_API_KEY",
    "TOOLGATE_LOG_FORMAT",
    "OPENAI_API_KEY",
    "RUST_LOG",
    "TOOLGATE_SEARCH_PROVIDER",
    "TOOLGATE_SEARCH_URL",
    "TOOLGATE_FETCH_MAX_BYTES",
];

/// The root of the workspace (the folder of the root Cargo.toml).
pub fn workspace_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .expect("crates/toolgate-test-support sits two folders below the workspace root")
            .to_path_buf()
    })
}

/// The path of the built `toolgate` binary (as text, the way `env!` gives it: a path
/// that is not UTF-8 fails the test).
///
/// `CARGO_BIN_EXE_toolgate` when the environment has it, else `toolgate` in the
/// profile folder of the running test executable (`target/<profile>/deps/all-HASH`
/// next to `target/<profile>/toolgate`). Cargo builds the binary before any test of
/// the root package; a test of another crate that launches it must run after
/// `cargo build` (it fails saying so).
pub fn bin() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| {
        let path = match std::env::var_os("CARGO_BIN_EXE_toolgate") {
            Some(p) => PathBuf::from(p),
            None => beside_the_test_executable(),
        };
        path.into_os_string()
            .into_string()
            .unwrap_or_else(|p| panic!("the toolgate binary's path is not UTF-8: {p:?}"))
    })
}

fn beside_the_test_executable() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let name = format!("toolgate{}", std::env::consts::EXE_SUFFIX);
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join(&name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no `{name}` binary near {} (run `cargo build` first, or set CARGO_BIN_EXE_toolgate)",
                exe.display()
            )
        })
}

/// `toolgate` run in `dir`: the built binary with none of [`CLEARED_ENV`] inherited and
/// an empty stdin. Add the arguments and environment, then `.output()` (or
/// [`launching::feed`] for a stdin).
pub fn toolgate(dir: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.current_dir(dir).stdin(Stdio::null());
    for name in CLEARED_ENV {
        cmd.env_remove(name);
    }
    cmd
}

/// The processes alive now whose command line holds `needle` (a walk of `/proc`), as
/// `PID: COMMAND LINE`: what a test checks nothing outlived.
pub fn alive_with(needle: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if line.contains(needle) {
            found.push(format!("{}: {line}", entry.file_name().to_string_lossy()));
        }
    }
    found
}
