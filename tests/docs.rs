//! The book (`docs/`) and the README, held to what the code does: the book builds with
//! mdBook, every internal link and `#anchor` resolves, every shell example runs against
//! the built binary, every page with Rust code is compiled as doctests, and every
//! command's help ends with the page that explains it.

mod book;
mod examples;
mod help;
mod links;
mod markdown;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root: this package's folder (the test-support crate's own idea of it
/// is fixed when that crate is built, which may have been in another checkout).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One markdown file: its path relative to the workspace root, and its text.
pub struct Page {
    pub path: PathBuf,
    pub text: String,
}

/// The book's pages (`docs/src/**/*.md`, SUMMARY.md included) and the READMEs, sorted.
pub fn pages() -> Vec<Page> {
    let mut paths = vec![
        PathBuf::from("README.md"),
        PathBuf::from("crates/toolgate-parse/README.md"),
    ];
    paths.extend(book_files());
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(root().join(&path))
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            Page { path, text }
        })
        .collect()
}

/// Every `.md` file under `docs/src`, relative to the workspace root, sorted.
pub fn book_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::from("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(root().join(&dir)).unwrap() {
            let name = entry.unwrap().file_name();
            let rel = dir.join(&name);
            if root().join(&rel).is_dir() {
                dirs.push(rel);
            } else if rel.extension().is_some_and(|e| e == "md") {
                found.push(rel);
            }
        }
    }
    found.sort();
    found
}

/// The mdbook binary, installed once per test process by `tests/docs/setup.sh`.
pub fn mdbook() -> &'static Path {
    static MDBOOK: OnceLock<PathBuf> = OnceLock::new();
    MDBOOK.get_or_init(|| {
        let out = Command::new("bash")
            .arg(root().join("tests/docs/setup.sh"))
            .output()
            .expect("bash must be there to run tests/docs/setup.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "tests/docs/setup.sh failed ({}):\n{}{}",
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        let path = stdout.lines().last().unwrap_or_default().trim();
        assert!(
            Path::new(path).is_file(),
            "tests/docs/setup.sh printed no mdbook path: {stdout}"
        );
        PathBuf::from(path)
    })
}
