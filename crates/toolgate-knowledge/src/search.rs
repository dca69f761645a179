//! Searching a base: full text (the store's ranking), semantic (cosine similarity of
//! the query's embedding with every chunk's), or hybrid (reciprocal rank fusion of
//! both), then an optional rerank; scores on one scale (`score.rs`), filtered by the
//! threshold, cut to `top_k`.

use std::collections::HashMap;

use toolgate_store::knowledge::{BaseRow, ChunkHit};

use crate::bases::check_dims;
use crate::score::{cosine, fuse, relative, semantic};
use crate::{Knowledge, KnowledgeError, Reranker, terms};

/// How to rank.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::EnumString,
    strum::IntoStaticStr,
    utoipa::ToSchema,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Mode {
    /// Words: BM25 (SQLite FTS5) or `ts_rank` (PostgreSQL).
    Fulltext,
    /// Meaning: the embeddings' cosine similarity.
    Semantic,
    /// Both, by reciprocal rank fusion.
    Hybrid,
}

/// A search.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub text: String,
    /// How many passages at most (default 5).
    pub top_k: usize,
    /// The lowest score kept, 0 to 1 (default 0).
    pub threshold: f64,
    /// `None`: hybrid when the base has embeddings, else full text.
    pub mode: Option<Mode>,
    /// A rerank model to reorder the candidates with.
    pub rerank: Option<String>,
}

impl Query {
    pub fn new(text: &str, mode: Mode) -> Query {
        Query {
            text: text.into(),
            top_k: 5,
            threshold: 0.0,
            mode: Some(mode),
            rerank: None,
        }
    }
}

/// A passage found: where it is (base, source, section, chunk, byte range), its score
/// and text, for the model to quote and cite.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Passage {
    pub base: String,
    pub source: String,
    pub section: Option<String>,
    /// The chunk's place in its document, from 0.
    pub chunk: i64,
    /// Byte offsets in the document's extracted text.
    pub start: i64,
    pub end: i64,
    /// 0 to 1, 1 the best a query can get, in every mode.
    pub score: f64,
    pub text: String,
}

impl Knowledge {
    /// Searches base `name`.
    pub async fn search(&self, name: &str, q: &Query) -> Result<Vec<Passage>, KnowledgeError> {
        self.search_many(&[name.to_string()], q).await
    }

    /// Searches several bases and merges their passages by score.
    pub async fn search_many(
        &self,
        names: &[String],
        q: &Query,
    ) -> Result<Vec<Passage>, KnowledgeError> {
        if !(0.0..=1.0).contains(&q.threshold) {
            return Err(KnowledgeError::Invalid(format!(
                "threshold {} is outside 0 to 1",
                q.threshold
            )));
        }
        if q.top_k == 0 || q.top_k > 100 {
            return Err(KnowledgeError::Invalid("top_k must be 1 to 100".into()));
        }
        let mut all = Vec::new();
        for name in names {
            let base = self.base(name).await?;
            all.extend(self.search_base(&base, q).await?);
        }
        all.sort_by(|a, b| b.score.total_cmp(&a.score));
        all.retain(|p| p.score >= q.threshold);
        all.truncate(q.top_k);
        Ok(all)
    }

    /// One base's passages, scored, best first (not yet cut).
    async fn search_base(&self, base: &BaseRow, q: &Query) -> Result<Vec<Passage>, KnowledgeError> {
        let wanted = (q.top_k * 4).max(20);
        let mode = q.mode.unwrap_or(if base.embeddings.is_some() {
            Mode::Hybrid
        } else {
            Mode::Fulltext
        });
        let scored: Vec<(ChunkHit, f64)> = match mode {
            Mode::Fulltext => self.fulltext(base, &q.text, wanted).await?,
            Mode::Semantic => self.semantic(base, &q.text, wanted).await?,
            Mode::Hybrid => self.hybrid(base, &q.text, wanted).await?,
        };
        let scored = match &q.rerank {
            Some(model) => self.reranked(&q.text, model, scored).await?,
            None => scored,
        };
        Ok(scored
            .into_iter()
            .map(|(h, score)| Passage {
                base: base.name.clone(),
                source: h.source,
                section: h.section,
                chunk: h.ordinal,
                start: h.start,
                end: h.end,
                score,
                text: h.text,
            })
            .collect())
    }

