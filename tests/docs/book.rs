//! The book builds with mdBook (installed by `tests/docs/setup.sh`), lists every page
//! in its SUMMARY, and every page with Rust code is compiled as doctests (`src/lib.rs`).

use std::process::Command;

use super::markdown::{blocks, links};
use super::root;
use super::{book_files, mdbook, pages};

#[test]
fn the_book_builds_with_mdbook() {
    let out = tempfile::tempdir().unwrap();
    let build = Command::new(mdbook())
        .args(["build", "docs", "--dest-dir"])
        .arg(out.path())
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "mdbook build docs failed:\n{}{}",
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr)
    );
    for page in book_files() {
        let rel = page
            .strip_prefix("docs/src")
            .unwrap()
            .with_extension("html");
        if rel.as_os_str() == "SUMMARY.html" {
            continue;
        }
        assert!(
            out.path().join(&rel).is_file(),
            "the built book has no {} (from {})",
            rel.display(),
            page.display()
        );
    }
}

#[test]
fn every_page_is_in_the_summary() {
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    let listed: Vec<String> = links(&summary).into_iter().map(|l| l.target).collect();
    let missing: Vec<String> = book_files()
        .into_iter()
        .map(|p| p.strip_prefix("docs/src").unwrap().display().to_string())
        .filter(|p| p != "SUMMARY.md" && !listed.contains(p))
        .collect();
    assert!(
        missing.is_empty(),
        "pages not in docs/src/SUMMARY.md: {missing:?}"
    );
}

#[test]
fn every_page_with_rust_code_is_a_doctest() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let mut missing = Vec::new();
    for page in pages() {
        let rust = blocks(&page.text).iter().any(|b| b.lang() == "rust");
        let include = format!("include_str!(\"../{}\")", page.path.display());
        let own_crate = page.path.starts_with("crates/");
        if rust && !own_crate && !lib.contains(&include) {
            missing.push(page.path.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "pages with Rust code that src/lib.rs does not compile as doctests (add a \
         #[doc = include_str!(...)] item to its book_doctests module): {missing:?}"
    );
}
