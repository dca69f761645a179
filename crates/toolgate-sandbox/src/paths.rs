//! Which paths a sandboxed program may reach: the system folders (with `/etc`'s secrets
//! left out), its own folder (where its program is installed), and the paths it must
//! never see even inside a folder it may use — the database, its key file and the
//! tools folder, registered here by whoever opens them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Read-only for every sandboxed program: what a program needs to start and run.
pub const SYSTEM: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc",
];

/// Device files every program may read and write.
pub const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Files of `/etc` a sandboxed program never reads: password hashes, sudo rules, host
/// keys (the `ssh_host_*_key` files are added as found).
const ETC_SECRETS: [&str; 8] = [
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
];

/// The paths of `/etc` left out of the system folders.
pub fn etc_secrets() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ETC_SECRETS.iter().map(PathBuf::from).collect();
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("ssh_host_") && name.ends_with("_key") {
                out.push(e.path());
            }
        }
    }
    out
}

fn registry() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    static PROTECTED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    // A panic while holding the lock leaves a set that is still right.
    PROTECTED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps `path` (a file or a folder) out of every sandbox of this process, even when it
/// lies inside a folder a tool may use (its workspace, say).
pub fn protect(path: &Path) {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // A file not made yet: its folder's real path, and its name.
    let path = path.canonicalize().unwrap_or_else(|_| {
        match (
            path.parent().and_then(|p| p.canonicalize().ok()),
            path.file_name(),
        ) {
            (Some(dir), Some(name)) => dir.join(name),
            _ => path.clone(),
        }
    });
    registry().insert(path);
}

/// Keeps a database out of every sandbox: the file, its WAL, shared-memory and journal
/// files, and the key file beside it.
pub fn protect_database(db: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal", ".key"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        protect(Path::new(&name));
    }
}

/// The protected paths that exist now.
pub fn protected() -> Vec<PathBuf> {
    registry()
        .iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .cloned()
        .collect()
}

/// `$HOME`, canonical.
pub fn home() -> Option<PathBuf> {
    let h = PathBuf::from(std::env::var_os("HOME")?);
    Some(h.canonicalize().unwrap_or(h))
}

/// The folders a program's own files are in, from how a tool file starts it: for the
/// program (written as a path) and each absolute path in its arguments that exists, its
/// installation
/// (the folder above `bin/`, above the outermost `node_modules/`, or its own folder;
/// a folder argument itself), both as written and with symbolic links resolved (a venv's
/// python lives elsewhere). A folder that would uncover `$HOME` (itself or a folder
/// right in it) or a protected path is narrowed to the file's own folder, then to the
/// file alone.
pub fn own_folders(program: &str, args: &[String], protected: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let program = resolve_program(program);
    // Whole arguments that are paths, and files named inside one: `-c 'exec node
    // /opt/x/index.js'`, `--config=/opt/x/c.toml` (not a folder a command merely lists).
    let tokens = args.iter().flat_map(|a| {
        let whole = a.starts_with('/').then(|| PathBuf::from(a));
        let inside = a
            .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '=' | ';'))
            .filter(|t| t.starts_with('/') && t.len() < a.len())
            .map(PathBuf::from)
            .filter(|p| p.is_file());
        whole.into_iter().chain(inside)
    });
    let candidates = program.into_iter().chain(tokens);
    let home = home();
    for path in candidates {
        if path.symlink_metadata().is_err() {
            continue;
        }
        let real = path.canonicalize().ok();
        for p in std::iter::once(path).chain(real) {
            if let Some(folder) = own_folder(&p, home.as_deref(), protected)
                && !found.contains(&folder)
            {
                found.push(folder);
            }
        }
    }
    found
}

/// `program` when written as a path. A bare name is found on the sandbox's `PATH`,
/// among folders it may read anyway: granting the folder toolgate's own `PATH` finds it
/// in (a version manager's shims under `$HOME`, say) would uncover more than the tool.
fn resolve_program(program: &str) -> Option<PathBuf> {
    Some(PathBuf::from(program)).filter(|p| p.is_absolute())
}

fn own_folder(path: &Path, home: Option<&Path>, protected: &[PathBuf]) -> Option<PathBuf> {
    let is_dir = path.is_dir();
    let parent = if is_dir {
        path.to_path_buf()
    } else {
        path.parent()?.to_path_buf()
    };
    let mut tries = Vec::new();
    if let Some(i) = path
        .components()
        .position(|c| c.as_os_str() == "node_modules")
    {
        tries.push(path.components().take(i).collect::<PathBuf>());
    }
    if matches!(
        parent.file_name().and_then(|n| n.to_str()),
        Some("bin" | "sbin")
    ) && let Some(up) = parent.parent()
    {
        tries.push(up.to_path_buf());
    }
    tries.push(parent);
    tries.push(path.to_path_buf());
    tries.into_iter().find(|f| acceptable(f, home, protected))
}

