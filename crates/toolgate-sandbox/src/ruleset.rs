//! The Landlock ruleset of one launch, made in toolgate (the child only enforces it):
//! file-system access handled and granted per folder (read-only or read-write), TCP bind
//! and connect handled with nothing granted when the network is off, and signals and
//! abstract Unix sockets scoped to the sandbox.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::error::SandboxError;
use super::policy::{Fs, Rules};
use super::support::{Feature, Support};
use super::system::System;

/// The newest rights asked for: older kernels drop what they do not know (best effort),
/// after [`Support::check`] made sure that what matters is there.
const NEWEST: ABI = ABI::V9;

/// What one launch may reach.
#[derive(Debug, Default)]
pub struct Grants {
    /// Read and execute.
    pub read: Vec<PathBuf>,
    /// Everything, creating and removing included.
    pub write: Vec<PathBuf>,
}

/// The ruleset for `rules` with the system folders and `grants`, as the file descriptor
/// the child hands to `landlock_restrict_self`; `None` when nothing is confined (fs off,
/// network on).
pub fn build(
    tool: &str,
    rules: &Rules,
    system: &System,
    grants: &Grants,
    support: &Support,
) -> Result<Option<OwnedFd>, SandboxError> {
    let confine_fs = rules.fs != Fs::Off;
    if !confine_fs && rules.network {
        return Ok(None);
    }
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        SandboxError::setup(tool, what, std::io::Error::other(e.to_string()))
    };
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    if confine_fs {
        ruleset = ruleset
            .handle_access(AccessFs::from_all(NEWEST))
            .map_err(|e| fail("Landlock file-system rights", &e))?;
    }
    if !rules.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(NEWEST))
            .map_err(|e| fail("Landlock network rights", &e))?;
    }
    if support.has(Feature::Scoping) {
        ruleset = ruleset
            .scope(Scope::from_all(NEWEST))
            .map_err(|e| fail("Landlock scopes", &e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| fail("a Landlock ruleset", &e))?;
    if confine_fs {
        let read = AccessFs::from_read(NEWEST);
        let write = AccessFs::from_all(NEWEST);
        let opened = system
            .read
            .iter()
            .map(|fd| (fd, read))
            .chain(system.write.iter().map(|fd| (fd, write)));
        for (fd, access) in opened {
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| fail("a Landlock rule for a system folder", &e))?;
        }
        let all = grants
            .read
            .iter()
            .map(|p| (p, read))
            .chain(grants.write.iter().map(|p| (p, write)));
        for (path, access) in all {
            // A folder that is not there (no /lib32 here) grants nothing.
            let Ok(fd) = PathFd::new(path) else {
                continue;
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| fail(&format!("a Landlock rule for {}", path.display()), &e))?;
        }
    }
    Ok(created.into())
}
