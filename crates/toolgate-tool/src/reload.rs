//! Loading a tools folder again while a process runs: a file that now fails to load
//! keeps the version that last loaded (a broken edit never takes a working tool away),
//! and each problem is said once, when it first appears, naming its file.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::library::{LoadedTool, ToolLibrary};

impl ToolLibrary {
    /// Completes a library just loaded from a folder with what `previous` (the one it
    /// replaces; an empty library on the first load) had from each file that now fails
    /// to load but is still there. Returns one line per problem that `previous` did not
    /// have, for the log: the file, the line, what is wrong, and what was done about it.
    pub fn keep_last_good(&mut self, previous: &ToolLibrary) -> Vec<String> {
        let broken: HashSet<&Path> = self
            .errors()
            .iter()
            .map(|e| e.path.as_path())
            .filter(|p| p.exists())
            .collect();
        let kept: Vec<Arc<LoadedTool>> = previous
            .tools()
            .filter(|t| {
                file_of(t).is_some_and(|f| broken.contains(f)) && self.get(&t.spec.name).is_none()
            })
            .cloned()
            .collect();
        let kept_from: HashSet<&Path> = kept.iter().filter_map(|t| file_of(t)).collect();
        let lines = self
            .errors()
            .iter()
            .filter(|e| !previous.errors().contains(e))
            .map(|e| {
                if kept_from.contains(e.path.as_path()) {
                    format!("{e} (keeping the last good version)")
                } else {
                    format!("{e} (skipped)")
                }
            })
            .collect();
        for tool in kept {
            self.insert(tool);
        }
        lines
    }
}

/// The file a tool was read from, if it came from one.
fn file_of(tool: &LoadedTool) -> Option<&Path> {
    tool.origin.file.as_deref()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const GOOD: &str = "name: t\ndescription: first\nentry: {type: client}\n";

    #[test]
    fn a_broken_edit_keeps_the_last_good_version_and_is_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.yaml");
        std::fs::write(&file, GOOD).unwrap();
        let mut first = ToolLibrary::load(dir.path(), &crate::tool::sources::standard()).unwrap();
        assert!(first.keep_last_good(&ToolLibrary::default()).is_empty());
        std::fs::write(&file, "name: t\ndescription: [unclosed\n").unwrap();
        let mut second = ToolLibrary::load(dir.path(), &crate::tool::sources::standard()).unwrap();
        let lines = second.keep_last_good(&first);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("t.yaml") && lines[0].ends_with("(keeping the last good version)")
        );
        assert_eq!(second.get("t").unwrap().spec.description, "first");
        // Still broken, unchanged: nothing more to say, and still the old version.
        let mut third = ToolLibrary::load(dir.path(), &crate::tool::sources::standard()).unwrap();
        assert!(third.keep_last_good(&second).is_empty());
        assert!(third.get("t").is_some());
        // Removed: gone.
        std::fs::remove_file(&file).unwrap();
        let mut fourth = ToolLibrary::load(dir.path(), &crate::tool::sources::standard()).unwrap();
        assert!(fourth.keep_last_good(&third).is_empty());
        assert!(fourth.get("t").is_none());
    }

    #[test]
    fn a_new_broken_file_is_skipped_with_one_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "name: [\n").unwrap();
        let mut lib = ToolLibrary::load(dir.path(), &crate::tool::sources::standard()).unwrap();
        let lines = lib.keep_last_good(&ToolLibrary::default());
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("bad.yaml") && lines[0].ends_with("(skipped)"));
    }
}
