//! `FileOutput`: a file a tool's binary result was saved as (a PDF an API answered, an
//! MCP blob, a Dify tool's file), as run objects and the files route show it, and the
//! file ids that name the run they belong to.

use serde::{Deserialize, Serialize};

/// A file saved from a tool's result in the run's workspace, offered to the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FileOutput {
    /// `file-` and the run's id, then a suffix: `GET /v1/files/{id}` serves it.
    pub id: String,
    /// Always `"file"`.
    pub object: String,
    /// The name it was given (from the response's `Content-Disposition`, the blob's
    /// URI, or the tool and its type).
    pub name: String,
    /// Its content type.
    pub mime: String,
    /// Its size.
    pub bytes: u64,
    /// Where it is, relative to the run's workspace (what the model reads it by).
    pub path: String,
    /// The call whose result it is, and that call's tool.
    pub call_id: String,
    pub tool: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// The prefix of every file id.
pub const PREFIX: &str = "file-";

/// A new file id for a file of run `run_id` (`file-RUN-SUFFIX`).
pub fn file_id(run_id: &str, suffix: &str) -> String {
    format!("{PREFIX}{run_id}-{suffix}")
}

/// The run a file id names, when it is one: the part between `file-` and the last `-`.
///
/// ```
/// use toolgate_protocol::file::{file_id, run_of};
/// assert_eq!(run_of(&file_id("run_0a1b", "9f")), Some("run_0a1b"));
/// assert_eq!(run_of("run_0a1b"), None);
/// ```
pub fn run_of(id: &str) -> Option<&str> {
    let rest = id.strip_prefix(PREFIX)?;
    let (run, suffix) = rest.rsplit_once('-')?;
    (!run.is_empty() && !suffix.is_empty()).then_some(run)
}
