//! Agents and tool libraries kept loaded between runs, and loaded again when their
//! files change: a server resuming a thousand runs reads each agent file and tools
//! folder once, not a thousand times, and still sees an edit at the next run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::agent::{Agent, AgentError};
use crate::tool::ToolLibrary;

/// What a file or folder looked like when it was read: names, sizes and times of
/// change. Equal stamps mean nothing was edited since.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp(Vec<(PathBuf, u64, Option<SystemTime>)>);

impl Stamp {
    fn of_file(path: &Path) -> Stamp {
        let meta = std::fs::metadata(path).ok();
        Stamp(vec![(
            path.to_path_buf(),
            meta.as_ref().map_or(0, |m| m.len()),
            meta.and_then(|m| m.modified().ok()),
        )])
    }

    /// A folder's stamp: the folder itself and every entry in it (one level, which is
    /// where tool files live).
    fn of_dir(dir: &Path) -> Stamp {
        let mut entries = Stamp::of_file(dir).0;
        if let Ok(read) = std::fs::read_dir(dir) {
            for entry in read.flatten() {
                let meta = entry.metadata().ok();
                entries.push((
                    entry.path(),
                    meta.as_ref().map_or(0, |m| m.len()),
                    meta.and_then(|m| m.modified().ok()),
                ));
            }
        }
        entries.sort();
        Stamp(entries)
    }
}

/// Libraries by tools folder (`None`: built-ins only), with the stamp they were read at.
type Libraries = HashMap<Option<PathBuf>, (Stamp, Arc<ToolLibrary>)>;

/// Loaded agents and libraries, shared by every clone of a runner.
#[derive(Default)]
pub struct Loaded {
    agents: Mutex<HashMap<PathBuf, (Stamp, Agent)>>,
    libraries: Mutex<Libraries>,
}

impl Loaded {
    /// The agent in `path`, read again only when the file changed.
    pub fn agent(&self, path: &Path) -> Result<Agent, AgentError> {
        let stamp = Stamp::of_file(path);
        if let Some((seen, agent)) = self.agents.lock().ok().and_then(|m| m.get(path).cloned())
            && seen == stamp
        {
            return Ok(agent);
        }
        let agent = Agent::load(path)?;
        if let Ok(mut m) = self.agents.lock() {
            m.insert(path.to_path_buf(), (stamp, agent.clone()));
        }
        Ok(agent)
    }

    /// The library for `dir` (`None`: built-ins only), loaded by `load` only when the
    /// folder or a file in it changed.
    pub fn library(
        &self,
        dir: Option<&Path>,
        load: impl FnOnce(Option<&Path>) -> Result<ToolLibrary, String>,
    ) -> Result<Arc<ToolLibrary>, String> {
        let key = dir.map(Path::to_path_buf);
        let stamp = dir.map_or(Stamp(Vec::new()), Stamp::of_dir);
        if let Some((seen, lib)) = self
            .libraries
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned())
            && seen == stamp
        {
            return Ok(lib);
        }
        let lib = Arc::new(load(dir)?);
        if let Ok(mut m) = self.libraries.lock() {
            m.insert(key, (stamp, Arc::clone(&lib)));
        }
        Ok(lib)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_library_is_loaded_again_only_when_its_folder_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Loaded::default();
        let loads = std::cell::Cell::new(0);
        let load = |d: Option<&Path>| {
            loads.set(loads.get() + 1);
            ToolLibrary::load(d.unwrap()).map_err(|e| e.to_string())
        };
        cache.library(Some(dir.path()), load).unwrap();
        cache.library(Some(dir.path()), load).unwrap();
        assert_eq!(loads.get(), 1);
        std::fs::write(
            dir.path().join("t.yaml"),
            "name: t\ndescription: d\nentry: {type: client}\n",
        )
        .unwrap();
        let lib = cache.library(Some(dir.path()), load).unwrap();
        assert_eq!(loads.get(), 2);
        assert!(lib.get("t").is_some());
    }

    #[test]
    fn an_agent_is_read_again_after_an_edit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.yaml");
        std::fs::write(&path, "name: one\ntools: []\n").unwrap();
        let cache = Loaded::default();
        assert_eq!(cache.agent(&path).unwrap().name, "one");
        std::fs::write(&path, "name: second\ntools: []\n").unwrap();
        assert_eq!(cache.agent(&path).unwrap().name, "second");
    }
}
