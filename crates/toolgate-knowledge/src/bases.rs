//! A tenant's knowledge bases: create, list, show, remove, each refused with a sentence
//! when the name or settings do not fit. Import is in `import.rs`, search in
//! `search.rs`.

use toolgate_store::Store;
use toolgate_store::knowledge::{BaseRow, DocumentRow, NewBase};

use crate::{ChunkSize, Embedder, Endpoint, KnowledgeError};

/// One tenant's knowledge bases in a store, with the endpoints for embeddings and
/// reranking.
///
/// ```no_run
/// # async fn f(store: toolgate_store::Store) -> Result<(), toolgate_knowledge::KnowledgeError> {
/// use toolgate_knowledge::{ChunkSize, Knowledge, Mode, Query};
/// let kb = Knowledge::new(store, "default");
/// kb.create("handbook", None, ChunkSize::default()).await?;
/// kb.add("handbook", &["docs/".into()], &mut |_| {}).await?;
/// let hits = kb.search("handbook", &Query::new("how do I reset my password", Mode::Fulltext)).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Knowledge {
    pub(crate) store: Store,
    pub(crate) tenant: String,
    pub(crate) embeddings: Endpoint,
    pub(crate) rerank: Endpoint,
}

/// A base and its documents.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct BaseDetail {
    #[serde(flatten)]
    pub base: BaseRow,
    pub sources: Vec<DocumentRow>,
}

/// A base's name: letters, digits, `_`, `-`, `.`, at most 64.
pub fn check_name(name: &str) -> Result<(), KnowledgeError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(KnowledgeError::Invalid(format!(
            "'{name}' is not a knowledge base name: use letters, digits, '_', '-' and '.' (at most 64)"
        )))
    }
}

impl Knowledge {
    /// `tenant`'s bases in `store`, with the endpoints from the environment
    /// ([`Endpoint::embeddings_from_env`], [`Endpoint::rerank_from_env`]).
    pub fn new(store: Store, tenant: &str) -> Knowledge {
        Knowledge {
            store,
            tenant: tenant.to_string(),
            embeddings: Endpoint::embeddings_from_env(),
            rerank: Endpoint::rerank_from_env(),
        }
    }

    /// The same, with these endpoints.
    pub fn with_endpoints(mut self, embeddings: Endpoint, rerank: Endpoint) -> Knowledge {
        self.embeddings = embeddings;
        self.rerank = rerank;
        self
    }

    /// The tenant these bases belong to.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Creates base `name`; `embeddings` is `openai:MODEL` (see [`crate::parse_spec`])
    /// or `None` for full-text search only.
    pub async fn create(
        &self,
        name: &str,
        embeddings: Option<String>,
        size: ChunkSize,
    ) -> Result<BaseRow, KnowledgeError> {
        check_name(name)?;
        let base = NewBase {
            tenant: self.tenant.clone(),
            name: name.to_string(),
            embeddings,
            chunk: size.size as i64,
            overlap: size.overlap as i64,
        };
        Ok(self.store.create_knowledge_base(base).await?)
    }

    /// The tenant's bases, by name.
    pub async fn list(&self) -> Result<Vec<BaseRow>, KnowledgeError> {
        Ok(self.store.knowledge_bases(&self.tenant).await?)
    }

    /// Base `name` (the tenant's own; any other is unknown).
    pub async fn base(&self, name: &str) -> Result<BaseRow, KnowledgeError> {
        self.store
            .knowledge_base(&self.tenant, name)
            .await?
            .ok_or_else(|| KnowledgeError::NoBase(name.to_string()))
    }

    /// Base `name` with its documents.
    pub async fn show(&self, name: &str) -> Result<BaseDetail, KnowledgeError> {
        let base = self.base(name).await?;
        let sources = self.store.knowledge_documents(base.id).await?;
        Ok(BaseDetail { base, sources })
    }

    /// Removes base `name` and everything in it.
    pub async fn remove(&self, name: &str) -> Result<(), KnowledgeError> {
        let base = self.base(name).await?;
        self.store.remove_knowledge_base(base.id).await?;
        Ok(())
    }

    /// Removes one source from base `name`; refused when the base does not have it.
    pub async fn remove_source(&self, name: &str, source: &str) -> Result<(), KnowledgeError> {
        let base = self.base(name).await?;
        let source = crate::import::source_name(std::path::Path::new(source));
        if self
            .store
            .remove_knowledge_document(base.id, &source)
            .await?
        {
            Ok(())
        } else {
            Err(KnowledgeError::Invalid(format!(
                "knowledge base '{name}' has no source '{source}' (toolgate kb show {name} lists them)"
            )))
        }
    }

    /// The base's embedder, if it has a model. `asked`, when given, must be the model
    /// the base was made with: vectors of two models do not compare.
    pub fn embedder(
        &self,
        base: &BaseRow,
        asked: Option<&str>,
    ) -> Result<Option<Embedder>, KnowledgeError> {
        if let Some(asked) = asked.map(str::trim).filter(|a| !a.is_empty())
            && Some(asked) != base.embeddings.as_deref().or(Some("none"))
        {
            return Err(KnowledgeError::Invalid(format!(
                "knowledge base '{}' was made with embeddings {}, not {asked}: vectors of different models do not compare (make a new base for another model)",
                base.name,
                base.embeddings.as_deref().unwrap_or("none"),
            )));
        }
        Ok(base.embeddings.clone().map(|spec| Embedder {
            spec,
            endpoint: self.embeddings.clone(),
        }))
    }
}

/// Refuses vectors whose length is not the base's.
pub(crate) fn check_dims(base: &BaseRow, got: usize) -> Result<(), KnowledgeError> {
    match base.dims {
        Some(dims) if dims as usize != got => Err(KnowledgeError::Invalid(format!(
            "the embeddings endpoint gave vectors of {got} numbers, but knowledge base '{}' holds vectors of {dims} ({}): is it serving another model?",
            base.name,
            base.embeddings.as_deref().unwrap_or("none"),
        ))),
        _ => Ok(()),
    }
}
