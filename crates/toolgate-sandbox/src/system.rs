//! The system folders every sandbox may use — read-only `/usr`, `/bin`, `/lib*`,
//! `/proc` and `/etc` without its secrets, read-write `/dev/null` and friends — opened
//! once per process (a Landlock rule is made from an open descriptor), and again when
//! `/etc` or a folder split inside it changes (a file replaced there is a new inode,
//! which an old descriptor would not cover).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use landlock::PathFd;

use super::paths;

/// The system folders, as paths and as open descriptors (missing ones left out).
pub struct System {
    pub read_paths: Vec<PathBuf>,
    pub write_paths: Vec<PathBuf>,
    pub read: Vec<PathFd>,
    pub write: Vec<PathFd>,
    /// The modification times of the folders whose entries are rules.
    stamp: Vec<Option<SystemTime>>,
}

/// The folders whose entries (not themselves) are rules.
fn split_folders(secrets: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = secrets
        .iter()
        .flat_map(|s| s.ancestors().skip(1).map(Path::to_path_buf))
        .filter(|d| d.starts_with("/etc"))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

fn stamp_of(dirs: &[PathBuf]) -> Vec<Option<SystemTime>> {
    dirs.iter()
        .map(|d| std::fs::metadata(d).and_then(|m| m.modified()).ok())
        .collect()
}

/// This process's system folders, opened again if `/etc` changed since.
pub fn system() -> Arc<System> {
    static CACHE: Mutex<Option<Arc<System>>> = Mutex::new(None);
    let secrets = paths::etc_secrets();
    let dirs = split_folders(&secrets);
    let stamp = stamp_of(&dirs);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = cache.as_ref().filter(|s| s.stamp == stamp) {
        return Arc::clone(s);
    }
    let mut read_paths: Vec<PathBuf> = paths::SYSTEM
        .iter()
        .filter(|p| **p != "/etc")
        .map(PathBuf::from)
        .collect();
    read_paths.extend(paths::split(Path::new("/etc"), &secrets));
    let write_paths: Vec<PathBuf> = paths::DEVICES.iter().map(PathBuf::from).collect();
    let open = |list: &[PathBuf]| list.iter().filter_map(|p| PathFd::new(p).ok()).collect();
    let fresh = Arc::new(System {
        read: open(&read_paths),
        write: open(&write_paths),
        read_paths,
        write_paths,
        stamp,
    });
    *cache = Some(Arc::clone(&fresh));
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etc_is_opened_without_its_secrets() {
        let s = system();
        assert!(s.read_paths.iter().any(|p| p == Path::new("/usr")));
        assert!(!s.read_paths.iter().any(|p| p == Path::new("/etc")));
        assert!(!s.read_paths.iter().any(|p| p == Path::new("/etc/shadow")));
        if Path::new("/etc/passwd").exists() {
            assert!(s.read_paths.iter().any(|p| p == Path::new("/etc/passwd")));
        }
        assert!(
            Arc::ptr_eq(&s, &system()),
            "opened once while /etc stays as it is"
        );
    }
}