    async fn fulltext(
        &self,
        base: &BaseRow,
        text: &str,
        wanted: usize,
    ) -> Result<Vec<(ChunkHit, f64)>, KnowledgeError> {
        let hits = self
            .store
            .search_knowledge_text(base.id, terms::terms(text), wanted)
            .await?;
        let raw: Vec<f64> = hits.iter().map(|h| h.raw).collect();
        Ok(hits.into_iter().zip(relative(&raw)).collect())
    }

    /// The `wanted` chunks nearest the query's embedding.
    async fn semantic(
        &self,
        base: &BaseRow,
        text: &str,
        wanted: usize,
    ) -> Result<Vec<(ChunkHit, f64)>, KnowledgeError> {
        let embedder = self.embedder(base, None)?.ok_or_else(|| {
            KnowledgeError::Invalid(format!(
                "knowledge base '{}' has no embeddings (made with --embeddings none): search it in fulltext mode",
                base.name
            ))
        })?;
        let query = embedder
            .embed(&[text.to_string()])
            .await?
            .pop()
            .unwrap_or_default();
        check_dims(base, query.len())?;
        let mut near: Vec<(i64, f64)> = self
            .store
            .knowledge_vectors(base.id)
            .await?
            .iter()
            .map(|(id, v)| (*id, semantic(cosine(&query, v))))
            .collect();
        near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        near.truncate(wanted);
        self.with_chunks(base, near).await
    }

    /// Full text and semantic, fused by rank.
    async fn hybrid(
        &self,
        base: &BaseRow,
        text: &str,
        wanted: usize,
    ) -> Result<Vec<(ChunkHit, f64)>, KnowledgeError> {
        let words = self.fulltext(base, text, wanted).await?;
        let meaning = self.semantic(base, text, wanted).await?;
        let ids = |l: &[(ChunkHit, f64)]| l.iter().map(|(h, _)| h.id).collect::<Vec<_>>();
        let fused = fuse(&[ids(&words), ids(&meaning)]);
        let mut hits: HashMap<i64, ChunkHit> = words
            .into_iter()
            .chain(meaning)
            .map(|(h, _)| (h.id, h))
            .collect();
        Ok(fused
            .into_iter()
            .take(wanted)
            .filter_map(|(id, s)| hits.remove(&id).map(|h| (h, s)))
            .collect())
    }

    /// The chunks of `scored` ids, in the order given.
    async fn with_chunks(
        &self,
        base: &BaseRow,
        scored: Vec<(i64, f64)>,
    ) -> Result<Vec<(ChunkHit, f64)>, KnowledgeError> {
        let ids = scored.iter().map(|(id, _)| *id).collect();
        let mut hits: HashMap<i64, ChunkHit> = self
            .store
            .knowledge_chunks(base.id, ids)
            .await?
            .into_iter()
            .map(|h| (h.id, h))
            .collect();
        Ok(scored
            .into_iter()
            .filter_map(|(id, s)| hits.remove(&id).map(|h| (h, s)))
            .collect())
    }

    /// The candidates reordered and scored by the rerank model.
    async fn reranked(
        &self,
        text: &str,
        model: &str,
        scored: Vec<(ChunkHit, f64)>,
    ) -> Result<Vec<(ChunkHit, f64)>, KnowledgeError> {
        let reranker = Reranker {
            model: model.to_string(),
            endpoint: self.rerank.clone(),
        };
        let documents: Vec<String> = scored.iter().map(|(h, _)| h.text.clone()).collect();
        let order = reranker.rerank(text, &documents).await?;
        let mut slots: Vec<Option<ChunkHit>> = scored.into_iter().map(|(h, _)| Some(h)).collect();
        Ok(order
            .into_iter()
            .filter_map(|(i, s)| slots.get_mut(i)?.take().map(|h| (h, s.clamp(0.0, 1.0))))
            .collect())
    }
}
