//! The sandbox as configured: `sandbox:` in a tool file, an MCP server declaration or an
//! agent file, read into a [`SandboxPolicy`] (a tool's or a server's, defaults filled in) or a
//! [`Ceiling`] (an agent's, only what it writes), and the two met: the stricter wins.
//!
//! ```yaml
//! sandbox: off                  # no sandbox at all: written out, never a default
//! sandbox:
//!   fs: workspace-write         # workspace-write (default) | workspace-read | off
//!   read: [/opt/models]         # more folders to read (relative: from the file's folder)
//!   write: [/var/cache/tool]    # more folders to write
//!   network: false              # default; true lets it connect anywhere
//!   limits: {cpu: 600, memory: 4G, processes: 512, file_size: 1G, open_files: 4096}
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

/// CPU seconds a process may use when the configuration does not say.
pub const DEFAULT_CPU: u64 = 600;
/// Bytes of data (heap and other private writable memory) a process may map.
pub const DEFAULT_MEMORY: u64 = 4 << 30;
/// Processes (and threads) the tool's user may have at once.
pub const DEFAULT_PROCESSES: u64 = 512;
/// The largest file a process may write.
pub const DEFAULT_FILE_SIZE: u64 = 1 << 30;
/// Files a process may hold open at once.
pub const DEFAULT_OPEN_FILES: u64 = 4096;

/// How much of the file system a sandboxed tool sees.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Fs {
    /// System folders and its own folder read-only; the workspace and its temporary
    /// folder read-write.
    #[default]
    WorkspaceWrite,
    /// As `WorkspaceWrite`, but the workspace read-only too.
    WorkspaceRead,
    /// No file-system rules (its user's file permissions still apply).
    Off,
}

impl Fs {
    /// Its name in a file: `workspace-write`, `workspace-read` or `off`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Higher is stricter.
    fn strictness(self) -> u8 {
        match self {
            Fs::Off => 0,
            Fs::WorkspaceWrite => 1,
            Fs::WorkspaceRead => 2,
        }
    }

    fn parse(v: &Value) -> Result<Fs, String> {
        if is_off(v) {
            return Ok(Fs::Off);
        }
        match v.as_str().map(str::parse) {
            Some(Ok(fs)) => Ok(fs),
            _ => Err(format!(
                "fs must be workspace-write, workspace-read or off, not {v}"
            )),
        }
    }
}

/// `off` as written: YAML reads a bare `off` as `false`.
fn is_off(v: &Value) -> bool {
    matches!(v, Value::Bool(false)) || v.as_str().is_some_and(|s| s.trim() == "off")
}

/// Resource limits of each process a tool starts; `None` is no limit (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// CPU seconds (`RLIMIT_CPU`): past it the process is killed.
    pub cpu: Option<u64>,
    /// Bytes of data segment and private writable mappings (`RLIMIT_DATA`): an
    /// allocation past it fails. Address space merely reserved (as V8 does) is free.
    pub memory: Option<u64>,
    /// Processes and threads of the tool's user (`RLIMIT_NPROC`).
    pub processes: Option<u64>,
    /// Bytes of the largest file it may write (`RLIMIT_FSIZE`).
    pub file_size: Option<u64>,
    /// Open files (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu: Some(DEFAULT_CPU),
            memory: Some(DEFAULT_MEMORY),
            processes: Some(DEFAULT_PROCESSES),
            file_size: Some(DEFAULT_FILE_SIZE),
            open_files: Some(DEFAULT_OPEN_FILES),
        }
    }
}

/// The names of the limits, as written.
const LIMIT_KEYS: [&str; 5] = ["cpu", "memory", "processes", "file_size", "open_files"];

impl Limits {
    /// No limit at all.
    pub const NONE: Limits = Limits {
        cpu: None,
        memory: None,
        processes: None,
        file_size: None,
        open_files: None,
    };

