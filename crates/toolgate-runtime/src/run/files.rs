//! The files a call's result was saved as (its file parts with an id), as the run
//! object lists them.

use toolgate_parse::ToolCall;
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::{FileOutput, Part};
use toolgate_tool::ToolOutput;

/// The saved files among `out`'s parts, as outputs of `call`.
pub(super) fn saved(out: &ToolOutput, call: &ToolCall) -> Vec<FileOutput> {
    out.parts
        .iter()
        .filter_map(|p| match p {
            Part::File {
                path,
                mime,
                id: Some(id),
                name,
                bytes,
            } => Some(FileOutput {
                id: id.clone(),
                object: "file".into(),
                name: name.clone().unwrap_or_else(|| path.clone()),
                mime: mime
                    .clone()
                    .unwrap_or_else(|| "application/octet-stream".into()),
                bytes: bytes.unwrap_or(0),
                path: path.clone(),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                created_at: now_ms(),
            }),
            _ => None,
        })
        .collect()
}

impl super::Runner {
    /// A saved file of run `run_id` and its bytes (`None`: the run has no file of that
    /// id, or it is gone from the workspace). The caller checks who may see the run.
    pub async fn file(
        &self,
        run_id: &str,
        file_id: &str,
    ) -> Result<Option<(FileOutput, Vec<u8>)>, super::RunError> {
        let (row, _) = self.store.run(run_id).await?;
        let state: super::RunState = serde_json::from_str(&row.state)
            .map_err(|e| super::RunError::Corrupt(format!("run {run_id}: {e}")))?;
        let Some(file) = state.files.into_iter().find(|f| f.id == file_id) else {
            return Ok(None);
        };
        let (root, path) = (state.workspace, file.path.clone());
        let bytes = tokio::task::spawn_blocking(move || read_beneath(&root, &path))
            .await
            .map_err(|e| super::RunError::Corrupt(e.to_string()))?;
        Ok(bytes.map(|b| (file, b)))
    }
}

/// A file's bytes, opened beneath the workspace root (`None` when it cannot be read).
fn read_beneath(root: &std::path::Path, path: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    let ws = toolgate_tool::workspace::Workspace::open(root).ok()?;
    let rel = ws.relative(path).ok()?;
    let file = ws.dir().open(&rel).ok()?;
    ws.check_opened(&file, path).ok()?;
    let mut bytes = Vec::new();
    file.into_std().read_to_end(&mut bytes).ok()?;
    Some(bytes)
}
