//! The retrieval tool an agent gets from its `knowledge: [NAME, ...]` (or a tool file
//! with `entry: {type: knowledge, ...}`): `query` in, the best passages of those bases
//! out, each with its base, source, section, chunk and byte range for citations. It
//! searches the bases of the run's tenant only.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate_store::Store;
use toolgate_tool::{Entry, Permission, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::{Knowledge, Mode, Query};

/// The tool's name when an agent lists `knowledge:`.
pub const SEARCH_KNOWLEDGE: &str = "search_knowledge";

/// The tenant of a run that names none (the CLI's runs).
const DEFAULT_TENANT: &str = "default";

/// What a retrieval tool searches, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieval {
    pub bases: Vec<String>,
    pub top_k: usize,
    pub threshold: f64,
    pub mode: Option<Mode>,
    pub rerank: Option<String>,
}

impl Retrieval {
    /// The bases, searched with the defaults (5 passages, no threshold, the bases' own
    /// mode).
    pub fn of(bases: Vec<String>) -> Retrieval {
        Retrieval {
            bases,
            top_k: 5,
            threshold: 0.0,
            mode: None,
            rerank: None,
        }
    }
}

/// A retrieval tool over `store`.
pub struct KnowledgeTool {
    spec: ToolSpec,
    store: Store,
    retrieval: Retrieval,
}

/// The tool `name` searching `retrieval.bases` in `store`.
pub fn tool(
    name: &str,
    description: Option<&str>,
    store: Store,
    retrieval: Retrieval,
) -> Arc<dyn Tool> {
    let description = description.map_or_else(
        || {
            format!(
                "Searches the knowledge base(s) {} and returns the passages that best answer the query, each with its source, section and position: quote them and cite the source.",
                retrieval.bases.join(", ")
            )
        },
        str::to_string,
    );
    let spec = ToolSpec {
        name: name.to_string(),
        description,
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, in words."},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 20, "description": format!("How many passages at most (default {}).", retrieval.top_k)}
            },
            "required": ["query"]
        }),
        permission: Permission::Auto,
        entry: Entry::Builtin {
            handler: SEARCH_KNOWLEDGE.into(),
        },
        category: Some("knowledge".into()),
        timeout: None,
        tags: vec!["knowledge".into()],
        version: None,
        read_only: true,
        sandbox: None,
        output: None,
        credentials: Default::default(),
        is_final: false,
        hidden: false,
        display: Default::default(),
    };
    Arc::new(KnowledgeTool {
        spec,
        store,
        retrieval,
    })
}

#[async_trait]
impl Tool for KnowledgeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let text = args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_string();
        if text.is_empty() {
            return Ok(ToolOutput::error("query is empty: say what to look for"));
        }
        let r = &self.retrieval;
        let top_k = args
            .get("top_k")
            .and_then(Value::as_u64)
            .map_or(r.top_k, |k| k as usize);
        let query = Query {
            text,
            top_k,
            threshold: r.threshold,
            mode: r.mode,
            rerank: r.rerank.clone(),
        };
        let tenant = ctx.run.tenant.as_deref().unwrap_or(DEFAULT_TENANT);
        let kb = Knowledge::new(self.store.clone(), tenant);
        match kb.search_many(&r.bases, &query).await {
            Ok(passages) => Ok(ToolOutput::json(json!({"passages": passages}))),
            Err(e) if e.is_bad_input() => Ok(ToolOutput::error(e.to_string())),
            Err(e) => Err(ToolError::Execution(e.to_string())),
        }
    }
}
