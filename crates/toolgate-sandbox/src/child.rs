//! What the new process does to itself between fork and exec (`pre_exec`), everything
//! made beforehand in toolgate so that here only system calls run (no allocation, no
//! lock): hide protected paths (a mount namespace of its own, root only), set its
//! resource limits, drop to the tool user (root only), `no_new_privs`, enforce the
//! Landlock ruleset, install the seccomp filter. Any failure fails the spawn.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::process::{Resource, Rlimit};
use rustix::thread::{CapabilitySet, CapabilitySets, UnshareFlags};
use seccompiler::BpfProgram;

/// The last capability number the kernel may know (bounding-set drops past the real
/// last one fail with EINVAL, which is fine).
const LAST_CAP: libc::c_ulong = 63;

/// Everything the child applies to itself.
#[derive(Default)]
pub struct Child {
    /// Paths mounted over (source, target), in a private mount namespace.
    pub hide: Vec<(CString, CString)>,
    /// Each limit as both soft and hard.
    pub limits: Vec<(Resource, u64)>,
    /// Drop to this user and group, keeping only `CAP_DAC_READ_SEARCH` (reading what
    /// Landlock allows, as the root server could).
    pub user: Option<(u32, u32)>,
    pub landlock: Option<OwnedFd>,
    pub seccomp: Option<Arc<BpfProgram>>,
}

fn errno(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

fn check(rc: libc::c_long) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl Child {
    /// Applies it all to the calling process. Runs after fork in the child.
    pub fn enter(&self) -> io::Result<()> {
        if !self.hide.is_empty() {
            // SAFETY: the child is single-threaded; a new mount namespace is its own.
            unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNS) }.map_err(errno)?;
            rustix::mount::mount_change(
                c"/",
                MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
            )
            .map_err(errno)?;
            for (source, target) in &self.hide {
                rustix::mount::mount_bind(source.as_c_str(), target.as_c_str()).map_err(errno)?;
                rustix::mount::mount_remount(
                    target.as_c_str(),
                    MountFlags::BIND | MountFlags::RDONLY,
                    c"",
                )
                .map_err(errno)?;
            }
        }
        for &(resource, value) in &self.limits {
            let limit = Rlimit {
                current: Some(value),
                maximum: Some(value),
            };
            rustix::process::setrlimit(resource, limit).map_err(errno)?;
        }
        if let Some((uid, gid)) = self.user {
            drop_to(uid, gid)?;
        }
        rustix::thread::set_no_new_privs(true).map_err(errno)?;
        if let Some(fd) = &self.landlock {
            // SAFETY: a ruleset descriptor made by the parent; flags 0.
            check(unsafe {
                libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32)
            })?;
        }
        if let Some(filter) = &self.seccomp {
            seccompiler::apply_filter(filter).map_err(|e| match e {
                seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => e,
                _ => io::Error::from_raw_os_error(libc::EINVAL),
            })?;
        }
        Ok(())
    }
}

/// Becomes `uid`:`gid` with no supplementary groups and no capability but
/// `CAP_DAC_READ_SEARCH`, which survives exec (ambient) and cannot be regained past it.
fn drop_to(uid: u32, gid: u32) -> io::Result<()> {
    // CAP_DAC_READ_SEARCH (linux/capability.h).
    let keep: libc::c_ulong = 2;
    for cap in 0..=LAST_CAP {
        if cap != keep {
            // SAFETY: prctl with integer arguments.
            let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
            if rc < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                return Err(io::Error::last_os_error());
            }
        }
    }
    rustix::thread::set_keep_capabilities(true).map_err(errno)?;
    rustix::thread::set_thread_groups(&[]).map_err(errno)?;
    let (uid, gid) = (
        rustix::process::Uid::from_raw(uid),
        rustix::process::Gid::from_raw(gid),
    );
    rustix::thread::set_thread_res_gid(gid, gid, gid).map_err(errno)?;
    rustix::thread::set_thread_res_uid(uid, uid, uid).map_err(errno)?;
    let only = CapabilitySet::DAC_READ_SEARCH;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: only,
            permitted: only,
            inheritable: only,
        },
    )
    .map_err(errno)?;
    // SAFETY: prctl with integer arguments.
    let rc = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_RAISE,
            keep,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    check(rc.into())?;
    rustix::thread::set_keep_capabilities(false).map_err(errno)
}

/// Makes `cmd` run `child` between fork and exec.
pub fn install(cmd: &mut tokio::process::Command, child: Child) {
    // SAFETY: `Child::enter` only makes system calls on data prepared beforehand.
    unsafe {
        cmd.pre_exec(move || child.enter());
    }
}
