//! What this machine can confine: the kernel's Landlock ABI, seccomp filters, whether
//! toolgate runs as root (then tools run as an unprivileged user) — read once per
//! process — and the check that a tool's rules can be enforced here (fail closed: the
//! one missing feature is named).

use std::sync::OnceLock;

use super::error::SandboxError;
use super::policy::{Fs, Rules};

/// The user tools run as when toolgate is root: `nobody` (the kernel's overflow id).
const NOBODY: (u32, u32) = (65534, 65534);

/// A feature a sandbox may need, with the Landlock ABI that brought it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// File-system rules, with truncation under control (ABI 3).
    FsRules,
    /// TCP bind and connect rules (ABI 4).
    TcpRules,
    /// Scoping of signals and abstract Unix sockets to the sandbox (ABI 6).
    Scoping,
    /// Connecting to pathname Unix sockets only inside allowed folders (ABI 9); without
    /// it, file permissions decide.
    UnixSocketRules,
    /// seccomp-BPF filters (to refuse UDP, raw and netlink sockets, io_uring).
    Seccomp,
}

impl Feature {
    pub const ALL: [Feature; 5] = [
        Feature::FsRules,
        Feature::TcpRules,
        Feature::Scoping,
        Feature::UnixSocketRules,
        Feature::Seccomp,
    ];

    /// The Landlock ABI it needs (0: not a Landlock feature).
    pub fn abi(self) -> u32 {
        match self {
            Feature::FsRules => 3,
            Feature::TcpRules => 4,
            Feature::Scoping => 6,
            Feature::UnixSocketRules => 9,
            Feature::Seccomp => 0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Feature::FsRules => "Landlock file-system rules",
            Feature::TcpRules => "Landlock TCP rules",
            Feature::Scoping => "Landlock signal and abstract-socket scoping",
            Feature::UnixSocketRules => "Landlock pathname Unix socket rules",
            Feature::Seccomp => "seccomp filters",
        }
    }
}

/// What this machine supports, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version; 0 when the kernel has no Landlock (or it is disabled).
    pub landlock_abi: u32,
    /// Whether `TOOLGATE_SANDBOX_ABI` lowered what the kernel reports.
    pub abi_capped: bool,
    pub seccomp: bool,
    /// toolgate's effective user is root: tools are dropped to [`Support::tool_user`].
    pub root: bool,
    /// The user and group tools run as when toolgate is root.
    pub tool_user: (u32, u32),
}

/// This process's [`Support`].
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(Support::probe)
}

/// Lowers the Landlock ABI the sandbox uses (to try the fail-closed path on a kernel
/// that has everything); never raises it.
pub const ABI_ENV: &str = "TOOLGATE_SANDBOX_ABI";

impl Support {
    fn probe() -> Support {
        let kernel = landlock_abi();
        // For trying the fail-closed path on a kernel that has everything: only lowers.
        let cap = std::env::var(ABI_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok());
        let landlock_abi = cap.map_or(kernel, |c| c.min(kernel));
        Support {
            landlock_abi,
            abi_capped: landlock_abi < kernel,
            seccomp: seccomp_available(),
            root: rustix::process::geteuid().is_root(),
            tool_user: nobody(),
        }
    }

    pub fn has(&self, f: Feature) -> bool {
        match f {
            Feature::Seccomp => self.seccomp,
            f => self.landlock_abi >= f.abi(),
        }
    }

    /// The features `rules` cannot do without here.
    pub fn needed(&self, rules: &Rules) -> Vec<Feature> {
        let mut need = Vec::new();
        if rules.fs != Fs::Off {
            need.push(Feature::FsRules);
        }
        if !rules.network {
            need.extend([Feature::TcpRules, Feature::Scoping, Feature::Seccomp]);
        }
        // Without a user of its own, only scoping keeps a tool from signalling the
        // server (same user) once it is confined at all.
        if !self.root
            && (rules.fs != Fs::Off || !rules.network)
            && !need.contains(&Feature::Scoping)
        {
            need.push(Feature::Scoping);
        }
        need
    }

    /// Whether `rules` can be enforced here; the error names the first missing feature.
    pub fn check(&self, who: &str, rules: &Rules) -> Result<(), SandboxError> {
        match self.needed(rules).into_iter().find(|f| !self.has(*f)) {
            None => Ok(()),
            Some(feature) => Err(SandboxError::Unsupported {
                who: who.to_string(),
                feature,
                have: self.landlock_abi,
            }),
        }
    }
}

/// The running kernel's Landlock ABI version (0: none).
fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: no ruleset, size 0, the version flag.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).unwrap_or(0)
}

/// Whether seccomp filters can be installed (`PR_GET_SECCOMP` answers).
fn seccomp_available() -> bool {
    // SAFETY: a query without side effects.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// `nobody`'s ids from /etc/passwd, else 65534:65534.
fn nobody() -> (u32, u32) {
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                let mut f = l.split(':');
                (f.next()? == "nobody").then_some(())?;
                let uid = f.nth(1)?.parse().ok()?;
                let gid = f.next()?.parse().ok()?;
                Some((uid, gid))
            })
        })
        .filter(|(uid, _)| *uid != 0)
        .unwrap_or(NOBODY)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_setting_needs_its_features() {
        let s = |abi, root| Support {
            landlock_abi: abi,
            abi_capped: false,
            seccomp: true,
            root,
            tool_user: NOBODY,
        };
        let default = Rules::default();
        assert!(s(7, true).check("t", &default).is_ok());
        let err = s(3, true).check("t", &default).err();
        assert!(
            matches!(
                err,
                Some(SandboxError::Unsupported {
                    feature: Feature::TcpRules,
                    ..
                })
            ),
            "{err:?}"
        );
        let open = Rules {
            network: true,
            ..Rules::default()
        };
        assert!(s(3, true).check("t", &open).is_ok());
        assert!(s(3, false).check("t", &open).is_err(), "scoping, not root");
        let none = Rules {
            fs: Fs::Off,
            network: true,
            ..Rules::default()
        };
        assert!(s(0, false).check("t", &none).is_ok());
        let message = s(0, true)
            .check("tool 'weather'", &default)
            .unwrap_err()
            .to_string();
        assert!(!message.contains('\n'), "{message}");
        assert!(
            message.contains("Landlock") && message.contains("weather"),
            "{message}"
        );
    }
}