    fn slot(&mut self, key: &str) -> Option<&mut Option<u64>> {
        match key {
            "cpu" => Some(&mut self.cpu),
            "memory" => Some(&mut self.memory),
            "processes" => Some(&mut self.processes),
            "file_size" => Some(&mut self.file_size),
            "open_files" => Some(&mut self.open_files),
            _ => None,
        }
    }

    fn get(&self, key: &str) -> Option<u64> {
        match key {
            "cpu" => self.cpu,
            "memory" => self.memory,
            "processes" => self.processes,
            "file_size" => self.file_size,
            _ => self.open_files,
        }
    }

    /// `limits:` as written, over `self` (keys not written keep their value).
    fn read(mut self, v: &Value) -> Result<Limits, String> {
        let Some(map) = v.as_object() else {
            return Err(format!(
                "limits must be a map ({}), not {v}",
                LIMIT_KEYS.join(", ")
            ));
        };
        for (key, value) in map {
            let parsed = limit_value(key, value)?;
            let Some(slot) = self.slot(key) else {
                return Err(format!(
                    "limits: unknown limit '{key}' (there are: {})",
                    LIMIT_KEYS.join(", ")
                ));
            };
            *slot = parsed;
        }
        Ok(self)
    }

    /// The lower of each limit.
    fn meet(self, other: Limits) -> Limits {
        let low = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        };
        Limits {
            cpu: low(self.cpu, other.cpu),
            memory: low(self.memory, other.memory),
            processes: low(self.processes, other.processes),
            file_size: low(self.file_size, other.file_size),
            open_files: low(self.open_files, other.open_files),
        }
    }

    fn to_json(self) -> Value {
        let mut out = Map::new();
        for key in LIMIT_KEYS {
            let v = match (key, self.get(key)) {
                (_, None) => json!("off"),
                ("memory" | "file_size", Some(n)) => json!(bytes_text(n)),
                (_, Some(n)) => json!(n),
            };
            out.insert(key.to_string(), v);
        }
        Value::Object(out)
    }
}

