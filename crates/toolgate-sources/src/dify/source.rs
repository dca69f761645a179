//! The Dify source: provider and tool YAMLs dropped into the tools folder, and provider
//! folders (a plugin's layout, or a provider's own folder) inside it.

use std::path::Path;

use super::{Kind, kind_in, load_provider, load_tool, provider_in};
use toolgate_tool::source::{Claim, Found, ToolSource};

/// The source's name in its tools' origin.
pub const NAME: &str = "dify";

/// Dify providers and tools.
pub struct DifyFiles;

impl ToolSource for DifyFiles {
    fn name(&self) -> &'static str {
        NAME
    }

    fn claims(&self, path: &Path, text: &str) -> Claim {
        match kind_in(path, text) {
            Some(_) => Claim::Tools,
            None => Claim::Not,
        }
    }

    fn load(&self, path: &Path, text: &str) -> Found {
        match kind_in(path, text) {
            Some(Kind::Provider) => load_provider(path).into(),
            Some(Kind::Tool) => load_tool(path).into(),
            None => Found::default(),
        }
    }

    fn load_folders(&self, dir: &Path) -> Found {
        let mut found = Found::default();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return found;
        };
        let mut dirs: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for d in dirs {
            if let Some(provider) = provider_in(&d) {
                let (tools, errors) = load_provider(&provider);
                found.tools.extend(tools);
                found.errors.extend(errors);
            }
        }
        found
    }
}
