//! Confining file tools to a workspace root. The root is opened once per call as a
//! directory handle (`cap_std::fs::Dir`) and every path is opened beneath it by the
//! kernel (`openat2` with `RESOLVE_BENEATH` on Linux; cap-std's component-by-component
//! walk elsewhere): `..` out of the root, an absolute symlink, or a symlink to anywhere
//! outside fails at the moment of opening, so a link flipped between a check and an
//! open cannot make a call escape. Files with more than one hard link are refused, since
//! the same file may also be reachable from outside. Protected paths inside the root
//! (the database, the tools folder, the other tenants' workspaces) are out of reach:
//! refused by name, and checked again on what was opened.
//!
//! Each tenant has its own workspace under a root ([`tenant_workspace`]): the default
//! tenant the root itself, any other `ROOT/tenants/NAME/`.

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::output::ToolError;

/// The longest path (bytes) and file name a file tool accepts, as Linux does.
const MAX_PATH: usize = 4096;
const MAX_NAME: usize = 255;

/// The folder of a workspace root that holds the tenants' workspaces.
pub const TENANTS: &str = "tenants";

/// The workspace of `tenant` under `root`: `root` itself for the default tenant (with
/// `root/tenants` protected: out of its reach), else `root/tenants/NAME`, made when
/// missing (NAME: the tenant id when it is a plain name, else a digest of it). A root
/// that already is this tenant's workspace (a sub-agent's, handed down) stays as it is.
pub fn tenant_workspace(root: &Path, tenant: &str) -> PathBuf {
    let tenants = root.join(TENANTS);
    if tenant == toolgate_protocol::identity::DEFAULT_TENANT {
        toolgate_sandbox::protect(&tenants);
        return root.to_path_buf();
    }
    let name = folder_name(tenant);
    if root.ends_with(Path::new(TENANTS).join(&name)) {
        return root.to_path_buf();
    }
    let mine = tenants.join(&name);
    if !mine.is_dir() {
        use std::os::unix::fs::DirBuilderExt;
        // A failure shows when the workspace is opened, worded there.
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&mine);
    }
    toolgate_sandbox::protect(&tenants);
    mine
}

/// A tenant id as a folder name: itself when made of letters, digits, `-`, `_` and
/// `.` (not first), else `t-` and the start of its SHA-256.
fn folder_name(tenant: &str) -> String {
    let plain = !tenant.is_empty()
        && tenant.len() <= 64
        && !tenant.starts_with('.')
        && tenant
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain {
        return tenant.to_string();
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(tenant.as_bytes());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("t-{hex}")
}

/// The canonical form of a workspace root, which must exist, be a folder and not be a
/// symbolic link itself.
pub fn canonical_root(root: &Path) -> io::Result<PathBuf> {
    refuse_symlink_root(root)?;
    let canonical = root.canonicalize()?;
    if !canonical.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a folder", root.display()),
        ));
    }
    Ok(canonical)
}

fn refuse_symlink_root(root: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(root)?.file_type().is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the workspace {} is a symbolic link; give the folder it points to",
                root.display()
            ),
        ));
    }
    Ok(())
}

/// The workspace root, open: every path a file tool uses is opened through it.
pub struct Workspace {
    dir: Dir,
    root: PathBuf,
    /// Protected paths inside the root, relative to it.
    hidden: Vec<PathBuf>,
}

impl Workspace {
    /// Opens the root `root` (refused when it is a symbolic link or not a folder).
    pub fn open(root: &Path) -> Result<Self, ToolError> {
        let fail = |e: io::Error| {
            ToolError::Execution(format!("cannot open the workspace {}: {e}", root.display()))
        };
        refuse_symlink_root(root).map_err(fail)?;
        let dir = Dir::open_ambient_dir(root, ambient_authority()).map_err(fail)?;
        let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let hidden = toolgate_sandbox::protected()
            .into_iter()
            .filter_map(|p| p.strip_prefix(&real).ok().map(Path::to_path_buf))
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        Ok(Self {
            dir,
            root: real,
            hidden,
        })
    }

    /// Refuses `relative` (as [`Workspace::relative`] gives it) when it names a
    /// protected path or something in one, `..` followed by name.
    fn refuse_hidden(&self, requested: &str, relative: &Path) -> Result<(), ToolError> {
        let mut plain = PathBuf::new();
        for c in relative.components() {
            match c {
                Component::ParentDir => {
                    plain.pop();
                }
                Component::Normal(name) => plain.push(name),
                _ => {}
            }
        }
        if self.hidden.iter().any(|h| plain.starts_with(h)) {
            return Err(refuse(requested, "is out of the tools' reach"));
        }
        Ok(())
    }