/// One limit's value: a count, seconds (`cpu`: also `90s`, `10m`, `1h`), bytes
/// (`memory`, `file_size`: also `512K`, `4M`, `2G`, `1T`), or `off`.
fn limit_value(key: &str, v: &Value) -> Result<Option<u64>, String> {
    let bad = || {
        let unit = match key {
            "cpu" => "seconds (600, 10m)",
            "memory" | "file_size" => "bytes (4G, 512M)",
            _ => "a count",
        };
        format!("limits: {key} must be {unit} or off, not {v}")
    };
    if is_off(v) {
        return Ok(None);
    }
    match v {
        Value::Number(n) => n.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(bad),
        Value::String(s) => {
            let s = s.trim();
            let scaled = match key {
                "cpu" => scaled(s, &[("s", 1), ("m", 60), ("h", 3600)]),
                "memory" | "file_size" => scaled(
                    s.trim_end_matches("iB").trim_end_matches('B'),
                    &[
                        ("K", 1 << 10),
                        ("M", 1 << 20),
                        ("G", 1 << 30),
                        ("T", 1 << 40),
                    ],
                ),
                _ => s.parse().ok(),
            };
            scaled.filter(|n| *n > 0).map(Some).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

/// `s` as a number with one of `units` (or none) after it.
fn scaled(s: &str, units: &[(&str, u64)]) -> Option<u64> {
    for (suffix, factor) in units {
        if let Some(n) = s
            .strip_suffix(suffix)
            .or_else(|| s.strip_suffix(suffix.to_ascii_lowercase().as_str()))
        {
            return n.trim().parse::<u64>().ok()?.checked_mul(*factor);
        }
    }
    s.parse().ok()
}

/// `n` bytes as the shortest exact `K`/`M`/`G`/`T` form.
fn bytes_text(n: u64) -> String {
    for (suffix, factor) in [
        ("T", 1u64 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ] {
        if n.is_multiple_of(factor) {
            return format!("{}{suffix}", n / factor);
        }
    }
    n.to_string()
}

/// What a sandboxed tool may do (the `On` form of [`SandboxPolicy`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Rules {
    pub fs: Fs,
    /// More folders (or files) it may read.
    pub read: Vec<PathBuf>,
    /// More folders (or files) it may read and write.
    pub write: Vec<PathBuf>,
    /// Whether it may open network sockets (TCP, UDP, raw, netlink).
    pub network: bool,
    pub limits: Limits,
}

/// A tool's sandbox: on with its rules, or off altogether (written out as
/// `sandbox: off`: the program then runs as toolgate's own user, with toolgate's
/// environment and no limits, as it would without toolgate).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SandboxPolicy {
    Off,
    On(Rules),
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy::On(Rules::default())
    }
}

impl SandboxPolicy {
    /// Reads `sandbox:` as written in the file whose folder is `base` (relative `read`
    /// and `write` paths are taken from it). `Err` names the key at fault and why.
    pub fn parse(v: &Value, base: &Path) -> Result<SandboxPolicy, (String, String)> {
        match v {
            v if is_off(v) => Ok(SandboxPolicy::Off),
            Value::Object(map) => {
                let c = Ceiling::read(map, base)?;
                let mut rules = Rules {
                    fs: c.fs.unwrap_or_default(),
                    read: c.read.unwrap_or_default(),
                    write: c.write.unwrap_or_default(),
                    network: c.network.unwrap_or(false),
                    limits: Limits::default(),
                };
                if let Some(v) = map.get("limits") {
                    rules.limits = rules
                        .limits
                        .read(v)
                        .map_err(|m| ("limits".to_string(), m))?;
                }
                Ok(SandboxPolicy::On(rules))
            }
            other => Err((
                "sandbox".into(),
                format!(
                    "sandbox must be off or a map (fs, read, write, network, limits), not {other}"
                ),
            )),
        }
    }

    /// The rules, `None` when the sandbox is off.
    pub fn rules(&self) -> Option<&Rules> {
        match self {
            SandboxPolicy::Off => None,
            SandboxPolicy::On(r) => Some(r),
        }
    }

    /// This policy under an agent's `ceiling`: for each setting the stricter of the two.
    /// A tool whose sandbox is off gets the ceiling's settings alone.
    pub fn meet(&self, ceiling: &Ceiling) -> SandboxPolicy {
        let mine = match self {
            SandboxPolicy::On(r) => r.clone(),
            SandboxPolicy::Off => Rules {
                fs: Fs::Off,
                read: Vec::new(),
                write: Vec::new(),
                network: true,
                limits: Limits::NONE,
            },
        };
        if ceiling.is_empty() {
            return self.clone();
        }
        let fs = match ceiling.fs {
            Some(f) if f.strictness() > mine.fs.strictness() => f,
            _ => mine.fs,
        };
        let inside = |p: &PathBuf, list: &Option<Vec<PathBuf>>| {
            list.iter().flatten().any(|a| p.starts_with(a))
        };
        // Readable: anywhere when the ceiling lists no reads, else inside what it lets
        // the tools read or write.
        let may_read = |p: &PathBuf| {
            ceiling.read.is_none() || inside(p, &ceiling.read) || inside(p, &ceiling.write)
        };
        let may_write = |p: &PathBuf| ceiling.write.is_none() || inside(p, &ceiling.write);
        let mut read: Vec<PathBuf> = mine.read.iter().filter(|p| may_read(p)).cloned().collect();
        let mut write: Vec<PathBuf> = Vec::new();
        for p in &mine.write {
            if fs != Fs::WorkspaceRead && may_write(p) {
                write.push(p.clone());
            } else if may_read(p) {
                read.push(p.clone());
            }
        }
        SandboxPolicy::On(Rules {
            fs,
            read,
            write,
            network: mine.network && ceiling.network.unwrap_or(true),
            limits: mine.limits.meet(ceiling.limits),
        })
    }

    /// One line for a table: `off`, `workspace-write`, `workspace-read, network`,
    /// `fs off, +2 paths`, ...
    pub fn summary(&self) -> String {
        let SandboxPolicy::On(r) = self else {
            return "off".into();
        };
        let mut s = match r.fs {
            Fs::Off => "fs off".to_string(),
            f => f.as_str().to_string(),
        };
        if r.network {
            s.push_str(", network");
        }
        let extra = r.read.len() + r.write.len();
        if extra > 0 {
            s.push_str(&format!(
                ", +{extra} path{}",
                if extra == 1 { "" } else { "s" }
            ));
        }
        if r.limits != Limits::default() {
            s.push_str(", own limits");
        }
        s
    }

    /// The policy as it would be written, every setting spelled out.
    pub fn to_json(&self) -> Value {
        match self {
            SandboxPolicy::Off => json!("off"),
            SandboxPolicy::On(r) => json!({
                "fs": r.fs.as_str(),
                "read": r.read,
                "write": r.write,
                "network": r.network,
                "limits": r.limits.to_json(),
            }),
        }
    }
}

impl fmt::Display for SandboxPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

impl Serialize for SandboxPolicy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> Deserialize<'de> for SandboxPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        SandboxPolicy::parse(&v, Path::new("/")).map_err(|(_, m)| serde::de::Error::custom(m))
    }
}

