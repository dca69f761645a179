//! Write access for the tool user, lent for as long as a tool runs and taken back
//! after: no ACL entry and no mode bit toolgate adds outlives the launches that needed
//! it, even when toolgate is killed.
//!
//! A folder is lent through a *lease*, kept in a folder only root can read
//! ([`lease_root`]): a lock file, a journal of every path the grant touched with its
//! ACLs and mode as they were (written before each change; the journals sit in a
//! folder of their own, `journals/`, so that the sweep at every start reads only the
//! leases in use, not every lease ever taken), and one holder file per
//! launch using the lease (`PID-START-SEQ`, START the process's start time, so a
//! reused process id is not taken for the holder), which its launch keeps open and
//! locked (`flock`) while it runs: the lock is what says a holder lives, so a toolgate
//! in another PID namespace sharing the lease root (a container beside this one) does
//! not take a running launch for a dead one; the kernel drops the lock when the holder's
//! process dies, however it dies. The first launch grants and
//! journals; the last one to end restores every journaled path, then takes the
//! tool user's entries off whatever was made in the folder meanwhile (inherited from
//! the default ACL). A lease whose holders are all dead is restored by the next
//! toolgate that looks: [`sweep`] at start-up, or a launch on the same folder.
//!
//! Restoring opens each path with `RESOLVE_NO_SYMLINKS` and checks its device and
//! inode against the journal, so a tool that swaps a file for a link cannot turn the
//! restore onto something else.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{FlockOperation, Mode, OFlags, ResolveFlags};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::acl;

/// Where leases are kept: `/run/toolgate/grants` (root's, cleared at boot with the
/// ACLs it could name still on disk: the sweep restores those), else under the
/// system's temporary folder.
pub fn lease_root() -> PathBuf {
    let run = Path::new("/run");
    if run.is_dir() && rustix::fs::access(run, rustix::fs::Access::WRITE_OK).is_ok() {
        run.join("toolgate/grants")
    } else {
        std::env::temp_dir().join("toolgate-grants")
    }
}

/// Write access to one folder for `uid`, given back when this drops.
#[derive(Debug)]
pub struct Lease {
    base: PathBuf,
    holder: PathBuf,
    /// The holder file, open and locked for as long as the launch runs.
    hold: Option<File>,
}

/// The journal's first line: what the lease is on.
#[derive(Serialize, Deserialize)]
struct Head {
    folder: PathBuf,
    uid: u32,
}

/// One path as it was before the grant.
#[derive(Serialize, Deserialize)]
struct Was {
    path: PathBuf,
    dev: u64,
    ino: u64,
    mode: u32,
    access: Option<Vec<u8>>,
    default: Option<Vec<u8>>,
}

impl Lease {
    /// Lends `folder` (and what is in it, but for `skip`) to `uid` for this launch.
    pub fn take(folder: &Path, uid: u32, skip: &[PathBuf]) -> io::Result<Lease> {
        let base = lease_base(folder, uid)?;
        let _lock = lock(&base)?;
        let holders = live_holders(&base)?;
        let journal = journal_of(&base);
        if holders == 0 && journal.exists() {
            restore(&journal)?;
        }
        if !journal.exists() {
            grant(folder, uid, skip, &journal)?;
        }
        let holder = holders_dir(&base).join(me());
        let hold = File::create(&holder)?;
        rustix::fs::flock(&hold, FlockOperation::NonBlockingLockExclusive)?;
        Ok(Lease {
            base,
            holder,
            hold: Some(hold),
        })
    }

    fn give_back(&mut self) -> io::Result<()> {
        let _lock = lock(&self.base)?;
        self.hold = None;
        match fs::remove_file(&self.holder) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        if live_holders(&self.base)? == 0 {
            restore(&journal_of(&self.base))?;
        }
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Err(e) = self.give_back() {
            // Left for the next sweep, which retries; say so where someone may look.
            eprintln!(
                "toolgate: could not take back the tool user's access ({e}); \
                 the next start restores it"
            );
        }
    }
}

/// Restores every lease no live process holds (toolgate was killed while a tool ran).
pub fn sweep() -> io::Result<()> {
    let root = lease_root();
    let journals = root.join(JOURNALS);
    let entries = match fs::read_dir(&journals) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return adopt_journals(&root),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "journal") {
            let Some(stem) = path.file_stem() else {
                continue;
            };
            let base = root.join(stem);
            let _lock = lock(&base)?;
            if path.exists() && live_holders(&base)? == 0 {
                restore(&path)?;
            }
        }
    }
    Ok(())
}

/// The folder of journals, under the lease root.
const JOURNALS: &str = "journals";

/// Where the journal of the lease at `base` is kept.
fn journal_of(base: &Path) -> PathBuf {
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push(".journal");
    base.with_file_name(JOURNALS).join(name)
}

/// A lease root from before `journals/` (or none): its journals move there, each under
/// its lease's lock, and the sweep of a later start finds them. Reads the whole root
/// once.
fn adopt_journals(root: &Path) -> io::Result<()> {
    let entries = match fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    make_journals(root)?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "journal") {
            let base = path.with_extension("");
            let _lock = lock(&base)?;
            if path.exists() {
                fs::rename(&path, journal_of(&base))?;
            }
        }
    }
    sweep()
}

