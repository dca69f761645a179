//! POSIX ACLs as the kernel stores them (`system.posix_acl_*` extended attributes),
//! read and written through an open descriptor: an entry for the tool user that gives
//! it read-write access (execute where the owner has it) and, on a folder, a default
//! entry so what is made there later is writable for it too; and that entry taken off
//! again. [`crate::grants`] decides when.

use std::fs::Metadata;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;

use rustix::fs::{Mode, XattrFlags};

pub(crate) const ACCESS: &str = "system.posix_acl_access";
pub(crate) const DEFAULT: &str = "system.posix_acl_default";

const USER_OBJ: u16 = 0x01;
const USER: u16 = 0x02;
const GROUP_OBJ: u16 = 0x04;
const GROUP: u16 = 0x08;
const MASK: u16 = 0x10;
const OTHER: u16 = 0x20;
const UNDEFINED: u32 = u32::MAX;

/// One ACL entry: tag, permission bits (rwx = 7), id.
type Entry = (u16, u16, u32);

/// Adds `uid`'s entry to the access ACL of what `fd` is open on (and to the default
/// ACL of a folder).
pub(crate) fn grant(fd: &OwnedFd, meta: &Metadata, uid: u32) -> io::Result<()> {
    let mode = meta.mode();
    let dir = meta.is_dir();
    let perm = if dir || mode & 0o100 != 0 { 7 } else { 6 };
    let mut names = vec![ACCESS];
    if dir {
        names.push(DEFAULT);
    }
    for name in names {
        let entries = read(fd, name)?.unwrap_or_else(|| from_mode(mode));
        if entries.contains(&(USER, perm, uid)) {
            continue;
        }
        set(fd, name, Some(&encode(&with_user(entries, uid, perm))))?;
    }
    Ok(())
}

/// Takes `uid`'s entry off both ACLs; an ACL left with nothing the mode cannot say is
/// removed, and the mode's group bits say the owning group's again.
pub(crate) fn revoke(fd: &OwnedFd, meta: &Metadata, uid: u32) -> io::Result<()> {
    let mut names = vec![ACCESS];
    if meta.is_dir() {
        names.push(DEFAULT);
    }
    for name in names {
        let Some(entries) = read(fd, name)? else {
            continue;
        };
        if !entries.iter().any(|&(t, _, id)| t == USER && id == uid) {
            continue;
        }
        let rest = without_user(entries, uid);
        let minimal = !rest.iter().any(|&(t, _, _)| matches!(t, USER | GROUP));
        match (minimal, name) {
            (true, ACCESS) => {
                set(fd, name, None)?;
                let group = rest
                    .iter()
                    .find(|&&(t, _, _)| t == GROUP_OBJ)
                    .map_or(0, |&(_, p, _)| u32::from(p));
                let mode = (meta.mode() & 0o7707) | (group << 3);
                rustix::fs::fchmod(fd, Mode::from_raw_mode(mode))?;
            }
            (true, _) => set(fd, name, None)?,
            (false, _) => set(fd, name, Some(&encode(&with_mask(rest))))?,
        }
    }
    Ok(())
}

/// The raw ACL `name` of what `fd` is open on, `None` when it has none.
pub(crate) fn get(fd: &OwnedFd, name: &str) -> io::Result<Option<Vec<u8>>> {
    let mut buf = vec![0u8; 4096];
    match rustix::fs::fgetxattr(fd, name, &mut buf) {
        Ok(n) => {
            buf.truncate(n);
            Ok(Some(buf))
        }
        Err(rustix::io::Errno::NODATA) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Sets the raw ACL `name` (`None`: removes it).
pub(crate) fn set(fd: &OwnedFd, name: &str, value: Option<&[u8]>) -> io::Result<()> {
    let done = match value {
        Some(v) => rustix::fs::fsetxattr(fd, name, v, XattrFlags::empty()),
        None => match rustix::fs::fremovexattr(fd, name) {
            Err(rustix::io::Errno::NODATA) => Ok(()),
            r => r,
        },
    };
    Ok(done?)
}

fn read(fd: &OwnedFd, name: &str) -> io::Result<Option<Vec<Entry>>> {
    Ok(get(fd, name)?.and_then(|raw| decode(&raw)))
}

/// The minimal ACL that says what `mode` says.
fn from_mode(mode: u32) -> Vec<Entry> {
    let bits = |shift: u32| ((mode >> shift) & 7) as u16;
    vec![
        (USER_OBJ, bits(6), UNDEFINED),
        (GROUP_OBJ, bits(3), UNDEFINED),
        (OTHER, bits(0), UNDEFINED),
    ]
}

/// `entries` with `uid`'s entry set to `perm` and the mask widened to cover it, in the
/// order the kernel wants (by tag, then id).
fn with_user(entries: Vec<Entry>, uid: u32, perm: u16) -> Vec<Entry> {
    let mut entries = without_user(entries, uid);
    entries.push((USER, perm, uid));
    with_mask(entries)
}

/// `entries` without `uid`'s entry and without a mask.
fn without_user(mut entries: Vec<Entry>, uid: u32) -> Vec<Entry> {
    entries.retain(|&(tag, _, id)| !(tag == USER && id == uid) && tag != MASK);
    entries
}

/// `entries` (no mask among them) with the mask that covers them, sorted.
fn with_mask(mut entries: Vec<Entry>) -> Vec<Entry> {
    let mask = entries
        .iter()
        .filter(|(tag, _, _)| matches!(*tag, USER | GROUP_OBJ | GROUP))
        .fold(0, |m, (_, p, _)| m | p);
    entries.push((MASK, mask, UNDEFINED));
    entries.sort_by_key(|&(tag, _, id)| (tag, id));
    entries
}

fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = 2u32.to_le_bytes().to_vec();
    for &(tag, perm, id) in entries {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

fn decode(bytes: &[u8]) -> Option<Vec<Entry>> {
    let (head, rest) = bytes.split_at_checked(4)?;
    if head != 2u32.to_le_bytes() || rest.len() % 8 != 0 {
        return None;
    }
    Some(
        rest.chunks_exact(8)
            .map(|c| {
                (
                    u16::from_le_bytes([c[0], c[1]]),
                    u16::from_le_bytes([c[2], c[3]]),
                    u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_round_trip_in_kernel_order() {
        let e = with_user(from_mode(0o640), 65534, 6);
        assert_eq!(
            e,
            [
                (USER_OBJ, 6, UNDEFINED),
                (USER, 6, 65534),
                (GROUP_OBJ, 4, UNDEFINED),
                (MASK, 6, UNDEFINED),
                (OTHER, 0, UNDEFINED)
            ]
        );
        assert_eq!(decode(&encode(&e)), Some(e));
    }

    #[test]
    fn a_grant_taken_back_leaves_the_mode_and_no_acl() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let fd: OwnedFd = std::fs::File::open(&f).unwrap().into();
        let meta = f.metadata().unwrap();
        match grant(&fd, &meta, 65534) {
            // A file system without ACLs: nothing more to see here.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return,
            r => r.unwrap(),
        }
        assert!(get(&fd, ACCESS).unwrap().is_some());
        assert_eq!(
            f.metadata().unwrap().mode() & 0o777,
            0o660,
            "the mask shows"
        );
        revoke(&fd, &f.metadata().unwrap(), 65534).unwrap();
        assert_eq!(get(&fd, ACCESS).unwrap(), None);
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o600);
    }
}
