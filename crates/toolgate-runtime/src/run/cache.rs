//! Agents and tool libraries kept loaded between runs, and loaded again when their
//! files change: a server resuming a thousand runs reads each agent file and tools
//! folder once, not a thousand times, and still sees an edit at the next run. A tools
//! file whose edit breaks it keeps its last good version (see `tool::reload`); each new
//! problem is reported once; watchers learn that a library changed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::agent::{Agent, AgentError};
use toolgate_tool::ToolLibrary;

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

    /// A folder's stamp: the folder itself and every entry in it, and in its folders
    /// (a provider's folder of tool files) down to [`DEPTH`] levels; hidden entries
    /// (an editor's swap files) are left out.
    fn of_dir(dir: &Path) -> Stamp {
        let mut entries = Stamp::of_file(dir).0;
        walk(dir, DEPTH, &mut entries);
        entries.sort();
        Stamp(entries)
    }
}

/// How deep below a tools folder a change is noticed.
const DEPTH: usize = 3;

/// Entries noticed at most, so that a huge folder cannot make every run slow.
const MAX_ENTRIES: usize = 10_000;

fn walk(dir: &Path, depth: usize, into: &mut Vec<(PathBuf, u64, Option<SystemTime>)>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        if into.len() >= MAX_ENTRIES {
            return;
        }
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let meta = entry.metadata().ok();
        let is_dir = meta.as_ref().is_some_and(std::fs::Metadata::is_dir);
        into.push((
            entry.path(),
            meta.as_ref().map_or(0, |m| m.len()),
            meta.and_then(|m| m.modified().ok()),
        ));
        if is_dir && depth > 1 {
            walk(&entry.path(), depth - 1, into);
        }
    }
}

