//! The fresh folder of one launch, removed when the launch ends: `home/` (the program's
//! `HOME` and `TMPDIR`, writable for it) and, when paths must be hidden, an empty file
//! and an empty folder to mount over them.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::PathBuf;

/// A launch's own folder under the system's temporary folder.
#[derive(Debug)]
pub struct Scratch {
    root: PathBuf,
}

impl Scratch {
    /// Makes one; `owner`: the user and group the program runs as (toolgate is root).
    pub fn new(owner: Option<(u32, u32)>) -> std::io::Result<Scratch> {
        let root = std::env::temp_dir().join(format!(
            "toolgate-sandbox-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::DirBuilder::new().mode(0o711).create(&root)?;
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
    }
}