/// An agent's `sandbox:`: limits it puts on the sandboxes of all its tools. Only what it
/// writes applies; a tool's own stricter setting stays.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ceiling {
    pub fs: Option<Fs>,
    /// When given, the tools' extra `read` paths must lie inside these (or `write`).
    pub read: Option<Vec<PathBuf>>,
    /// When given, the tools' extra `write` paths must lie inside these.
    pub write: Option<Vec<PathBuf>>,
    pub network: Option<bool>,
    /// `off` (no limit) for each limit it does not write.
    pub limits: Limits,
}

impl Ceiling {
    /// Reads an agent's `sandbox:` (relative paths from `base`, its file's folder).
    pub fn parse(v: &Value, base: &Path) -> Result<Ceiling, (String, String)> {
        let Some(map) = v.as_object() else {
            return Err((
                "sandbox".into(),
                format!(
                    "an agent's sandbox is a map (fs, read, write, network, limits) that only \
                     tightens its tools' sandboxes, not {v}"
                ),
            ));
        };
        let mut c = Ceiling::read(map, base)?;
        if let Some(v) = map.get("limits") {
            c.limits = Limits::NONE
                .read(v)
                .map_err(|m| ("limits".to_string(), m))?;
        }
        Ok(c)
    }

    /// Whether it constrains nothing.
    pub fn is_empty(&self) -> bool {
        *self
            == Ceiling {
                limits: Limits::NONE,
                ..Default::default()
            }
    }

    /// The settings every form shares (`limits` aside).
    fn read(map: &Map<String, Value>, base: &Path) -> Result<Ceiling, (String, String)> {
        const KEYS: [&str; 5] = ["fs", "read", "write", "network", "limits"];
        if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err((
                k.clone(),
                format!(
                    "sandbox: unknown setting '{k}' (there are: {})",
                    KEYS.join(", ")
                ),
            ));
        }
        let paths = |key: &str| -> Result<Option<Vec<PathBuf>>, (String, String)> {
            let Some(v) = map.get(key) else {
                return Ok(None);
            };
            let fail = || {
                (
                    key.to_string(),
                    format!("sandbox: {key} must be a list of paths"),
                )
            };
            let list = v.as_array().ok_or_else(fail)?;
            list.iter()
                .map(|p| {
                    let p = p
                        .as_str()
                        .filter(|s| !s.trim().is_empty())
                        .ok_or_else(fail)?;
                    Ok(std::path::absolute(base.join(p)).unwrap_or_else(|_| base.join(p)))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        };
        let network = match map.get("network") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                return Err((
                    "network".into(),
                    format!("sandbox: network must be true or false, not {other}"),
                ));
            }
        };
        Ok(Ceiling {
            fs: map
                .get("fs")
                .map(Fs::parse)
                .transpose()
                .map_err(|m| ("fs".to_string(), format!("sandbox: {m}")))?,
            read: paths("read")?,
            write: paths("write")?,
            network,
            limits: Limits::NONE,
        })
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
