//! Knowledge bases on SQLite: bases, documents and chunks in their tables, full-text
//! search through the FTS5 index `knowledge_fts` (BM25), embeddings read back for the
//! semantic ranking done by the caller.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::SqliteStore;
use super::runs::RunsError;
use crate::Refusal;
use crate::knowledge::{
    BaseRow, ChunkHit, DocumentRow, NewBase, NewDocument, Stored, any_of, bytes_vector,
    vector_bytes,
};
use toolgate_protocol::clock::now_ms;

/// A base with its totals, by tenant and name.
const BASE: &str =
    "SELECT b.id, b.tenant, b.name, b.embeddings, b.dims, b.chunk_size, b.overlap, b.created_at,
        (SELECT count(*) FROM knowledge_documents d WHERE d.base_id = b.id),
        (SELECT count(*) FROM knowledge_chunks c WHERE c.base_id = b.id),
        (SELECT coalesce(sum(bytes), 0) FROM knowledge_documents d WHERE d.base_id = b.id)
    FROM knowledge_bases b";

fn base_row(r: &Row<'_>) -> rusqlite::Result<BaseRow> {
    Ok(BaseRow {
        id: r.get(0)?,
        tenant: r.get(1)?,
        name: r.get(2)?,
        embeddings: r.get(3)?,
        dims: r.get(4)?,
        chunk: r.get(5)?,
        overlap: r.get(6)?,
        created_at: r.get(7)?,
        documents: r.get(8)?,
        chunks: r.get(9)?,
        bytes: r.get(10)?,
    })
}

/// The chunk columns a hit is read from (`c` chunks, `d` documents), the score last.
const HIT: &str = "c.id, d.source, c.ordinal, c.section, c.start_offset, c.end_offset, c.text";

fn hit_row(r: &Row<'_>) -> rusqlite::Result<ChunkHit> {
    Ok(ChunkHit {
        id: r.get(0)?,
        source: r.get(1)?,
        ordinal: r.get(2)?,
        section: r.get(3)?,
        start: r.get(4)?,
        end: r.get(5)?,
        text: r.get(6)?,
        raw: r.get(7)?,
    })
}

impl SqliteStore {
    /// Creates a base; refused when the tenant has one of that name.
    pub async fn create_knowledge_base(&self, base: NewBase) -> Result<BaseRow, RunsError> {
        let (tenant, name) = (base.tenant.clone(), base.name.clone());
        self.transact(move |tx| {
            let taken = tx.execute(
                "INSERT INTO knowledge_bases (tenant, name, embeddings, chunk_size, overlap, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (tenant, name) DO NOTHING",
                params![base.tenant, base.name, base.embeddings, base.chunk, base.overlap, now_ms()],
            )? == 0;
            if taken {
                return Err(RunsError::Refused(
                    Refusal::NameTaken,
                    format!("there is already a knowledge base '{}'", base.name),
                ));
            }
            Ok(tx.query_row(
                &format!("{BASE} WHERE b.tenant = ?1 AND b.name = ?2"),
                params![tenant, name],
                base_row,
            )?)
        })
        .await
    }

