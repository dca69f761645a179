//! Knowledge bases through the facade: bases per tenant, their documents and chunks,
//! full-text search by each backend's own ranking, embeddings for semantic ranking.

use super::super::knowledge::{BaseRow, ChunkHit, DocumentRow, NewBase, NewDocument, Stored};
use super::super::{Backend, Store, StoreError};

impl Store {
    /// Creates a knowledge base; refused ([`crate::Refusal::NameTaken`]) when the
    /// tenant has one of that name.
    pub async fn create_knowledge_base(&self, base: NewBase) -> Result<BaseRow, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.create_knowledge_base(base).await?),
            Backend::Postgres(s) => s.create_knowledge_base(base).await,
        }
    }

    /// The tenant's knowledge bases, by name, with their totals.
    pub async fn knowledge_bases(&self, tenant: &str) -> Result<Vec<BaseRow>, StoreError> {
        let tenant = tenant.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.knowledge_bases(&tenant)).await,
            Backend::Postgres(s) => s.knowledge_bases(&tenant).await,
        }
    }

    /// The tenant's knowledge base `name`, if it has one (another tenant's is none).
    pub async fn knowledge_base(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<BaseRow>, StoreError> {
        let (tenant, name) = (tenant.to_string(), name.to_string());
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.knowledge_base(&tenant, &name)).await,
            Backend::Postgres(s) => s.knowledge_base(&tenant, &name).await,
        }
    }

    /// Removes knowledge base `base` (an id from a [`BaseRow`]) with everything in it.
    pub async fn remove_knowledge_base(&self, base: i64) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.remove_knowledge_base(base).await?),
            Backend::Postgres(s) => s.remove_knowledge_base(base).await,
        }
    }

    /// The documents of knowledge base `base`, by source.
    pub async fn knowledge_documents(&self, base: i64) -> Result<Vec<DocumentRow>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.knowledge_documents(base)).await,
            Backend::Postgres(s) => s.knowledge_documents(base).await,
        }
    }

    /// The content hash stored for `source` in knowledge base `base`, if any.
    pub async fn knowledge_hash(
        &self,
        base: i64,
        source: &str,
    ) -> Result<Option<String>, StoreError> {
        let source = source.to_string();
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.knowledge_hash(base, &source)).await,
            Backend::Postgres(s) => s.knowledge_hash(base, &source).await,
        }
    }

    /// Stores a document in one transaction: nothing when its hash is the one stored,
    /// else its chunks replace whatever the source had.
    pub async fn put_knowledge_document(
        &self,
        base: i64,
        doc: NewDocument,
    ) -> Result<Stored, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.put_knowledge_document(base, doc).await?),
            Backend::Postgres(s) => s.put_knowledge_document(base, doc).await,
        }
    }

    /// Removes `source` and its chunks from knowledge base `base`; whether it was there.
    pub async fn remove_knowledge_document(
        &self,
        base: i64,
        source: &str,
    ) -> Result<bool, StoreError> {
        let source = source.to_string();
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.remove_knowledge_document(base, source).await?),
            Backend::Postgres(s) => s.remove_knowledge_document(base, source).await,
        }
    }

    /// The chunks of knowledge base `base` matching any of `terms`, best first, at most
    /// `limit`: BM25 on SQLite (FTS5), `ts_rank` on PostgreSQL; raw scores, higher is
    /// better.
    pub async fn search_knowledge_text(
        &self,
        base: i64,
        terms: Vec<String>,
        limit: usize,
    ) -> Result<Vec<ChunkHit>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.search_knowledge_text(base, &terms, limit))
                    .await
            }
            Backend::Postgres(s) => s.search_knowledge_text(base, &terms, limit).await,
        }
    }

    /// Every embedded chunk of knowledge base `base`: id and vector.
    pub async fn knowledge_vectors(&self, base: i64) -> Result<Vec<(i64, Vec<f32>)>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.knowledge_vectors(base)).await,
            Backend::Postgres(s) => s.knowledge_vectors(base).await,
        }
    }

    /// The chunks of knowledge base `base` with these ids (raw score 0).
    pub async fn knowledge_chunks(
        &self,
        base: i64,
        ids: Vec<i64>,
    ) -> Result<Vec<ChunkHit>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => s.blocking(move |s| s.knowledge_chunks(base, &ids)).await,
            Backend::Postgres(s) => s.knowledge_chunks(base, &ids).await,
        }
    }
}
