//! Files in the tools folder that bring many tools at once, recognised beside the
//! one-tool files: `openapi:` files (one tool per operation; the documents they read
//! are skipped), Dify provider and tool YAMLs, and Dify provider folders.

use std::path::Path;

use super::file::{LoadError, LoadedTools, ToolDef};
use super::{dify, openapi};

impl LoadedTools {
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

    fn extend_found(&mut self, (tools, errors): (Vec<ToolDef>, Vec<LoadError>)) {
        self.errors.extend(errors);
        for t in tools {
            self.push(t);
        }
    }

    /// Loads `path` when it is an OpenAPI or Dify file (true), or leaves it to the
    /// one-tool reader (false).
    pub(crate) fn take_source(&mut self, path: &Path, text: &str) -> bool {
        match openapi::kind(text) {
            Some(openapi::Kind::Source) => {
                self.extend_found(openapi::load(path));
                return true;
            }
            Some(openapi::Kind::Document) => return true,
            None => {}
        }
        match dify::kind_in(path, text) {
            Some(dify::Kind::Provider) => {
                self.extend_found(dify::load_provider(path));
                true
            }
            Some(dify::Kind::Tool) => {
                self.extend_found(dify::load_tool(path));
                true
            }
            None => false,
        }
    }

    /// The Dify providers in the subfolders of `dir` (a plugin folder, or a provider's
    /// own folder).
    pub(crate) fn take_provider_dirs(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut dirs: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for d in dirs {
            if let Some(provider) = dify::provider_in(&d) {
                self.extend_found(dify::load_provider(&provider));
            }
        }
    }
}
