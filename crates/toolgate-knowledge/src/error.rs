//! What can go wrong with a knowledge base, as kinds for code and sentences for people.

use toolgate_store::StoreError;

/// Why a knowledge operation failed.
#[derive(Debug, thiserror::Error)]
pub enum KnowledgeError {
    /// No base of that name for this tenant (another tenant's is not shown either).
    #[error("there is no knowledge base '{0}' (toolgate kb list shows them)")]
    NoBase(String),
    /// The request does not fit: a bad name, size, mode or model.
    #[error("{0}")]
    Invalid(String),
    /// The embeddings or rerank endpoint failed or answered something unreadable.
    #[error("{0}")]
    Endpoint(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl KnowledgeError {
    /// Whether the caller asked for something that cannot be (bad input), rather than
    /// something failing.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, KnowledgeError::NoBase(_) | KnowledgeError::Invalid(_))
            || matches!(self, KnowledgeError::Store(StoreError::Refused(..)))
    }
}
