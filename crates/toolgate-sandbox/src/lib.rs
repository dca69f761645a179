//! The sandbox every program started for a tool runs in — command tools, `shell`, the
//! Dify adapter's python, stdio MCP servers — set up between fork and exec:
//!
//! - the file system through Landlock: system folders and the program's own folder
//!   read-only, the workspace and a fresh per-launch folder (its `HOME`) read-write,
//!   nothing else; the database, its key file and the tools folder stay out of sight
//!   even inside the workspace;
//! - no network unless the tool says `network: true`: Landlock refuses TCP, a seccomp
//!   filter every socket family but Unix; abstract Unix sockets and signals are scoped
//!   to the sandbox;
//! - `no_new_privs`, resource limits (CPU, memory, processes, file size, open files),
//!   its own process group;
//! - as root, an unprivileged user (`nobody`) that keeps only `CAP_DAC_READ_SEARCH`
//!   (so that `RLIMIT_NPROC` holds and it cannot signal, `chmod` or write what it does
//!   not own), the workspace lent to it with ACL entries for the launch only (see
//!   `grants`: taken back when the launch ends, or by the next start after a crash);
//! - an environment built from nothing.
//!
//! What a kernel cannot enforce, the launch refuses (fail closed), unless the tool's
//! file says `sandbox: off`. See [`SandboxPolicy`] for the settings.

mod acl;
mod child;
mod env;
mod error;
mod grants;
mod paths;
mod policy;
mod ruleset;
mod scratch;
mod seccomp;
mod support;
mod system;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::process::Resource;

pub use error::SandboxError;
pub use paths::{protect, protect_database, protected};
pub use policy::{
    Ceiling, DEFAULT_CPU, DEFAULT_FILE_SIZE, DEFAULT_MEMORY, DEFAULT_OPEN_FILES, DEFAULT_PROCESSES,
    Fs, Limits, Rules, SandboxPolicy,
};
pub use support::{ABI_ENV, Feature, Support, support};

use child::Child;
use ruleset::Grants;
use scratch::Scratch;

/// How a program is started for a tool.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    /// What it runs for, as messages name it: `tool 'x'`, `MCP server 'y'`.
    pub who: &'a str,
    /// Its working folder: the workspace.
    pub workspace: &'a Path,
    /// The program and arguments as the tool's file gives them, to find the program's
    /// own folder. `None` for a command the model wrote (`shell`).
    pub program: Option<(&'a str, &'a [String])>,
    /// The variables the tool declares, expanded.
    pub env: &'a [(String, String)],
}

/// A started program's sandbox: keep it until the program has ended (its folder is
/// removed when this drops).
#[derive(Debug)]
pub struct Confined {
    scratch: Option<Scratch>,
    /// The workspace lent to the tool user, given back when the launch ends.
    _leases: Vec<grants::Lease>,
}

impl Confined {
    /// The program's own folder (`HOME`), `None` when the sandbox is off.
    pub fn home(&self) -> Option<PathBuf> {
        self.scratch.as_ref().map(Scratch::home)
    }
}

