//! Tool files whose entry is `{type: knowledge, bases: [...], top_k, threshold, mode,
//! rerank}`: a retrieval tool of the user's naming over those bases. The source holds
//! the store the tool searches, so the program that has one registers it
//! (`Sources::with_first(KnowledgeFiles::new(store))`).

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use toolgate_store::Store;
use toolgate_tool::folder::{LoadError, ToolDef};
use toolgate_tool::{Claim, Found, Permission, Schema, SourceBinding, ToolSource};

use crate::{Mode, Retrieval};

/// The source's name, and its entry's type.
pub const NAME: &str = "knowledge";

/// The tool files of `type: knowledge`.
pub struct KnowledgeFiles {
    store: Store,
}

impl KnowledgeFiles {
    pub fn new(store: Store) -> KnowledgeFiles {
        KnowledgeFiles { store }
    }
}

/// A knowledge tool file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    permission: Option<Permission>,
    entry: RawEntry,
}

/// Its entry.
#[derive(Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(rename = "type")]
    kind: String,
    bases: Vec<String>,
    #[serde(default = "five")]
    top_k: usize,
    #[serde(default)]
    threshold: f64,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    rerank: Option<String>,
}

fn five() -> usize {
    5
}

/// The file's content as JSON (YAML unless it is a `.json`).
fn parse(path: &Path, text: &str) -> Result<Value, String> {
    if path.extension().and_then(|e| e.to_str()) == Some("json") {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        serde_saphyr::from_str(text).map_err(|e| e.to_string())
    }
}

impl ToolSource for KnowledgeFiles {
    fn name(&self) -> &'static str {
        NAME
    }

    fn claims(&self, path: &Path, text: &str) -> Claim {
        let ours = text.contains("knowledge")
            && parse(path, text).is_ok_and(|v| v["entry"]["type"] == NAME);
        if ours { Claim::Tools } else { Claim::Not }
    }

    fn load(&self, path: &Path, text: &str) -> Found {
        match self.read(path, text) {
            Ok(tool) => Found {
                tools: vec![tool],
                errors: Vec::new(),
            },
            Err(message) => Found {
                tools: Vec::new(),
                errors: vec![LoadError {
                    path: path.to_path_buf(),
                    line: None,
                    message,
                }],
            },
        }
    }
}

impl KnowledgeFiles {
    /// The tool of one file, or why not.
    fn read(&self, path: &Path, text: &str) -> Result<ToolDef, String> {
        let raw: RawFile = serde_json::from_value(parse(path, text)?).map_err(|e| e.to_string())?;
        if raw.entry.bases.is_empty() {
            return Err("entry: bases must name at least one knowledge base".into());
        }
        for base in &raw.entry.bases {
            crate::check_name(base).map_err(|e| format!("entry: bases: {e}"))?;
        }
        if !(1..=100).contains(&raw.entry.top_k) || !(0.0..=1.0).contains(&raw.entry.threshold) {
            return Err("entry: top_k must be 1 to 100 and threshold 0 to 1".into());
        }
        let retrieval = Retrieval {
            bases: raw.entry.bases.clone(),
            top_k: raw.entry.top_k,
            threshold: raw.entry.threshold,
            mode: raw.entry.mode,
            rerank: raw.entry.rerank.clone(),
        };
        let runner = crate::tool(
            &raw.name,
            raw.description.as_deref(),
            self.store.clone(),
            retrieval,
        );
        let mut spec = runner.spec().clone();
        spec.permission = raw.permission.unwrap_or(Permission::Auto);
        let label = format!("knowledge:{}", raw.entry.bases.join(","));
        spec.entry = SourceBinding::entry(NAME, label, &raw.entry);
        let schema = Schema::compile(&spec.parameters).map_err(|e| e.to_string())?;
        Ok(ToolDef {
            spec,
            schema,
            output: None,
            path: path.to_path_buf(),
            policy: Default::default(),
            rule: Default::default(),
            source: NAME,
            runner: Some(runner),
        })
    }
}
