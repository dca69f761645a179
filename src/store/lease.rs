//! Lease owners: the name a process writes into a run's lease. A lease is held until its
//! time runs out unless its holder renews it; nothing reads the host's process table,
//! so a lease means the same to processes on any machine sharing the store.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// This process's random name: every lease it takes carries it.
fn process_nonce() -> &'static str {
    static NONCE: OnceLock<String> = OnceLock::new();
    NONCE.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_string())
}

/// This machine's name, for people reading a lease.
fn host() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// A new lease owner name for this process: `pid/host/PROCESS.N`, the same process part
/// in every lease it takes, a new `N` each time.
pub fn lease_owner_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}/{}/{}.{}",
        std::process::id(),
        host(),
        process_nonce(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether `owner` names a lease this process took.
pub fn is_this_process(owner: &str) -> bool {
    owner
        .rsplit('/')
        .next()
        .and_then(|last| last.split('.').next())
        .is_some_and(|nonce| nonce == process_nonce())
}

/// The process id a lease owner name starts with, for messages.
pub fn lease_pid(owner: &str) -> &str {
    owner.split('/').next().unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_knows_its_own_leases_and_no_others() {
        let a = lease_owner_name();
        let b = lease_owner_name();
        assert_ne!(a, b);
        assert!(is_this_process(&a) && is_this_process(&b));
        assert!(!is_this_process("12/otherhost/abcdef12.1"));
        assert!(!is_this_process("garbage"));
        assert_eq!(lease_pid(&a), std::process::id().to_string());
    }
}
