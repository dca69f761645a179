//! A tools folder read through the sources a program loads with ([`Sources`]): each YAML or
//! JSON file goes to the first source that claims it, folders to the sources that take
//! them. A file that cannot be used is one error naming its path (and line, when known)
//! and never stops the others from loading.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::runnable::Tool;
use super::schema::Schema;
use super::source::{Claim, Found, Sources};
use super::spec::ToolSpec;
use toolgate_parse::Schemas;

/// Why a tool file could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for LoadError {}

/// One tool read from a file: its spec, its compiled schemas, where it came from and
/// what runs it.
#[derive(Clone)]
pub struct ToolDef {
    pub spec: ToolSpec,
    pub schema: Schema,
    /// The compiled `output:` schema, when the file declares one.
    pub output: Option<Schema>,
    pub path: PathBuf,
    /// Its rules, hooks and approval deadline.
    pub policy: crate::policy::Policy,
    /// Who decides its calls (`approvers:`, `four_eyes:`).
    pub rule: toolgate_protocol::identity::DecisionRule,
    /// The source that read it ([`ToolSource::name`]).
    pub source: &'static str,
    /// What runs its calls; `None` for a definition-only tool.
    pub runner: Option<Arc<dyn Tool>>,
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("spec", &self.spec)
            .field("path", &self.path)
            .field("source", &self.source)
            .finish()
    }
}

impl ToolDef {
    /// A tool of `source` read from `path`, with no rules of its own.
    pub fn new(
        spec: ToolSpec,
        schema: Schema,
        path: &Path,
        source: &'static str,
        runner: Option<Arc<dyn Tool>>,
    ) -> Self {
        ToolDef {
            spec,
            schema,
            output: None,
            path: path.to_path_buf(),
            policy: Default::default(),
            rule: Default::default(),
            source,
            runner,
        }
    }
}

/// Everything read from a folder of tool files.
#[derive(Debug, Default)]
pub struct LoadedTools {
    pub tools: Vec<ToolDef>,
    pub errors: Vec<LoadError>,
    /// Files outside the folder its tools were read from ([`ToolSource::watches`]).
    pub watched: Vec<PathBuf>,
}

impl LoadedTools {
    /// Tool name -> parameter schema, for the parser's coercion.
    pub fn schemas(&self) -> Schemas {
        self.tools
            .iter()
            .map(|t| (t.spec.name.clone(), t.schema.coercion_schema().clone()))
            .collect()
    }

    /// Adds `tool`, unless a tool of its name is already there (then an error naming
    /// both files).
    pub(crate) fn push(&mut self, tool: ToolDef) {
        if let Some(first) = self.tools.iter().find(|t| t.spec.name == tool.spec.name) {
            self.errors.push(LoadError {
                message: format!(
                    "a tool named '{}' is already defined in {}",
                    tool.spec.name,
                    first.path.display()
                ),
                path: tool.path,
                line: None,
            });
        } else {
            self.tools.push(tool);
        }
    }

    fn extend(&mut self, found: Found) {
        self.errors.extend(found.errors);
        for t in found.tools {
            self.push(t);
        }
    }
}

/// Reads every tool file in `dir` (not recursive), in name order, through the
/// `sources`, asked in their order.
pub fn load_dir(dir: &Path, sources: &Sources) -> Result<LoadedTools, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| LoadError {
        path: dir.to_path_buf(),
        line: None,
        message: format!("cannot read the tools folder: {e}"),
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            )
        })
        .collect();
    paths.sort();
    let mut loaded = LoadedTools::default();
    let mut last = Vec::new();
    for path in paths {
        // Read once: which source takes it, then the tools it holds.
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                loaded.errors.push(LoadError {
                    message: format!("cannot read: {e}"),
                    path,
                    line: None,
                });
                continue;
            }
        };
        let claimed = sources
            .iter()
            .find_map(|s| Some((s, s.claims(&path, &text))).filter(|(_, c)| *c != Claim::Not));
        let Some((source, Claim::Tools)) = claimed else {
            continue;
        };
        loaded.watched.extend(source.watches(&path, &text));
        let found = source.load(&path, &text);
        if source.joins_last() {
            last.push(found);
        } else {
            loaded.extend(found);
        }
    }
    for source in sources.iter() {
        loaded.extend(source.load_folders(dir));
    }
    for found in last {
        loaded.extend(found);
    }
    Ok(loaded)
}

/// The line (1-based) where `keys` appear one after the other as keys (`key:`,
/// `"key"`, or `name: key` in the list form); the deepest one found.
pub fn line_of(text: &str, keys: &[&str]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    let mut found = None;
    for key in keys {
        let patterns = [
            format!("{key}:"),
            format!("\"{key}\""),
            format!("name: {key}"),
        ];
        match (from..lines.len()).find(|&i| patterns.iter().any(|p| lines[i].contains(p.as_str())))
        {
            Some(i) => {
                found = Some(i + 1);
                from = i;
            }
            None => break,
        }
    }
    found
}

pub use toolgate_protocol::error_line::first_line;