/// Makes `ROOT/journals` (root's alone) when missing.
fn make_journals(root: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root.join(JOURNALS))
}

/// `ROOT/HASH`, HASH naming the folder and user; the lease root made when missing.
fn lease_base(folder: &Path, uid: u32) -> io::Result<PathBuf> {
    let root = lease_root();
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&root)?;
    if !root.join(JOURNALS).is_dir() {
        adopt_journals(&root)?;
    }
    let mut hash = Sha256::new();
    hash.update(uid.to_le_bytes());
    hash.update(folder.as_os_str().as_encoded_bytes());
    let name: String = hash.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let base = root.join(name);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(holders_dir(&base))?;
    Ok(base)
}

fn holders_dir(base: &Path) -> PathBuf {
    base.with_extension("holders")
}

/// An exclusive lock on the lease, held until the file closes.
fn lock(base: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(base.with_extension("lock"))?;
    rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
    Ok(file)
}

/// This launch's holder name: `PID-START-SEQ`.
fn me() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    let start = start_time(pid).unwrap_or(0);
    format!("{pid}-{start}-{}", SEQ.fetch_add(1, Ordering::Relaxed))
}

/// How many holders are alive; the dead ones' files are removed. Called under the
/// lease's lock, so no holder is between its making and its locking.
fn live_holders(base: &Path) -> io::Result<usize> {
    let mut live = 0;
    for entry in fs::read_dir(holders_dir(base))? {
        let entry = entry?;
        let name = entry.file_name();
        if held(&entry.path()) || alive(&name.to_string_lossy()) {
            live += 1;
        } else {
            let _ = fs::remove_file(entry.path());
        }
    }
    Ok(live)
}

/// Whether a launch holds the holder file at `path` locked. A holder written by a
/// toolgate from before the lock is judged by its name ([`alive`]) alone.
fn held(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    matches!(
        rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK
    )
}

/// Whether the process a `PID-START-…` name was made by still runs.
pub(crate) fn alive(name: &str) -> bool {
    let mut parts = name.split('-');
    let (Some(pid), Some(start)) = (parts.next(), parts.next()) else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    start_time(pid) == Some(start)
}

/// A process's start time in clock ticks since boot (`/proc/PID/stat`, field 22).
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Grants `uid` the tree at `folder`, each path journaled before it changes.
fn grant(folder: &Path, uid: u32, skip: &[PathBuf], journal: &Path) -> io::Result<()> {
    let mut out = io::BufWriter::new(
        OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .open(journal)?,
    );
    let head = Head {
        folder: folder.to_path_buf(),
        uid,
    };
    writeln!(out, "{}", serde_json::to_string(&head)?)?;
    walk(folder, skip, &mut |path, fd, meta| {
        let was = Was {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            access: acl::get(fd, acl::ACCESS)?,
            default: meta
                .is_dir()
                .then(|| acl::get(fd, acl::DEFAULT))
                .transpose()?
                .flatten(),
        };
        writeln!(out, "{}", serde_json::to_string(&was)?)?;
        out.flush()?;
        out.get_ref().sync_data()?;
        acl::grant(fd, meta, uid).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot give the tool user write access to {} (a POSIX ACL): {e}",
                    path.display()
                ),
            )
        })
    })
}

/// Puts back every journaled path, takes `uid`'s entries off the paths made since,
/// then removes the journal.
fn restore(journal: &Path) -> io::Result<()> {
    let mut lines = BufReader::new(File::open(journal)?).lines();
    let Some(head) = lines.next().transpose()? else {
        return fs::remove_file(journal);
    };
    let Ok(head) = serde_json::from_str::<Head>(&head) else {
        return fs::remove_file(journal);
    };
    let mut known = HashSet::new();
    for line in lines {
        // A line cut by a crash mid-write names nothing that was changed.
        let Ok(was) = serde_json::from_str::<Was>(&line?) else {
            continue;
        };
        known.insert((was.dev, was.ino));
        put_back(&was);
    }
    let uid = head.uid;
    let _ = walk(&head.folder, &[], &mut |_, fd, meta| {
        if !known.contains(&(meta.dev(), meta.ino())) {
            let _ = acl::revoke(fd, meta, uid);
        }
        Ok(())
    });
    fs::remove_file(journal)
}

/// Sets one path's ACLs and mode back as the journal says; a path gone or replaced is
/// left alone.
fn put_back(was: &Was) {
    let Ok(fd) = open(&was.path) else { return };
    let Ok(meta) = metadata(&fd) else { return };
    if (meta.dev(), meta.ino()) != (was.dev, was.ino) {
        return;
    }
    let _ = acl::set(&fd, acl::ACCESS, was.access.as_deref());
    if meta.is_dir() {
        let _ = acl::set(&fd, acl::DEFAULT, was.default.as_deref());
    }
    if was.access.is_none() && meta.mode() & 0o7777 != was.mode & 0o7777 {
        let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(was.mode & 0o7777));
    }
}

