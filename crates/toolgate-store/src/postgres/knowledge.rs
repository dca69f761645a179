//! Knowledge bases on PostgreSQL: bases, documents and chunks in their tables,
//! full-text search over the chunks' generated `tsvector` (English, `ts_rank`),
//! embeddings read back for the semantic ranking done by the caller.

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::clock::NOW_MS;
use super::{PgStore, StoreError};
use crate::Refusal;
use crate::knowledge::{
    BaseRow, ChunkHit, DocumentRow, NewBase, NewDocument, Stored, any_of, bytes_vector,
    vector_bytes,
};

/// A base with its totals (as `SELECT ... FROM knowledge_bases b`).
const BASE: &str =
    "SELECT b.id, b.tenant, b.name, b.embeddings, b.dims, b.chunk_size, b.overlap, b.created_at,
        (SELECT count(*) FROM knowledge_documents d WHERE d.base_id = b.id),
        (SELECT count(*) FROM knowledge_chunks c WHERE c.base_id = b.id),
        (SELECT coalesce(sum(bytes), 0)::BIGINT FROM knowledge_documents d WHERE d.base_id = b.id)
    FROM knowledge_bases b";

fn base_row(r: &Row) -> Result<BaseRow, tokio_postgres::Error> {
    Ok(BaseRow {
        id: r.try_get(0)?,
        tenant: r.try_get(1)?,
        name: r.try_get(2)?,
        embeddings: r.try_get(3)?,
        dims: r.try_get(4)?,
        chunk: r.try_get(5)?,
        overlap: r.try_get(6)?,
        created_at: r.try_get(7)?,
        documents: r.try_get(8)?,
        chunks: r.try_get(9)?,
        bytes: r.try_get(10)?,
    })
}

/// The chunk columns a hit is read from (`c` chunks, `d` documents), the score last.
const HIT: &str = "c.id, d.source, c.ordinal, c.section, c.start_offset, c.end_offset, c.text";

fn hit_row(r: &Row) -> Result<ChunkHit, tokio_postgres::Error> {
    Ok(ChunkHit {
        id: r.try_get(0)?,
        source: r.try_get(1)?,
        ordinal: r.try_get(2)?,
        section: r.try_get(3)?,
        start: r.try_get(4)?,
        end: r.try_get(5)?,
        text: r.try_get(6)?,
        raw: r.try_get(7)?,
    })
}

