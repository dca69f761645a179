//! The seccomp filter of a sandboxed program, compiled once per process with
//! `seccompiler` (the Firecracker team's BPF compiler): with the network off, sockets of
//! any family but Unix are refused (UDP, raw, netlink; Landlock already stops TCP);
//! always, io_uring (it would open sockets behind the filter's back), file handles
//! (`open_by_handle_at` bypasses paths), the kernel keyring and x32 calls are refused,
//! and so are `setsid` and `setpgid`: a program stays in the process group toolgate
//! kills whole (a cancel, a timeout, toolgate's own death), it cannot leave it.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// The filter for a sandbox with (`network`) or without the network.
pub fn filter(network: bool) -> Result<Arc<BpfProgram>, String> {
    static OPEN: OnceLock<Result<Arc<BpfProgram>, String>> = OnceLock::new();
    static CLOSED: OnceLock<Result<Arc<BpfProgram>, String>> = OnceLock::new();
    let slot = if network { &OPEN } else { &CLOSED };
    slot.get_or_init(|| compile(network).map(Arc::new)).clone()
}

fn compile(network: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let always = |nr: libc::c_long| (nr, Vec::new());
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = [
        always(libc::SYS_io_uring_setup),
        always(libc::SYS_io_uring_enter),
        always(libc::SYS_io_uring_register),
        always(libc::SYS_open_by_handle_at),
        always(libc::SYS_name_to_handle_at),
        always(libc::SYS_add_key),
        always(libc::SYS_request_key),
        always(libc::SYS_keyctl),
        always(libc::SYS_setsid),
        always(libc::SYS_setpgid),
    ]
    .into_iter()
    .collect();
    if !network {
        // The first argument, the family: anything but AF_UNIX matches (is refused).
        let not_unix = || -> Result<Vec<SeccompRule>, String> {
            let cond = SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )
            .map_err(|e| e.to_string())?;
            Ok(vec![
                SeccompRule::new(vec![cond]).map_err(|e| e.to_string())?,
            ])
        };
        rules.insert(libc::SYS_socket, not_unix()?);
        rules.insert(libc::SYS_socketpair, not_unix()?);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    Ok(match arch {
        TargetArch::x86_64 => refuse_x32(program),
        _ => program,
    })
}

/// `program` behind a refusal of x32 system calls (numbers with bit 30 set, same
/// architecture tag), which would otherwise reach `socket` under another number.
fn refuse_x32(program: BpfProgram) -> BpfProgram {
    const X32_BIT: u32 = 0x4000_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let op = |code: u16, jt: u8, jf: u8, k: u32| sock_filter { code, jt, jf, k };
    let mut out = vec![
        // A = seccomp_data.nr
        op(0x20, 0, 0, 0),
        // A >= X32_BIT: the next instruction (refuse); else skip it.
        op(0x35, 0, 1, X32_BIT),
        op(0x06, 0, 0, SECCOMP_RET_ERRNO | libc::EACCES as u32),
    ];
    out.extend(program);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_filters_compile() {
        let closed = filter(false);
        let open = filter(true);
        assert!(closed.is_ok() && open.is_ok(), "{closed:?} {open:?}");
        if let (Ok(c), Ok(o)) = (closed, open) {
            assert!(c.len() > o.len(), "the closed one checks sockets too");
        }
    }
}
