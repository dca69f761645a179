//! Watching a tools folder while a long-running process serves (`toolgate serve`,
//! `toolgate mcp`): the folder is looked at every so often (file times and sizes, no
//! platform watcher), and a change loads the library again, so that added, changed and
//! removed tool files are picked up without a restart. The MCP servers that no loaded
//! library declares any more are stopped.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::task::AbortOnDropHandle;

use super::Runner;

impl Runner {
    /// Looks at `dir` every `every` until the returned handle drops. `None` when there
    /// is nothing to watch (built-ins only, or `every` zero).
    pub fn watch_tools(
        &self,
        dir: Option<PathBuf>,
        every: Duration,
    ) -> Option<AbortOnDropHandle<()>> {
        let dir = dir.filter(|_| !every.is_zero())?;
        let runner = self.clone();
        Some(AbortOnDropHandle::new(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let (runner, dir) = (runner.clone(), dir.clone());
                // Loading may start MCP servers and wait for them: off the async workers.
                let looked = tokio::task::spawn_blocking(move || {
                    let loaded = runner
                        .loaded
                        .library(Some(&dir), |d| (runner.load_library)(d));
                    if let Err(e) = loaded {
                        tracing::warn!(folder = %dir.display(), "cannot load the tools folder: {e}");
                    }
                    let sources = runner.sources.iter();
                    sources.flat_map(|s| s.release_unused()).collect::<Vec<_>>()
                })
                .await;
                if let Ok(stopped) = looked
                    && !stopped.is_empty()
                {
                    tracing::info!(servers = ?stopped, "stopped MCP servers no longer declared");
                }
            }
        })))
    }
}
