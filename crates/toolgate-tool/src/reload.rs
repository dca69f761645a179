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
