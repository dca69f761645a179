//! `ToolSource`: one way tools come into the library (the built-ins, tool files, OpenAPI
//! documents, Dify providers, MCP servers). A source says which files of a tools folder
//! it takes, loads them into tools that carry their own runner, and names the files
//! beyond the folder its tools were read from. The library asks each of the [`Sources`]
//! it is given in turn and knows none of them by name: the program (the binary, or one
//! that embeds toolgate) chooses them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::folder::{LoadError, ToolDef};
use super::library::LoadedTool;

/// What a source makes of one file in the tools folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Not its file: the next source is asked.
    Not,
    /// Its file: [`ToolSource::load`] reads its tools.
    Tools,
    /// Its file, but one that brings no tool of its own (a document another file of the
    /// source reads): nobody loads it.
    Skip,
}

/// What a source read: its tools and one error per file or entry it could not use.
#[derive(Debug, Default)]
pub struct Found {
    pub tools: Vec<ToolDef>,
    pub errors: Vec<LoadError>,
}

impl From<(Vec<ToolDef>, Vec<LoadError>)> for Found {
    fn from((tools, errors): (Vec<ToolDef>, Vec<LoadError>)) -> Self {
        Found { tools, errors }
    }
}

/// Where a loaded tool came from: the one provenance field of a [`LoadedTool`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The source that brought it (its [`ToolSource::name`]), or `program` for a tool
    /// the program added itself.
    pub source: &'static str,
    /// The file it was read from (a tool file, a server's declaration, an `openapi:`
    /// file, a provider YAML); `None` for built-ins and a program's own tools.
    pub file: Option<PathBuf>,
}

impl Origin {
    /// A tool the program added itself ([`super::ToolLibrary::add`]).
    pub const PROGRAM: Origin = Origin {
        source: "program",
        file: None,
    };

    /// Where to say it came from: its file, else its source (`built-in`, `program`).
    pub fn place(&self) -> String {
        match &self.file {
            Some(p) => p.display().to_string(),
            None => self.source.to_string(),
        }
    }
}

/// The sources a library is filled from, in the order a file of the tools folder is
/// offered to them: the first that claims it has it. Cheap to clone.
#[derive(Clone, Default)]
pub struct Sources(Arc<[Arc<dyn ToolSource>]>);

impl Sources {
    /// These sources, asked in this order.
    pub fn new(sources: Vec<Arc<dyn ToolSource>>) -> Self {
        Sources(sources.into())
    }

    /// These sources with `source` asked before all of them (a program's own source,
    /// ahead of a catch-all that takes any file).
    pub fn with_first(&self, source: impl ToolSource + 'static) -> Self {
        let mut all: Vec<Arc<dyn ToolSource>> = vec![Arc::new(source)];
        all.extend(self.0.iter().cloned());
        Sources(all.into())
    }

    /// The sources, in their order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn ToolSource>> {
        self.0.iter()
    }
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|s| s.name()))
            .finish()
    }
}

/// One way tools come into the library: the built-ins, tool files, OpenAPI documents,
/// Dify providers and MCP servers are each one, and a program may add its own to the
/// [`Sources`] it loads with.
pub trait ToolSource: Send + Sync {
    /// Its name in the tools' [`Origin`].
    fn name(&self) -> &'static str;

    /// The tools it brings with no file at all (the built-ins).
    fn fixed(&self) -> Vec<LoadedTool> {
        Vec::new()
    }

    /// What it makes of `path`, a YAML or JSON file of the tools folder, read once
    /// (`text`). Sources are asked in their order of registration; the first that does
    /// not answer [`Claim::Not`] has the file.
    fn claims(&self, _path: &Path, _text: &str) -> Claim {
        Claim::Not
    }

    /// The tools of a file it claimed. Each tool carries its runner (`None`: definition
    /// only). Loading starts no process: a source that needs a running program to know
    /// its tools keeps what it learnt from the last one (see the MCP source).
    fn load(&self, _path: &Path, _text: &str) -> Found {
        Found::default()
    }

    /// The tools of the folders inside the tools folder it takes (a Dify plugin's
    /// provider folders).
    fn load_folders(&self, _dir: &Path) -> Found {
        Found::default()
    }

    /// Files outside the tools folder that a claimed file's tools were read from (an
    /// OpenAPI document kept elsewhere): a watcher looks at them too.
    fn watches(&self, _path: &Path, _text: &str) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Called after a library was loaded again: stops whatever the source keeps running
    /// for tools no loaded library has any more (an MCP server whose declaration went),
    /// and names what it stopped.
    fn release_unused(&self) -> Vec<String> {
        Vec::new()
    }

    /// Its tools join after every other source's, so that a tool file or document
    /// always keeps a name against them (a server's tool list is not the user's to edit).
    fn joins_last(&self) -> bool {
        false
    }
}