    /// The tenant's bases, by name.
    pub fn knowledge_bases(&self, tenant: &str) -> Result<Vec<BaseRow>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt =
                conn.prepare_cached(&format!("{BASE} WHERE b.tenant = ?1 ORDER BY b.name"))?;
            let rows = stmt.query_map([tenant], base_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The tenant's base `name`, if there is one.
    pub fn knowledge_base(&self, tenant: &str, name: &str) -> Result<Option<BaseRow>, RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .prepare_cached(&format!("{BASE} WHERE b.tenant = ?1 AND b.name = ?2"))?
                .query_row([tenant, name], base_row)
                .optional()?)
        })
    }

    /// Removes a base with its documents and chunks; whether it was there.
    pub async fn remove_knowledge_base(&self, base: i64) -> Result<bool, RunsError> {
        self.transact(move |tx| {
            tx.execute("DELETE FROM knowledge_chunks WHERE base_id = ?1", [base])?;
            tx.execute("DELETE FROM knowledge_documents WHERE base_id = ?1", [base])?;
            Ok(tx.execute("DELETE FROM knowledge_bases WHERE id = ?1", [base])? > 0)
        })
        .await
    }

    /// The base's documents, by source.
    pub fn knowledge_documents(&self, base: i64) -> Result<Vec<DocumentRow>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT d.source, d.hash, d.bytes,
                        (SELECT count(*) FROM knowledge_chunks c WHERE c.document_id = d.id), d.added_at
                 FROM knowledge_documents d WHERE d.base_id = ?1 ORDER BY d.source",
            )?;
            let rows = stmt.query_map([base], |r| {
                Ok(DocumentRow {
                    source: r.get(0)?,
                    hash: r.get(1)?,
                    bytes: r.get(2)?,
                    chunks: r.get(3)?,
                    added_at: r.get(4)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The content hash stored for `source`, if the base has it.
    pub fn knowledge_hash(&self, base: i64, source: &str) -> Result<Option<String>, RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT hash FROM knowledge_documents WHERE base_id = ?1 AND source = ?2",
                )?
                .query_row(params![base, source], |r| r.get(0))
                .optional()?)
        })
    }

    /// Stores a document (its chunks replacing any the source had), unless the same
    /// content is there already. The first vectors stored set the base's `dims`.
    pub async fn put_knowledge_document(
        &self,
        base: i64,
        doc: NewDocument,
    ) -> Result<Stored, RunsError> {
        self.transact(move |tx| {
            let old: Option<(i64, String)> = tx
                .query_row(
                    "SELECT id, hash FROM knowledge_documents WHERE base_id = ?1 AND source = ?2",
                    params![base, doc.source],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let stored = match &old {
                Some((_, hash)) if *hash == doc.hash => return Ok(Stored::Unchanged),
                Some((id, _)) => {
                    drop_document(tx, *id)?;
                    Stored::Replaced
                }
                None => Stored::Added,
            };
            insert_document(tx, base, &doc)?;
            Ok(stored)
        })
        .await
    }

    /// Removes `source` from the base; whether it was there.
    pub async fn remove_knowledge_document(
        &self,
        base: i64,
        source: String,
    ) -> Result<bool, RunsError> {
        self.transact(move |tx| {
            let id: Option<i64> = tx
                .query_row(
                    "SELECT id FROM knowledge_documents WHERE base_id = ?1 AND source = ?2",
                    params![base, source],
                    |r| r.get(0),
                )
                .optional()?;
            match id {
                Some(id) => drop_document(tx, id).map(|()| true),
                None => Ok(false),
            }
        })
        .await
    }

    /// The base's chunks matching any of `terms`, best first (the raw score is BM25's,
    /// negated so that higher is better).
    pub fn search_knowledge_text(
        &self,
        base: i64,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ChunkHit>, RunsError> {
        let terms = any_of(terms);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let query = terms
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(" OR ");
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {HIT}, -bm25(knowledge_fts, 1.0, 0.5) AS score
                 FROM knowledge_fts JOIN knowledge_chunks c ON c.id = knowledge_fts.rowid
                 JOIN knowledge_documents d ON d.id = c.document_id
                 WHERE knowledge_fts MATCH ?1 AND c.base_id = ?2
                 ORDER BY bm25(knowledge_fts, 1.0, 0.5), c.id LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![query, base, limit as i64], hit_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Every embedded chunk of the base: its id and vector.
    pub fn knowledge_vectors(&self, base: i64) -> Result<Vec<(i64, Vec<f32>)>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, embedding FROM knowledge_chunks WHERE base_id = ?1 AND embedding IS NOT NULL",
            )?;
            let rows = stmt.query_map([base], |r| {
                Ok((r.get::<_, i64>(0)?, bytes_vector(&r.get::<_, Vec<u8>>(1)?)))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The base's chunks of these ids (raw score 0), in no particular order.
    pub fn knowledge_chunks(&self, base: i64, ids: &[i64]) -> Result<Vec<ChunkHit>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {HIT}, 0.0 FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
                 WHERE c.base_id = ?1 AND c.id = ?2"
            ))?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(hit) = stmt.query_row(params![base, id], hit_row).optional()? {
                    out.push(hit);
                }
            }
            Ok(out)
        })
    }
}

/// Deletes a document and its chunks (the chunks first: their trigger keeps the index).
fn drop_document(tx: &Connection, id: i64) -> Result<(), RunsError> {
    tx.execute("DELETE FROM knowledge_chunks WHERE document_id = ?1", [id])?;
    tx.execute("DELETE FROM knowledge_documents WHERE id = ?1", [id])?;
    Ok(())
}

/// Inserts a document and its chunks; the first vectors set the base's `dims`.
fn insert_document(tx: &Connection, base: i64, doc: &NewDocument) -> Result<(), RunsError> {
    tx.execute(
        "INSERT INTO knowledge_documents (base_id, source, hash, bytes, added_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![base, doc.source, doc.hash, doc.bytes, now_ms()],
    )?;
    let document = tx.last_insert_rowid();
    let mut insert = tx.prepare_cached(
        "INSERT INTO knowledge_chunks (document_id, base_id, ordinal, section, start_offset, end_offset, text, embedding)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for c in &doc.chunks {
        let vector = c.embedding.as_deref().map(vector_bytes);
        insert.execute(params![
            document, base, c.ordinal, c.section, c.start, c.end, c.text, vector
        ])?;
    }
    if let Some(dims) = doc
        .chunks
        .iter()
        .find_map(|c| c.embedding.as_ref().map(Vec::len))
    {
        tx.execute(
            "UPDATE knowledge_bases SET dims = coalesce(dims, ?2) WHERE id = ?1",
            params![base, dims as i64],
        )?;
    }
    Ok(())
}
