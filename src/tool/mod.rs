//! Tools as the user writes them: the spec of one tool and the files in `tools/`.

mod file;
mod spec;

pub use file::{LoadError, LoadedTools, load_dir, load_file};
pub use spec::{Entry, Permission, ToolSpec};
