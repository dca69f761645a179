//! Every internal link of the book and the READMEs resolves: the file is there, and an
//! `#anchor` names one of its headings. A link from the book stays inside `docs/src`
//! (the built book holds nothing else).

use std::path::{Component, Path, PathBuf};

use super::markdown::{anchors, links};
use super::pages;
use super::root;

/// `base` joined with `rel`, `.` and `..` resolved by the text alone; `None` when it
/// climbs above the workspace root.
fn resolve(base: &Path, rel: &str) -> Option<PathBuf> {
    let joined = base.join(rel);
    let mut out = Vec::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop()?;
            }
            other => out.push(other),
        }
    }
    Some(out.iter().collect())
}

fn external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// What is wrong with `target`, a link in `page`; `None` when it resolves.
fn check(page: &Path, target: &str) -> Option<String> {
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        match resolve(page.parent().unwrap_or(Path::new("")), path) {
            Some(f) => f,
            None => return Some("points above the workspace".into()),
        }
    };
    if page.starts_with("docs/src") && !file.starts_with("docs/src") {
        return Some(format!(
            "{} is outside docs/src: the built book does not have it",
            file.display()
        ));
    }
    if !root().join(&file).exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    if anchor.is_empty() {
        return None;
    }
    let text = std::fs::read_to_string(root().join(&file)).unwrap_or_default();
    let ids = anchors(&text);
    (!ids.contains(anchor)).then(|| {
        let mut known: Vec<_> = ids.into_iter().collect();
        known.sort();
        format!(
            "{} has no heading #{anchor} (it has: {})",
            file.display(),
            known.join(", ")
        )
    })
}

#[test]
fn every_internal_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        for link in links(&page.text) {
            if external(&link.target) || link.target.is_empty() {
                continue;
            }
            checked += 1;
            if let Some(why) = check(&page.path, &link.target) {
                broken.push(format!(
                    "{}:{}: ({}) {why}",
                    page.path.display(),
                    link.line,
                    link.target
                ));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} internal links found: is the reader broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
