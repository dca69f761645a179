//! Knowledge bases as stored, whatever the backend: a base (tenant-owned, with its
//! embedding model and chunking settings), its documents (source, content hash) and
//! their chunks (text, section, position, optional embedding).

/// A knowledge base to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBase {
    pub tenant: String,
    pub name: String,
    /// The embedding model (`openai:MODEL`), or `None` for full-text search only.
    pub embeddings: Option<String>,
    /// Characters per chunk, and characters carried over between neighbours.
    pub chunk: i64,
    pub overlap: i64,
}

/// A stored knowledge base with its totals.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct BaseRow {
    #[serde(skip)]
    pub id: i64,
    pub tenant: String,
    pub name: String,
    pub embeddings: Option<String>,
    /// The embedding vectors' length, once a document was added with them.
    pub dims: Option<i64>,
    pub chunk: i64,
    pub overlap: i64,
    /// Unix milliseconds.
    pub created_at: i64,
    pub documents: i64,
    pub chunks: i64,
    /// Bytes of the source files as read.
    pub bytes: i64,
}

/// A stored document of a base.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct DocumentRow {
    pub source: String,
    /// SHA-256 of the file's bytes (hex).
    pub hash: String,
    pub bytes: i64,
    pub chunks: i64,
    /// Unix milliseconds.
    pub added_at: i64,
}

/// A document to store: its chunks replace whatever the source had.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDocument {
    pub source: String,
    pub hash: String,
    pub bytes: i64,
    pub chunks: Vec<NewChunk>,
}

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    /// Its place among the document's chunks, from 0.
    pub ordinal: i64,
    pub text: String,
    /// The heading trail (`Install > From source`) or page (`page 3`) it sits under.
    pub section: Option<String>,
    /// Byte offsets in the document's extracted text.
    pub start: i64,
    pub end: i64,
    pub embedding: Option<Vec<f32>>,
}

/// What storing a document did.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, strum::IntoStaticStr, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Stored {
    /// A new source.
    Added,
    /// The source was there with other content: its chunks were replaced.
    Replaced,
    /// The source was there with the same hash: nothing was written.
    Unchanged,
}

/// A chunk found by a search, with the backend's raw score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkHit {
    pub id: i64,
    pub source: String,
    pub ordinal: i64,
    pub section: Option<String>,
    pub start: i64,
    pub end: i64,
    pub text: String,
    pub raw: f64,
}

/// An embedding as stored: little-endian `f32`s.
pub fn vector_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// An embedding read back from its bytes.
pub fn bytes_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The full-text query both backends run: the terms, any of which may match (the
/// ranking puts chunks with more and rarer terms first). Terms are letters and digits
/// only, so nothing in them is query syntax.
pub fn any_of(terms: &[String]) -> Vec<String> {
    terms
        .iter()
        .map(|t| {
            t.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
        })
        .filter(|t| !t.is_empty())
        .collect()
}
