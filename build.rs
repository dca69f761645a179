//! Build script: the commit `toolgate --version` names, as `TOOLGATE_COMMIT`
//! ("<short hash> <commit date>"). Taken, in order, from `TOOLGATE_COMMIT` set by a
//! packager, from `.cargo_vcs_info.json` (what `cargo package` recorded: a build of the
//! published crate), from git when built in a clone, else "commit unknown".

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-env-changed=TOOLGATE_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let commit = std::env::var("TOOLGATE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| from_vcs_info(&dir))
        .or_else(|| from_git(&dir))
        .unwrap_or_else(|| "commit unknown".to_string());
    println!("cargo:rustc-env=TOOLGATE_COMMIT={commit}");
}

/// The commit a packaged crate was made from: `{"git": {"sha1": "..."}}`.
fn from_vcs_info(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + "\"sha1\"".len()..];
    let hash: String = rest
        .chars()
        .skip_while(|c| !c.is_ascii_hexdigit())
        .take_while(char::is_ascii_hexdigit)
        .take(12)
        .collect();
    (hash.len() == 12).then_some(hash)
}

/// The checked-out commit, when `dir` is the top of a git work tree (a package unpacked
/// inside some other repository is not), and the files whose change moves it.
fn from_git(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    if std::fs::canonicalize(&top).ok()? != std::fs::canonicalize(dir).ok()? {
        return None;
    }
    let described = git(dir, &["log", "-1", "--format=%h %cs", "--abbrev=12"])?;
    // Rerun when HEAD moves: HEAD itself (a checkout), the branch it names (a commit),
    // and packed-refs (where a packed branch lives). Only files that exist: a missing
    // one would rerun this script on every build.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", &name]) {
            let path = dir.join(path);
            if path.is_file() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    Some(described)
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}
