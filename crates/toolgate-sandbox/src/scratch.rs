//! The fresh folder of one launch, removed when the launch ends: `home/` (the program's
//! `HOME` and `TMPDIR`, writable for it) and, when paths must be hidden, an empty file
//! and an empty folder to mount over them. Launch folders live in a folder of their own
//! under the system's temporary folder, so that the sweep at every start reads only
//! them, not everything else in `/tmp`.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The start of a launch folder's name: `toolgate-sandbox-PID-START-UUID`.
const PREFIX: &str = "toolgate-sandbox-";
/// The folder holding the launch folders, in the system's temporary folder.
const PARENT: &str = "toolgate-sandbox";

/// Whether `dir` is a real folder of this user's that no one else may write to.
fn ours(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| {
        m.is_dir() && m.uid() == rustix::process::geteuid().as_raw() && m.mode() & 0o022 == 0
    })
}

/// Where launch folders go: `TMP/toolgate-sandbox` (made `0711` when missing) when it
/// is [`ours`]; else (someone else took the name) the temporary folder itself, as
/// before there was a folder of their own.
fn parent() -> PathBuf {
    let tmp = std::env::temp_dir();
    let dir = tmp.join(PARENT);
    match std::fs::DirBuilder::new().mode(0o711).create(&dir) {
        // Whatever the umask: the tool user must reach its own launch folder inside.
        Ok(()) => {
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711));
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return tmp,
    }
    if ours(&dir) { dir } else { tmp }
}

/// Removes the launch folders of toolgate processes that are gone (killed before
/// their launches could clean up). No folder of their own: nothing to do.
pub fn sweep() {
    let tmp = std::env::temp_dir();
    let dir = tmp.join(PARENT);
    let looked = match std::fs::symlink_metadata(&dir) {
        Err(_) => return,
        Ok(_) if ours(&dir) => dir,
        Ok(_) => tmp,
    };
    let Ok(entries) = std::fs::read_dir(&looked) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        if owner.matches('-').count() == 2 && !crate::grants::alive(owner) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    // Empty now: it goes (the next launch makes it again).
    if looked.ends_with(PARENT) {
        let _ = std::fs::remove_dir(&looked);
    }
}

/// A launch's own folder under the system's temporary folder.
#[derive(Debug)]
pub struct Scratch {
    root: PathBuf,
}

impl Scratch {
    /// Makes one; `owner`: the user and group the program runs as (toolgate is root).
    pub fn new(owner: Option<(u32, u32)>) -> std::io::Result<Scratch> {
        let pid = std::process::id();
        let start = crate::grants::start_time(pid).unwrap_or(0);
        let name = format!("{PREFIX}{pid}-{start}-{}", uuid::Uuid::new_v4().simple());
        // The parent may go between its making and ours (another launch's end took it
        // empty): make both again.
        let mut tries = 0;
        let root = loop {
            let root = parent().join(&name);
            match std::fs::DirBuilder::new().mode(0o711).create(&root) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 3 => tries += 1,
                made => break made.map(|()| root)?,
            }
        };
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o711))?;
        let scratch = Scratch { root };
        let home = scratch.home();
        std::fs::DirBuilder::new().mode(0o700).create(&home)?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&home, Some(uid), Some(gid))?;
        }
        Ok(scratch)
    }

    /// The program's `HOME` and `TMPDIR`.
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// An empty, read-only file (made on first use), to mount over a hidden file.
    pub fn empty_file(&self) -> std::io::Result<PathBuf> {
        let p = self.root.join("empty");
        if !p.exists() {
            std::fs::write(&p, b"")?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444))?;
        }
        Ok(p)
    }

    /// An empty, read-only folder (made on first use), to mount over a hidden folder.
    pub fn empty_dir(&self) -> std::io::Result<PathBuf> {
        let p = self.root.join("empty.d");
        if !p.exists() {
            std::fs::DirBuilder::new().mode(0o555).create(&p)?;
        }
        Ok(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Whatever the program left behind goes with it; a failure leaves a temp folder.
        let _ = std::fs::remove_dir_all(&self.root);
        // The launches' own folder goes when it is empty (a launch still running keeps it).
        if let Some(parent) = self.root.parent().filter(|p| p.ends_with(PARENT)) {
            let _ = std::fs::remove_dir(parent);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn launch_folders_live_in_their_own_folder_and_the_sweep_takes_only_dead_ones() {
        let scratch = Scratch::new(None).unwrap();
        let own = std::env::temp_dir().join(PARENT);
        assert_eq!(scratch.root.parent(), Some(own.as_path()));
        assert_eq!(std::fs::metadata(&own).unwrap().mode() & 0o777, 0o711);
        // A folder of a process that is gone (pid 0 never starts at tick 1).
        let dead = own.join(format!("{PREFIX}0-1-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&dead).unwrap();
        sweep();
        assert!(!dead.exists(), "a dead launch's folder stays");
        assert!(scratch.home().is_dir(), "a live launch's folder was taken");
        let root = scratch.root.clone();
        drop(scratch);
        assert!(!root.exists());
        // The last launch's end takes the folder of launches with it (another test's
        // launch may hold it a moment longer).
        for _ in 0..50 {
            if !own.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(
            !own.exists(),
            "the launches' folder stays after the last launch"
        );
    }
}
