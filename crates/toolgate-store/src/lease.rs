//! Lease owners: the name a process writes into a run's lease. A lease is held until its
//! time runs out unless its holder renews it; nothing reads the host's process table,
//! so a lease means the same to processes on any machine sharing the store. Who may
//! take a run's lease is decided here, for every backend.

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

/// Whether `owner` may take run `run`'s lease at `now` (the store's clock): not when the
/// run has ended, nor while another holder's lease runs, unless this process claimed
/// the paused run with its decision (it continues the run itself).
pub(crate) fn may_acquire(
    run: &super::RunRow,
    owner: &str,
    now: i64,
) -> Result<(), super::StoreError> {
    use super::{Refusal, StoreError};
    use toolgate_protocol::RunStatus;
    if run.status.is_final() {
        return Err(StoreError::Refused(
            Refusal::NotResumable,
            format!(
                "run {} is {}; it cannot continue (start a new run with --conversation {})",
                run.id,
                run.status.as_str(),
                run.conversation_id
            ),
        ));
    }
    if let (Some(holder), Some(until)) = (&run.lease_owner, run.lease_until)
        && until > now
        && holder != owner
        && !(run.status == RunStatus::RequiresAction && is_this_process(holder))
    {
        return Err(StoreError::Refused(
            Refusal::LeaseHeld,
            format!(
                "run {} is being continued by another process (pid {}); nothing was changed",
                run.id,
                lease_pid(holder)
            ),
        ));
    }
    Ok(())
}

/// The refusal a holder gets once its lease is gone.
pub(crate) fn lost_lease(id: &str) -> super::StoreError {
    super::StoreError::Refused(
        super::Refusal::LeaseLost,
        format!("run {id} was cancelled or taken over by another process; this process stopped"),
    )
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