/// Whether `folder` may be given to a tool as its own: not the root, nor in a system
/// folder, not `$HOME`, a folder right in it or above it, and holding no protected path.
fn acceptable(folder: &Path, home: Option<&Path>, protected: &[PathBuf]) -> bool {
    // A system folder is granted as the system's (`/etc` without its secrets), not
    // whole as a tool's.
    if folder.parent().is_none() || SYSTEM.iter().any(|s| folder.starts_with(s)) {
        return false;
    }
    if let Some(home) = home
        && (home.starts_with(folder) || folder.parent() == Some(home))
    {
        return false;
    }
    !protected.iter().any(|p| p.starts_with(folder))
}

/// `folder` as the entries to allow so that none of `hidden` is reachable: the folder
/// itself when it holds none of them, else its entries (those that hold one split in
/// turn, the hidden ones left out). Entries that cannot be read are left out.
pub fn split(folder: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    let inside: Vec<&PathBuf> = hidden.iter().filter(|h| h.starts_with(folder)).collect();
    if inside.is_empty() {
        return vec![folder.to_path_buf()];
    }
    if inside.iter().any(|h| h.as_path() == folder) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    for entry in names {
        if entry.is_symlink() {
            // A rule on a link is a rule on what it points to: never a hidden path.
            let reaches_hidden = entry.canonicalize().map_or(true, |target| {
                hidden
                    .iter()
                    .any(|h| h.starts_with(&target) || target.starts_with(h))
            });
            if !reaches_hidden {
                out.push(entry);
            }
        } else if entry.is_dir() {
            out.extend(split(&entry, hidden));
        } else if !hidden.contains(&entry) {
            out.push(entry);
        }
    }
    out
}

/// What to cover so that `hidden` is out of sight but each of `keep` inside it (a tool's
/// own folder inside the tools folder) still shows: `hidden` itself when it holds none
/// of them, else its entries that hold none (those that do, covered around in turn).
pub fn cover(hidden: &Path, keep: &[PathBuf]) -> Vec<PathBuf> {
    let inside: Vec<&PathBuf> = keep.iter().filter(|k| k.starts_with(hidden)).collect();
    if inside.is_empty() {
        return vec![hidden.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(hidden) else {
        return vec![hidden.to_path_buf()];
    };
    let mut out = Vec::new();
    for entry in entries.flatten().map(|e| e.path()) {
        if inside.iter().any(|k| **k == entry) {
            continue;
        }
        if inside.iter().any(|k| k.starts_with(&entry)) {
            out.extend(cover(&entry, keep));
        } else {
            out.push(entry);
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_folder_is_split_around_what_it_hides() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in [
            "a.txt",
            "db",
            "tools/t.yaml",
            "sub/keep",
            "sub/deep/secret",
            "sub/deep/ok",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        assert_eq!(split(&root, &[]), std::slice::from_ref(&root));
        let hidden = [
            root.join("db"),
            root.join("tools"),
            root.join("sub/deep/secret"),
        ];
        let got = split(&root, &hidden);
        assert_eq!(
            got,
            [
                root.join("a.txt"),
                root.join("sub/deep/ok"),
                root.join("sub/keep")
            ]
        );
        assert!(split(&root.join("tools"), &hidden).is_empty());
        // Covering the tools folder around a tool's own folder inside it.
        std::fs::create_dir_all(root.join("tools/plugin")).unwrap();
        assert_eq!(
            cover(&root.join("tools"), &[root.join("tools/plugin")]),
            [root.join("tools/t.yaml")]
        );
        assert_eq!(cover(&root.join("db"), &[]), [root.join("db")]);
    }

    #[test]
    fn own_folders_are_installations_never_home_or_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let venv = root.join("venv/bin");
        std::fs::create_dir_all(&venv).unwrap();
        std::fs::write(venv.join("python"), "").unwrap();
        let pkg = root.join("npm/node_modules/@x/server/dist");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("index.js"), "").unwrap();
        let tools = root.join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::write(tools.join("run.sh"), "").unwrap();
        let got = own_folders(
            venv.join("python").to_str().unwrap(),
            &[
                "-c".into(),
                pkg.join("index.js").display().to_string(),
                tools.join("run.sh").display().to_string(),
                "/no/such/file".into(),
            ],
            std::slice::from_ref(&tools),
        );
        assert_eq!(
            got,
            [root.join("venv"), root.join("npm"), tools.join("run.sh")],
            "the tools folder itself is protected: only the script"
        );
    }
}