/// What was read from `path`, from `cache` while the file is unchanged, else read again
/// by `load` (and kept).
fn file_cached<T: Clone, E>(
    cache: &Mutex<HashMap<PathBuf, (Stamp, T)>>,
    path: &Path,
    load: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<T, E> {
    let stamp = Stamp::of_file(path);
    if let Some((seen, value)) = cache.lock().ok().and_then(|m| m.get(path).cloned())
        && seen == stamp
    {
        return Ok(value);
    }
    let value = load(path)?;
    if let Ok(mut m) = cache.lock() {
        m.insert(path.to_path_buf(), (stamp, value.clone()));
    }
    Ok(value)
}

/// Libraries by tools folder (`None`: built-ins only), with the stamp they were read at.
type Libraries = HashMap<Option<PathBuf>, (Stamp, Arc<ToolLibrary>)>;

/// Scripted models by replies file, with the stamp they were read at.
type Scripted = HashMap<PathBuf, (Stamp, Arc<dyn toolgate_model::Model>)>;

/// Where the problems of a tools folder are said, one line each.
pub type Report = Arc<dyn Fn(&str) + Send + Sync>;

/// Loaded agents and libraries, shared by every clone of a runner.
pub struct Loaded {
    agents: Mutex<HashMap<PathBuf, (Stamp, Agent)>>,
    libraries: Mutex<Libraries>,
    /// Scripted models by file: a replies file is parsed once, again when it changes.
    scripted: Mutex<Scripted>,
    /// One load of a library at a time, so that each problem is said once.
    loading: Mutex<()>,
    report: Report,
    /// Counts the libraries loaded again after a change.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for Loaded {
    /// Problems are logged as warnings.
    fn default() -> Self {
        Loaded::reporting(Arc::new(|line: &str| tracing::warn!("{line}")))
    }
}

impl Loaded {
    /// Nothing loaded yet; each new problem of a tools folder goes to `report`.
    pub fn reporting(report: Report) -> Self {
        Self {
            agents: Mutex::default(),
            libraries: Mutex::default(),
            scripted: Mutex::default(),
            loading: Mutex::new(()),
            report,
            changes: tokio::sync::watch::channel(0).0,
        }
    }

    /// Changes from now on: the value moves each time a library is loaded again
    /// because its folder changed (what the MCP gateway tells its clients).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The scripted model of the replies file `path`, parsed again only when the file
    /// changed (a scripted model keeps no state between runs).
    pub fn scripted(
        &self,
        path: &Path,
    ) -> Result<Arc<dyn toolgate_model::Model>, toolgate_model::ModelError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        file_cached(&self.scripted, &path, |p| {
            Ok(Arc::new(toolgate_model::ScriptedModel::load(p)?) as Arc<dyn toolgate_model::Model>)
        })
    }

    /// The agent in `path`, read again only when the file changed.
    pub fn agent(&self, path: &Path) -> Result<Agent, AgentError> {
        file_cached(&self.agents, path, Agent::load)
    }

    /// The library for `dir` (`None`: built-ins only), loaded by `load` only when the
    /// folder, a file in it, or a file outside it that its tools were read from changed.
    pub fn library<E>(
        &self,
        dir: Option<&Path>,
        load: impl FnOnce(Option<&Path>) -> Result<ToolLibrary, E>,
    ) -> Result<Arc<ToolLibrary>, E> {
        let key = dir.map(Path::to_path_buf);
        let known = || {
            self.libraries
                .lock()
                .ok()
                .and_then(|m| m.get(&key).cloned())
        };
        // The folder, and the files outside it that `lib` was read from
        // (`ToolSource::watches`).
        let stamp_of = |mut stamp: Stamp, lib: &ToolLibrary| {
            for file in lib.watched() {
                stamp.0.extend(Stamp::of_file(file).0);
            }
            stamp
        };
        let of_dir = || dir.map_or(Stamp(Vec::new()), Stamp::of_dir);
        let fresh = || match known() {
            Some((seen, lib)) if seen == stamp_of(of_dir(), &lib) => Ok(lib),
            other => Err(other.map(|(_, lib)| lib)),
        };
        if let Ok(lib) = fresh() {
            return Ok(lib);
        }
        // Another caller may have loaded it while this one waited.
        let _one = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        let previous = match fresh() {
            Ok(lib) => return Ok(lib),
            Err(previous) => previous,
        };
        let before = of_dir();
        let mut lib = load(dir)?;
        let lines = lib.keep_last_good(previous.as_deref().unwrap_or(&ToolLibrary::default()));
        for line in lines {
            (self.report)(&line);
        }
        let lib = Arc::new(lib);
        let stamp = stamp_of(before, &lib);
        if let Ok(mut m) = self.libraries.lock() {
            m.insert(key, (stamp, Arc::clone(&lib)));
        }
        if previous.is_some() {
            tracing::info!(tools = lib.names().len(), "tools folder loaded again");
            self.changes.send_modify(|n| *n += 1);
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
            ToolLibrary::load(d.unwrap(), &toolgate_sources::standard()).map_err(|e| e.to_string())
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
    fn a_document_read_from_outside_the_folder_is_watched_too() {
        let root = tempfile::tempdir().unwrap();
        let tools = root.path().join("tools");
        std::fs::create_dir(&tools).unwrap();
        let doc = |op: &str| {
            format!(
                "openapi: 3.0.0\ninfo: {{title: t, version: '1'}}\npaths:\n  /a:\n    get:\n      operationId: {op}\n      responses: {{'200': {{description: ok}}}}\n"
            )
        };
        std::fs::write(root.path().join("api.yaml"), doc("first")).unwrap();
        std::fs::write(
            tools.join("api.yaml"),
            "openapi: ../api.yaml\nname: api\nbase_url: http://127.0.0.1:9\n",
        )
        .unwrap();
        let cache = Loaded::default();
        let load = |d: Option<&Path>| {
            ToolLibrary::load(d.unwrap(), &toolgate_sources::standard()).map_err(|e| e.to_string())
        };
        let lib = cache.library(Some(&tools), load).unwrap();
        assert!(lib.get("api__first").is_some(), "{:?}", lib.errors());
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.path().join("api.yaml"), doc("second") + "\n").unwrap();
        let lib = cache.library(Some(&tools), load).unwrap();
        assert!(lib.get("api__second").is_some(), "{:?}", lib.names());
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
