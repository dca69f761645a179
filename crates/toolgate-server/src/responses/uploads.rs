//! Files a Responses request attaches (`input_file`), saved in the run's workspace
//! under `uploads/`: the client's file name reduced to a safe one (its last component,
//! letters, digits, `.`, `_`, `-`), never over an existing file (a number is added),
//! never through a symbolic link.

use std::io::Write;
use std::path::Path;

/// The folder in the workspace that holds attached files.
pub const FOLDER: &str = "uploads";

/// The longest saved file name.
const MAX_NAME: usize = 100;

/// A name safe to create in one folder: the last path component of `name`, other
/// characters replaced with `_`, no leading dot, at most 100 bytes.
pub fn safe_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let mut out: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed = out.trim_start_matches('.').len();
    out = out[out.len() - trimmed..].to_string();
    if out.len() > MAX_NAME {
        // Keep the extension when there is a short one.
        let ext = out
            .rsplit_once('.')
            .map(|(_, e)| e.to_string())
            .filter(|e| e.len() <= 10);
        out.truncate(MAX_NAME - ext.as_ref().map_or(0, |e| e.len() + 1));
        if let Some(ext) = ext {
            out.push('.');
            out.push_str(&ext);
        }
    }
    if out.is_empty() { "file".into() } else { out }
}

/// Saves `bytes` as `uploads/NAME` in `workspace` (NAME from [`safe_name`], with `-2`,
/// `-3`, ... before the extension when taken); returns the path relative to the
/// workspace.
pub fn save(workspace: &Path, name: &str, bytes: &[u8]) -> Result<String, UploadError> {
    let dir = workspace.join(FOLDER);
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_dir() => {}
        Ok(_) => {
            return Err(UploadError::NotAFolder { dir });
        }
        Err(_) => std::fs::create_dir_all(&dir).map_err(|e| UploadError::Create {
            path: dir.clone(),
            error: e.to_string(),
        })?,
    }
    let name = safe_name(name);
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
        _ => (name.clone(), String::new()),
    };
    for n in 1..=1000 {
        let candidate = if n == 1 {
            name.clone()
        } else {
            format!("{stem}-{n}{ext}")
        };
        let path = dir.join(&candidate);
        // create_new never follows a link nor replaces a file.
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(bytes).map_err(|e| UploadError::Write {
                    path: path.clone(),
                    error: e.to_string(),
                })?;
                return Ok(format!("{FOLDER}/{candidate}"));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(UploadError::Create {
                    path,
                    error: e.to_string(),
                });
            }
        }
    }
    Err(UploadError::TooMany { dir, name })
}

/// Why an attachment was not saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadError {
    #[error("{} is not a folder; the attachment was not saved", dir.display())]
    NotAFolder { dir: std::path::PathBuf },
    #[error("cannot create {}: {error}", path.display())]
    Create {
        path: std::path::PathBuf,
        error: String,
    },
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: std::path::PathBuf,
        error: String,
    },
    /// `name` and a thousand of its numbered forms are taken.
    #[error("{} holds too many files named like {name}", dir.display())]
    TooMany {
        dir: std::path::PathBuf,
        name: String,
    },
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_made_safe() {
        assert_eq!(safe_name("report.pdf"), "report.pdf");
        assert_eq!(safe_name("../../x"), "x");
        assert_eq!(safe_name("..\\..\\evil.sh"), "evil.sh");
        assert_eq!(safe_name(".."), "file");
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name("my file (1).txt"), "my_file__1_.txt");
        assert_eq!(safe_name(""), "file");
        let long = format!("{}.txt", "a".repeat(300));
        let safe = safe_name(&long);
        assert_eq!(safe.len(), MAX_NAME);
        assert!(safe.ends_with(".txt"));
    }

    #[test]
    fn saved_files_never_replace_one() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(save(dir.path(), "a.txt", b"one").unwrap(), "uploads/a.txt");
        assert_eq!(
            save(dir.path(), "../a.txt", b"two").unwrap(),
            "uploads/a-2.txt"
        );
        assert_eq!(
            std::fs::read(dir.path().join("uploads/a.txt")).unwrap(),
            b"one"
        );
        assert_eq!(
            std::fs::read(dir.path().join("uploads/a-2.txt")).unwrap(),
            b"two"
        );
        #[cfg(unix)]
        {
            let other = tempfile::tempdir().unwrap();
            std::fs::remove_dir_all(dir.path().join(FOLDER)).unwrap();
            std::os::unix::fs::symlink(other.path(), dir.path().join(FOLDER)).unwrap();
            assert!(save(dir.path(), "b.txt", b"x").is_err());
            assert!(!other.path().join("b.txt").exists());
        }
    }
}