/// Opens `path` for its attributes without following a link anywhere on the way.
fn open(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    )?)
}

type Visit<'a> = dyn FnMut(&Path, &OwnedFd, &fs::Metadata) -> io::Result<()> + 'a;

/// Calls `visit` on `dir` and every folder and plain file under it, but `skip`, links
/// and what is gone by the time it is opened.
fn walk(dir: &Path, skip: &[PathBuf], visit: &mut Visit<'_>) -> io::Result<()> {
    if skip.iter().any(|s| s == dir) {
        return Ok(());
    }
    match dir.symlink_metadata() {
        Ok(m) if m.is_dir() || m.is_file() => {}
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    let fd = match open(dir) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let meta = metadata(&fd)?;
    visit(dir, &fd, &meta)?;
    if !meta.is_dir() {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        walk(&entry?.path(), skip, visit)?;
    }
    Ok(())
}

/// The metadata of what `fd` is open on.
fn metadata(fd: &OwnedFd) -> io::Result<fs::Metadata> {
    File::from(fd.try_clone()?).metadata()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn acl_of(p: &Path) -> Option<Vec<u8>> {
        acl::get(&open(p).unwrap(), acl::ACCESS).unwrap()
    }

    /// A folder with a root-only file; `None` where this file system has no ACLs.
    fn folder() -> Option<tempfile::TempDir> {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, "x").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
        let fd = open(&f).unwrap();
        match acl::set(
            &fd,
            acl::ACCESS,
            acl::get(&fd, acl::ACCESS).unwrap().as_deref(),
        ) {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => None,
            _ => Some(dir),
        }
    }

    #[test]
    fn the_last_of_two_leases_gives_the_folder_back() {
        let Some(dir) = folder() else { return };
        let f = dir.path().join("f");
        let one = Lease::take(dir.path(), 65534, &[]).unwrap();
        let two = Lease::take(dir.path(), 65534, &[]).unwrap();
        drop(one);
        assert!(acl_of(&f).is_some(), "the second launch lost its access");
        fs::write(dir.path().join("new"), "y").unwrap();
        assert!(acl_of(&dir.path().join("new")).is_some(), "inherited");
        drop(two);
        assert_eq!(acl_of(&f), None);
        assert_eq!(acl_of(&dir.path().join("new")), None);
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_file_swapped_for_a_link_does_not_turn_the_restore_elsewhere() {
        let Some(dir) = folder() else { return };
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("t");
        fs::write(&target, "t").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
        let lease = Lease::take(dir.path(), 65534, &[]).unwrap();
        let f = dir.path().join("f");
        fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink(&target, &f).unwrap();
        drop(lease);
        assert_eq!(target.metadata().unwrap().mode() & 0o777, 0o640);
        assert_eq!(acl_of(&target), None);
    }

    /// As if the launch's process had been killed: its holder names a process that is
    /// gone, and the lock its process held is dropped.
    fn kill(mut lease: Lease) {
        let dead = holders_dir(&lease.base).join("999999999-1-0");
        fs::rename(&lease.holder, &dead).unwrap();
        lease.hold = None;
        std::mem::forget(lease);
    }

    #[test]
    fn a_running_launch_named_by_a_process_this_namespace_cannot_see_is_kept() {
        let Some(dir) = folder() else { return };
        let f = dir.path().join("f");
        let mut lease = Lease::take(dir.path(), 65534, &[]).unwrap();
        // A toolgate in another PID namespace wrote it: its name means nothing here,
        // its lock is held.
        let foreign = holders_dir(&lease.base).join("999999998-1-0");
        fs::rename(&lease.holder, &foreign).unwrap();
        lease.holder = foreign;
        sweep().unwrap();
        assert!(acl_of(&f).is_some(), "a running launch lost its access");
        drop(lease);
        assert_eq!(acl_of(&f), None);
    }

    #[test]
    fn a_lease_whose_holder_died_is_restored_by_the_sweep() {
        let Some(dir) = folder() else { return };
        let f = dir.path().join("f");
        let lease = Lease::take(dir.path(), 65534, &[]).unwrap();
        kill(lease);
        assert!(acl_of(&f).is_some());
        sweep().unwrap();
        assert_eq!(acl_of(&f), None);
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_journal_of_the_older_layout_is_adopted_and_restored() {
        let Some(dir) = folder() else { return };
        let f = dir.path().join("f");
        let lease = Lease::take(dir.path(), 65534, &[]).unwrap();
        let base = lease.base.clone();
        kill(lease);
        // As a toolgate from before `journals/` left it: the journal beside the lock.
        let old = base.with_extension("journal");
        fs::rename(journal_of(&base), &old).unwrap();
        let journals = base.with_file_name(JOURNALS);
        let root = journals.parent().unwrap().to_path_buf();
        adopt_journals(&root).unwrap();
        assert!(!old.exists());
        assert!(journals.is_dir());
        assert_eq!(acl_of(&f), None);
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o600);
    }
}