impl PgStore {
    /// Runs one query and reads its rows with `read`.
    async fn knowledge_rows<T>(
        &self,
        sql: String,
        args: Vec<Box<dyn ToSql + Send + Sync>>,
        read: fn(&Row) -> Result<T, tokio_postgres::Error>,
    ) -> Result<Vec<T>, StoreError>
    where
        T: Send + 'static,
    {
        self.on_pool(move |s| async move {
            let client = s.client().await?;
            let refs: Vec<&(dyn ToSql + Sync)> = args
                .iter()
                .map(|a| a.as_ref() as &(dyn ToSql + Sync))
                .collect();
            let rows = client.query(&sql, &refs).await.map_err(|e| s.error(e))?;
            rows.iter()
                .map(read)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| s.error(e))
        })
        .await
    }

    /// Creates a base; refused when the tenant has one of that name.
    pub async fn create_knowledge_base(&self, base: NewBase) -> Result<BaseRow, StoreError> {
        self.open_for_writes()?;
        let name = base.name.clone();
        let inserted = self
            .knowledge_rows(
                format!(
                    "INSERT INTO knowledge_bases (tenant, name, embeddings, chunk_size, overlap, created_at)
                     VALUES ($1, $2, $3, $4, $5, {NOW_MS}) ON CONFLICT (tenant, name) DO NOTHING RETURNING id"
                ),
                vec![
                    Box::new(base.tenant.clone()),
                    Box::new(base.name),
                    Box::new(base.embeddings),
                    Box::new(base.chunk),
                    Box::new(base.overlap),
                ],
                |r| r.try_get::<_, i64>(0),
            )
            .await?;
        self.committed();
        if inserted.is_empty() {
            return Err(StoreError::Refused(
                Refusal::NameTaken,
                format!("there is already a knowledge base '{name}'"),
            ));
        }
        self.knowledge_base(&base.tenant, &name)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("knowledge base '{name}' vanished")))
    }

    /// The tenant's bases, by name.
    pub async fn knowledge_bases(&self, tenant: &str) -> Result<Vec<BaseRow>, StoreError> {
        self.knowledge_rows(
            format!("{BASE} WHERE b.tenant = $1 ORDER BY b.name COLLATE \"C\""),
            vec![Box::new(tenant.to_string())],
            base_row,
        )
        .await
    }

    /// The tenant's base `name`, if there is one.
    pub async fn knowledge_base(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<BaseRow>, StoreError> {
        let rows = self
            .knowledge_rows(
                format!("{BASE} WHERE b.tenant = $1 AND b.name = $2"),
                vec![Box::new(tenant.to_string()), Box::new(name.to_string())],
                base_row,
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    /// Removes a base with its documents and chunks; whether it was there.
    pub async fn remove_knowledge_base(&self, base: i64) -> Result<bool, StoreError> {
        self.open_for_writes()?;
        self.on_pool(move |s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.map_err(|e| s.error(e))?;
            tx.execute("DELETE FROM knowledge_chunks WHERE base_id = $1", &[&base])
                .await
                .map_err(|e| s.error(e))?;
            let n = tx
                .execute("DELETE FROM knowledge_bases WHERE id = $1", &[&base])
                .await
                .map_err(|e| s.error(e))?;
            tx.commit().await.map_err(|e| s.error(e))?;
            s.committed();
            Ok(n > 0)
        })
        .await
    }

    /// The base's documents, by source.
    pub async fn knowledge_documents(&self, base: i64) -> Result<Vec<DocumentRow>, StoreError> {
        self.knowledge_rows(
            "SELECT d.source, d.hash, d.bytes,
                    (SELECT count(*) FROM knowledge_chunks c WHERE c.document_id = d.id), d.added_at
             FROM knowledge_documents d WHERE d.base_id = $1 ORDER BY d.source COLLATE \"C\""
                .into(),
            vec![Box::new(base)],
            |r| {
                Ok(DocumentRow {
                    source: r.try_get(0)?,
                    hash: r.try_get(1)?,
                    bytes: r.try_get(2)?,
                    chunks: r.try_get(3)?,
                    added_at: r.try_get(4)?,
                })
            },
        )
        .await
    }

    /// The content hash stored for `source`, if the base has it.
    pub async fn knowledge_hash(
        &self,
        base: i64,
        source: &str,
    ) -> Result<Option<String>, StoreError> {
        let rows = self
            .knowledge_rows(
                "SELECT hash FROM knowledge_documents WHERE base_id = $1 AND source = $2".into(),
                vec![Box::new(base), Box::new(source.to_string())],
                |r| r.try_get::<_, String>(0),
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    /// Stores a document (its chunks replacing any the source had), unless the same
    /// content is there already. The first vectors stored set the base's `dims`.
    pub async fn put_knowledge_document(
        &self,
        base: i64,
        doc: NewDocument,
    ) -> Result<Stored, StoreError> {
        self.open_for_writes()?;
        self.on_pool(move |s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.map_err(|e| s.error(e))?;
            let stored = put_document(&tx, base, &doc)
                .await
                .map_err(|e| s.error(e))?;
            tx.commit().await.map_err(|e| s.error(e))?;
            s.committed();
            Ok(stored)
        })
        .await
    }

    /// Removes `source` from the base; whether it was there.
    pub async fn remove_knowledge_document(
        &self,
        base: i64,
        source: String,
    ) -> Result<bool, StoreError> {
        self.open_for_writes()?;
        self.on_pool(move |s| async move {
            let mut client = s.client().await?;
            let tx = client.transaction().await.map_err(|e| s.error(e))?;
            let found = drop_document(&tx, base, &source)
                .await
                .map_err(|e| s.error(e))?;
            tx.commit().await.map_err(|e| s.error(e))?;
            s.committed();
            Ok(found)
        })
        .await
    }

    /// The base's chunks matching any of `terms`, best first (the raw score is
    /// `ts_rank`'s).
    pub async fn search_knowledge_text(
        &self,
        base: i64,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ChunkHit>, StoreError> {
        let terms = any_of(terms);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        self.knowledge_rows(
            format!(
                "SELECT {HIT}, ts_rank(c.tsv, q)::FLOAT8 AS score
                 FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id,
                      to_tsquery('english', $2) q
                 WHERE c.base_id = $1 AND c.tsv @@ q
                 ORDER BY score DESC, c.id LIMIT $3"
            ),
            vec![
                Box::new(base),
                Box::new(terms.join(" | ")),
                Box::new(limit as i64),
            ],
            hit_row,
        )
        .await
    }

    /// Every embedded chunk of the base: its id and vector.
    pub async fn knowledge_vectors(&self, base: i64) -> Result<Vec<(i64, Vec<f32>)>, StoreError> {
        self.knowledge_rows(
            "SELECT id, embedding FROM knowledge_chunks WHERE base_id = $1 AND embedding IS NOT NULL"
                .into(),
            vec![Box::new(base)],
            |r| Ok((r.try_get(0)?, bytes_vector(r.try_get::<_, &[u8]>(1)?))),
        )
        .await
    }

    /// The base's chunks of these ids (raw score 0), in no particular order.
    pub async fn knowledge_chunks(
        &self,
        base: i64,
        ids: &[i64],
    ) -> Result<Vec<ChunkHit>, StoreError> {
        self.knowledge_rows(
            format!(
                "SELECT {HIT}, 0.0::FLOAT8 FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
                 WHERE c.base_id = $1 AND c.id = ANY($2)"
            ),
            vec![Box::new(base), Box::new(ids.to_vec())],
            hit_row,
        )
        .await
    }
}

/// [`PgStore::put_knowledge_document`] inside its transaction (the document row
/// locked, so that two workers adding the same source take turns).
async fn put_document(
    tx: &tokio_postgres::Transaction<'_>,
    base: i64,
    doc: &NewDocument,
) -> Result<Stored, tokio_postgres::Error> {
    let old = tx
        .query_opt(
            "SELECT id, hash FROM knowledge_documents WHERE base_id = $1 AND source = $2 FOR UPDATE",
            &[&base, &doc.source],
        )
        .await?;
    let stored = match old {
        Some(r) if r.try_get::<_, String>(1)? == doc.hash => return Ok(Stored::Unchanged),
        Some(_) => {
            drop_document(tx, base, &doc.source).await?;
            Stored::Replaced
        }
        None => Stored::Added,
    };
    let id: i64 = tx
        .query_one(
            &format!(
                "INSERT INTO knowledge_documents (base_id, source, hash, bytes, added_at)
                 VALUES ($1, $2, $3, $4, {NOW_MS}) RETURNING id"
            ),
            &[&base, &doc.source, &doc.hash, &doc.bytes],
        )
        .await?
        .try_get(0)?;
    let c = &doc.chunks;
    let ordinals: Vec<i64> = c.iter().map(|c| c.ordinal).collect();
    let sections: Vec<Option<String>> = c.iter().map(|c| c.section.clone()).collect();
    let starts: Vec<i64> = c.iter().map(|c| c.start).collect();
    let ends: Vec<i64> = c.iter().map(|c| c.end).collect();
    let texts: Vec<String> = c.iter().map(|c| c.text.clone()).collect();
    let vectors: Vec<Option<Vec<u8>>> = c
        .iter()
        .map(|c| c.embedding.as_deref().map(vector_bytes))
        .collect();
    tx.execute(
        "INSERT INTO knowledge_chunks (document_id, base_id, ordinal, section, start_offset, end_offset, text, embedding)
         SELECT $1, $2, * FROM UNNEST($3::BIGINT[], $4::TEXT[], $5::BIGINT[], $6::BIGINT[], $7::TEXT[], $8::BYTEA[])",
        &[&id, &base, &ordinals, &sections, &starts, &ends, &texts, &vectors],
    )
    .await?;
    if let Some(dims) = c
        .iter()
        .find_map(|c| c.embedding.as_ref().map(|v| v.len() as i64))
    {
        tx.execute(
            "UPDATE knowledge_bases SET dims = coalesce(dims, $2) WHERE id = $1",
            &[&base, &dims],
        )
        .await?;
    }
    Ok(stored)
}

/// Deletes `source` and its chunks from the base; whether it was there.
async fn drop_document(
    tx: &tokio_postgres::Transaction<'_>,
    base: i64,
    source: &str,
) -> Result<bool, tokio_postgres::Error> {
    tx.execute(
        "DELETE FROM knowledge_chunks WHERE document_id IN
             (SELECT id FROM knowledge_documents WHERE base_id = $1 AND source = $2)",
        &[&base, &source],
    )
    .await?;
    let n = tx
        .execute(
            "DELETE FROM knowledge_documents WHERE base_id = $1 AND source = $2",
            &[&base, &source],
        )
        .await?;
    Ok(n > 0)
}
