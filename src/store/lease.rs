//! Lease owners: the name a process writes into a run's lease, and whether the process a
//! lease names may still be alive.

use std::path::Path;

/// Whether the process named in a lease may still be running. A lease names
/// `pid/host/nonce`; on the same host a dead (or zombie) pid frees the lease at once,
/// elsewhere only its expiry does.
pub fn lease_holder_alive(owner: &str) -> bool {
    let mut parts = owner.splitn(3, '/');
    let (Some(pid), Some(host)) = (parts.next(), parts.next()) else {
        return true;
    };
    if host != this_host() || !Path::new("/proc/self").exists() {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => false,
    }
}

/// This machine's name, for leases.
pub fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string())
}

/// A lease owner name for this process.
pub fn lease_owner_name() -> String {
    format!(
        "{}/{}/{}",
        std::process::id(),
        this_host(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}
