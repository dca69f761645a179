//! When toolgate runs as root its tools run as an unprivileged user, which must still
//! write the workspace: a POSIX ACL entry gives that user read-write access to each file
//! and folder (execute where the owner has it), and a default entry on each folder makes
//! what is created there later (by anyone) writable for it too. Protected paths (the
//! database, its key, the tools folder) are skipped. Once per folder and process; a
//! folder that already carries the default entry is not walked again.

use std::collections::BTreeSet;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::XattrFlags;

const ACCESS: &str = "system.posix_acl_access";
const DEFAULT: &str = "system.posix_acl_default";

const USER_OBJ: u16 = 0x01;
const USER: u16 = 0x02;
const GROUP_OBJ: u16 = 0x04;
const GROUP: u16 = 0x08;
const MASK: u16 = 0x10;
const OTHER: u16 = 0x20;
const UNDEFINED: u32 = u32::MAX;

/// One ACL entry: tag, permission bits (rwx = 7), id.
type Entry = (u16, u16, u32);

/// Gives `uid` read-write access to the tree at `root` (see the module's text).
pub fn grant_tree(root: &Path, uid: u32, skip: &[PathBuf]) -> io::Result<()> {
    static DONE: Mutex<BTreeSet<(PathBuf, u32)>> = Mutex::new(BTreeSet::new());
    let key = (root.to_path_buf(), uid);
    if DONE.lock().map(|d| d.contains(&key)).unwrap_or(false) {
        return Ok(());
    }
    walk(root, uid, skip, true)?;
    if let Ok(mut done) = DONE.lock() {
        done.insert(key);
    }
    Ok(())
}

fn walk(dir: &Path, uid: u32, skip: &[PathBuf], top: bool) -> io::Result<()> {
    if skip.iter().any(|s| s == dir) {
        return Ok(());
    }
    let meta = dir.symlink_metadata()?;
    if !meta.is_dir() {
        return grant(dir, &meta, uid, false);
    }
    let done_before = has_default_entry(dir, uid);
    grant(dir, &meta, uid, true)?;
    if done_before && !top {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if skip.contains(&path) {
            continue;
        }
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        if meta.is_symlink() {
            continue;
        }
        if meta.is_dir() {
            walk(&path, uid, skip, false)?;
        } else {
            grant(&path, &meta, uid, false)?;
        }
    }
    Ok(())
}

fn has_default_entry(dir: &Path, uid: u32) -> bool {
    read(dir, DEFAULT)
        .ok()
        .flatten()
        .is_some_and(|e| e.iter().any(|&(tag, _, id)| tag == USER && id == uid))
}

/// Adds `uid`'s entry to the access ACL of `path` (and to the default ACL of a folder).
fn grant(path: &Path, meta: &std::fs::Metadata, uid: u32, dir: bool) -> io::Result<()> {
    let mode = meta.mode();
    let perm = if dir || mode & 0o100 != 0 { 7 } else { 6 };
    let mut names = vec![ACCESS];
    if dir {
        names.push(DEFAULT);
    }
    for name in names {
        let entries = read(path, name)?.unwrap_or_else(|| from_mode(mode));
        if entries.contains(&(USER, perm, uid)) {
            continue;
        }
        let value = encode(&with_user(entries, uid, perm));
        rustix::fs::setxattr(path, name, &value, XattrFlags::empty()).map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!(
                    "cannot give the tool user write access to {} (a POSIX ACL): {e}",
                    path.display()
                ),
            )
        })?;
    }
    Ok(())
}

/// The ACL `name` of `path`, `None` when it has none.
fn read(path: &Path, name: &str) -> io::Result<Option<Vec<Entry>>> {
    let mut buf = vec![0u8; 512];
    match rustix::fs::getxattr(path, name, &mut buf) {
        Ok(n) => Ok(decode(&buf[..n])),
        Err(rustix::io::Errno::NODATA) => Ok(None),
        Err(rustix::io::Errno::RANGE) => Ok(None),
        Err(e) => Err(e.into()),
    }
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
fn with_user(mut entries: Vec<Entry>, uid: u32, perm: u16) -> Vec<Entry> {
    entries.retain(|&(tag, _, id)| !(tag == USER && id == uid) && tag != MASK);
    entries.push((USER, perm, uid));
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
    fn a_tree_is_granted_but_not_what_it_skips() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/f"), "x").unwrap();
        std::fs::write(root.join("db"), "x").unwrap();
        match grant_tree(&root, 65534, &[root.join("db")]) {
            // A file system without ACLs: nothing more to see here.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return,
            r => r.unwrap(),
        }
        let has = |p: &Path| {
            read(p, ACCESS)
                .unwrap()
                .is_some_and(|e| e.iter().any(|&(t, _, id)| t == USER && id == 65534))
        };
        assert!(has(&root.join("sub/f")) && has(&root.join("sub")));
        assert!(!has(&root.join("db")));
        assert!(has_default_entry(&root.join("sub"), 65534));
    }
}