    /// Refuses what `file` is open on when it lies in a protected path (reached
    /// through a link inside the workspace, say). Linux: from `/proc/self/fd`.
    pub fn check_opened(
        &self,
        file: &impl std::os::fd::AsRawFd,
        requested: &str,
    ) -> Result<(), ToolError> {
        if self.hidden.is_empty() {
            return Ok(());
        }
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        let Ok(real) = std::fs::read_link(link) else {
            return Ok(());
        };
        let inside = real.strip_prefix(&self.root).unwrap_or(&real);
        if self.hidden.iter().any(|h| inside.starts_with(h)) {
            return Err(refuse(requested, "is out of the tools' reach"));
        }
        Ok(())
    }

    /// The directory handle every path is opened beneath.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// `requested` as a path relative to the root, checked without touching the file
    /// system: no NUL, not too long, and an absolute path only when it names a place
    /// under the root (it is then made relative). `..` and symlinks are left to the
    /// opening, which refuses any that lead out.
    pub fn relative(&self, requested: &str) -> Result<PathBuf, ToolError> {
        if requested.contains('\0') {
            return Err(refuse(requested, "holds a NUL byte"));
        }
        if requested.len() > MAX_PATH {
            return Err(refuse(
                requested,
                &format!(
                    "is too long ({} bytes; at most {MAX_PATH})",
                    requested.len()
                ),
            ));
        }
        let path = Path::new(requested);
        if let Some(long) = path.components().find_map(|c| match c {
            Component::Normal(name) if name.len() > MAX_NAME => Some(name.len()),
            _ => None,
        }) {
            return Err(refuse(
                requested,
                &format!("has a name that is too long ({long} bytes; at most {MAX_NAME})"),
            ));
        }
        let relative = if path.is_absolute() {
            let canonical = self.root.canonicalize().ok();
            let inside = std::iter::once(self.root.as_path())
                .chain(canonical.as_deref())
                .find_map(|root| path.strip_prefix(root).ok());
            match inside {
                Some(rest) => rest.to_path_buf(),
                None => return Err(refuse(requested, "is outside the workspace")),
            }
        } else {
            path.to_path_buf()
        };
        if relative.as_os_str().is_empty() {
            return Ok(PathBuf::from("."));
        }
        self.refuse_hidden(requested, &relative)?;
        Ok(relative)
    }

    /// An error from opening `requested` beneath the root, worded for the model: an
    /// attempt to leave the root says so.
    pub fn io_error(what: &str, requested: &str, e: io::Error) -> ToolError {
        // cap-std reports an escape (`..` out, a symlink out, an absolute symlink) as
        // a permission error that did not come from the system.
        if e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none() {
            return refuse(requested, "leads outside the workspace");
        }
        ToolError::Execution(format!("cannot {what} '{}': {e}", shown(requested)))
    }
}

/// The refusal of a path, naming why.
fn refuse(requested: &str, why: &str) -> ToolError {
    ToolError::Execution(format!(
        "the path '{}' {why}; file tools only reach inside the workspace",
        shown(requested)
    ))
}

/// `requested` for a message: at most 80 characters, NUL and control characters escaped.
pub fn shown(requested: &str) -> String {
    let mut out: String = requested
        .chars()
        .take(80)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if requested.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// Refuses a file that has more than one hard link: the same file has another name,
/// possibly outside the workspace, whose content would be read, or changed by a write,
/// through this one. `tool` is `read_file` or `write_file`.
pub fn single_link(meta: &std::fs::Metadata, requested: &str, tool: &str) -> Result<(), ToolError> {
    let links = link_count(meta);
    if links <= 1 {
        return Ok(());
    }
    let what = if tool == "write_file" {
        "write_file does not write through it (the write would change that file too)"
    } else {
        "read_file does not read it"
    };
    Err(ToolError::Execution(format!(
        "'{}' has {links} hard links: the same file has another name, possibly outside the \
         workspace, so {what}",
        shown(requested)
    )))
}

#[cfg(unix)]
fn link_count(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn link_count(_meta: &std::fs::Metadata) -> u64 {
    1
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn relative_paths_are_checked_before_any_open() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonical_root(dir.path()).unwrap();
        let ws = Workspace::open(&root).unwrap();
        assert_eq!(ws.relative("a/b.txt").unwrap(), Path::new("a/b.txt"));
        assert_eq!(ws.relative("").unwrap(), Path::new("."));
        let inside = root.join("sub/x.txt");
        assert_eq!(
            ws.relative(inside.to_str().unwrap()).unwrap(),
            Path::new("sub/x.txt")
        );
        assert_eq!(ws.relative(root.to_str().unwrap()).unwrap(), Path::new("."));
        for (path, why) in [
            ("/etc/passwd".to_string(), "outside the workspace"),
            ("a\0b".to_string(), "NUL"),
            ("x".repeat(256), "too long"),
            ("d/".repeat(2100), "too long"),
        ] {
            let err = ws.relative(&path).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
            assert!(err.len() < 300, "{err}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("ws");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        assert!(canonical_root(&link).is_err());
        assert!(Workspace::open(&link).is_err());
        assert!(Workspace::open(dir.path()).is_ok());
    }
}
