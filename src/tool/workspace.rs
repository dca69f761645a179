//! Confining file tools to a workspace root: a path that escapes it, through `..`, an
//! absolute path or a symlink, is refused.

use std::io;
use std::path::{Component, Path, PathBuf};

use super::output::ToolError;

/// The canonical form of a workspace root, which must exist and be a folder.
pub fn canonical_root(root: &Path) -> io::Result<PathBuf> {
    let canonical = root.canonicalize()?;
    if !canonical.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a folder", root.display()),
        ));
    }
    Ok(canonical)
}

/// Resolves `requested` (relative to `root`, or absolute inside it) to a path inside the
/// canonical `root`. Symlinks are followed for the part of the path that exists; the
/// rest may not climb out with `..`. The final component may not exist yet (a file to
/// write), but if it exists as a symlink its target must be inside too.
pub fn resolve(root: &Path, requested: &str) -> Result<PathBuf, ToolError> {
    let refuse = |why: &str| {
        ToolError::Execution(format!(
            "the path '{requested}' {why}; file tools only reach inside the workspace"
        ))
    };
    if requested.contains('\0') {
        return Err(refuse("holds a NUL byte"));
    }
    let joined = if Path::new(requested).is_absolute() {
        PathBuf::from(requested)
    } else {
        root.join(requested)
    };
    // Split into the longest existing prefix (canonicalized: symlinks resolved) and the rest.
    let mut existing = joined.clone();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let canonical = loop {
        match existing.canonicalize() {
            Ok(c) => break c,
            Err(_) => {
                // A link whose target does not exist could be written through to anywhere.
                if existing.symlink_metadata().is_ok() {
                    return Err(refuse("goes through a link that points nowhere"));
                }
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Err(refuse("cannot be resolved"));
                };
                rest.push(name);
                if !existing.pop() {
                    return Err(refuse("cannot be resolved"));
                }
            }
        }
    };
    let mut full = canonical;
    for name in rest.iter().rev() {
        match Path::new(name).components().next() {
            Some(Component::Normal(_)) => full.push(name),
            // `..` or `.` after a part that does not exist.
            _ => return Err(refuse("climbs out through a folder that does not exist")),
        }
    }
    if !full.starts_with(root) {
        return Err(refuse("is outside the workspace"));
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn inside_and_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonical_root(dir.path()).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        assert_eq!(
            resolve(&root, "sub/new.txt").unwrap(),
            root.join("sub/new.txt")
        );
        assert_eq!(resolve(&root, "sub/../a.txt").unwrap(), root.join("a.txt"));
        assert!(resolve(&root, "../x").is_err());
        assert!(resolve(&root, "sub/../../x").is_err());
        assert!(resolve(&root, "/etc/passwd").is_err());
        assert!(resolve(&root, "missing/../../x").is_err());
        assert_eq!(
            resolve(&root, root.join("sub").to_str().unwrap()).unwrap(),
            root.join("sub")
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = canonical_root(dir.path()).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("file_link")).unwrap();
        assert!(resolve(&root, "link/secret").is_err());
        assert!(resolve(&root, "link/new.txt").is_err());
        assert!(resolve(&root, "file_link").is_err());
        std::os::unix::fs::symlink(outside.path().join("not_yet"), root.join("dangling")).unwrap();
        assert!(resolve(&root, "dangling").is_err());
    }
}
