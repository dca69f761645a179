//! Knowledge bases: documents (Markdown, plain text, HTML, PDF) extracted, cut into
//! chunks along their structure, stored with their source, position and content hash
//! in the store (`toolgate-store`), and searched by full text, by meaning (embeddings
//! from an OpenAI-compatible endpoint) or both fused by rank, optionally reranked, with
//! scores on one 0-to-1 scale.
//!
//! [`Knowledge`] is one tenant's bases; `extract`, `chunk`, `terms` and `score` are the
//! pure parts; `embed`, `rerank` and `endpoint` the HTTP clients; `tool` the retrieval
//! tool an agent's `knowledge:` gives it, `source` the same from a tool file.

mod bases;
pub mod chunk;
mod embed;
mod endpoint;
mod error;
pub mod extract;
mod import;
mod rerank;
pub mod score;
mod search;
mod source;
pub mod terms;
mod tool;

pub use bases::{BaseDetail, Knowledge, check_name};
pub use chunk::{Chunk, ChunkSize};
pub use embed::{Embedder, parse_spec};
pub use endpoint::{Endpoint, OPENAI_BASE};
pub use error::KnowledgeError;
pub use import::{ImportSummary, Imported, content_hash, source_name};
pub use rerank::Reranker;
pub use search::{Mode, Passage, Query};
pub use source::KnowledgeFiles;
pub use tool::{KnowledgeTool, Retrieval, SEARCH_KNOWLEDGE, tool};
pub use toolgate_store::knowledge::{BaseRow, DocumentRow, Stored};