/// Sets `cmd` up to start inside `policy`'s sandbox: its environment, working folder
/// and what runs between fork and exec. Fails (before anything starts) when this
/// machine cannot enforce the policy.
pub fn confine(
    cmd: &mut tokio::process::Command,
    policy: &SandboxPolicy,
    launch: &Launch<'_>,
) -> Result<Confined, SandboxError> {
    let SandboxPolicy::On(rules) = policy else {
        cmd.envs(launch.env.iter().map(|(k, v)| (k, v)));
        return Ok(Confined {
            scratch: None,
            _leases: Vec::new(),
        });
    };
    let support = support::support();
    support.check(launch.who, rules)?;
    let tool = launch.who;
    let user = support.root.then_some(support.tool_user);
    let scratch =
        Scratch::new(user).map_err(|e| SandboxError::setup(tool, "its temporary folder", e))?;
    let workspace = canonical(launch.workspace);
    let protected = paths::protected();
    let mut child = Child {
        user,
        limits: limits(&rules.limits, support.root),
        ..Child::default()
    };
    let write_here: Vec<PathBuf> = match rules.fs {
        Fs::WorkspaceRead => Vec::new(),
        _ => std::iter::once(workspace.clone())
            .chain(rules.write.iter().map(|p| canonical(p)))
            .collect(),
    };
    let leases = match user {
        Some((uid, _)) => lend(tool, &write_here, uid, &protected)?,
        None => Vec::new(),
    };
    let grants = if rules.fs == Fs::Off {
        Grants::default()
    } else {
        let own = launch
            .program
            .map(|(p, args)| paths::own_folders(p, args, &protected))
            .unwrap_or_default();
        let mut mine = Grants {
            read: own.clone(),
            write: write_here,
        };
        mine.read.extend(rules.read.iter().map(|p| canonical(p)));
        if rules.fs == Fs::WorkspaceRead {
            mine.read.push(workspace.clone());
            mine.read.extend(rules.write.iter().map(|p| canonical(p)));
        }
        let hidden: Vec<PathBuf> = protected
            .into_iter()
            .filter(|p| {
                mine.read
                    .iter()
                    .chain(&mine.write)
                    .any(|g| p.starts_with(g))
                    && !own.iter().any(|o| p.starts_with(o))
            })
            .collect();
        if !hidden.is_empty() {
            if support.root {
                child.hide = hiding(&hidden, &own, &scratch)
                    .map_err(|e| SandboxError::setup(tool, "hiding the database", e))?;
            } else {
                let around = |list: Vec<PathBuf>| -> Vec<PathBuf> {
                    list.iter().flat_map(|g| paths::split(g, &hidden)).collect()
                };
                // The tool's own folders hold no hidden path: they stay whole.
                mine.read = around(mine.read);
                mine.write = around(mine.write);
            }
        }
        mine.write.push(scratch.home());
        mine
    };
    let system = system::system();
    child.landlock = ruleset::build(tool, rules, &system, &grants, support)?;
    if support.seccomp {
        let filter = seccomp::filter(rules.network).map_err(|e| {
            SandboxError::setup(tool, "the seccomp filter", std::io::Error::other(e))
        })?;
        child.seccomp = Some(filter);
    }
    let readable = |dir: &Path| {
        rules.fs == Fs::Off || {
            let dir = canonical(dir);
            [
                &system.read_paths,
                &system.write_paths,
                &grants.read,
                &grants.write,
            ]
            .into_iter()
            .flatten()
            .any(|g| dir.starts_with(g))
        }
    };
    let env = env::build(&scratch.home(), launch.env, &readable);
    cmd.env_clear().envs(env).current_dir(&workspace);
    child::install(cmd, child);
    Ok(Confined {
        scratch: Some(scratch),
        _leases: leases,
    })
}

/// Lends each folder the tool may write to the tool user for this launch.
fn lend(
    tool: &str,
    folders: &[PathBuf],
    uid: u32,
    protected: &[PathBuf],
) -> Result<Vec<grants::Lease>, SandboxError> {
    folders
        .iter()
        .filter(|f| f.exists())
        .map(|folder| {
            grants::Lease::take(folder, uid, protected)
                .map_err(|e| SandboxError::setup(tool, "the workspace for the tool user", e))
        })
        .collect()
}

/// Puts back what a toolgate killed while its tools ran left: the tool user's access
/// to workspaces (see [`grants`]) and the launches' temporary folders. Run at start-up;
/// cheap when there is nothing to do. Not root: nothing was ever granted.
pub fn sweep() -> std::io::Result<()> {
    if !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    scratch::sweep();
    grants::sweep()
}

/// Mounts that put an empty file or folder over each hidden path (around the tool's own
/// folders inside one).
fn hiding(
    hidden: &[PathBuf],
    own: &[PathBuf],
    scratch: &Scratch,
) -> std::io::Result<Vec<(CString, CString)>> {
    let mut out = Vec::new();
    for h in hidden {
        for target in paths::cover(h, own) {
            let source = if target.is_dir() {
                scratch.empty_dir()?
            } else {
                scratch.empty_file()?
            };
            out.push((c_path(&source)?, c_path(&target)?));
        }
    }
    Ok(out)
}

fn c_path(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other)
}

/// The limits to set, as rlimits. Not root: never above what toolgate itself may have.
fn limits(l: &Limits, root: bool) -> Vec<(Resource, u64)> {
    let all = [
        (Resource::Cpu, l.cpu),
        (Resource::Data, l.memory),
        (Resource::Nproc, l.processes),
        (Resource::Fsize, l.file_size),
        (Resource::Nofile, l.open_files),
    ];
    all.into_iter()
        .filter_map(|(r, v)| {
            let v = v?;
            let hard = if root {
                None
            } else {
                rustix::process::getrlimit(r).maximum
            };
            Some((r, hard.map_or(v, |h| v.min(h))))
        })
        .collect()
}

fn canonical(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    abs.canonicalize().unwrap_or(abs)
}
