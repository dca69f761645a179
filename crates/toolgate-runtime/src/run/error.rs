//! Why a run could not be started, continued, decided or shown: a kind for code (the
//! CLI's exit codes, the server's HTTP statuses), a message for people.

use crate::agent::{AgentError, AgentErrorKind};
use toolgate_model::ModelError;
use toolgate_store::{Refusal, StoreError};

/// Why a run operation failed (a run that starts and then fails is not an error: its
/// status says so).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input: a broken agent file, an unknown agent or model, an empty message.
    #[error("{0}")]
    BadInput(String),
    /// The agent names tools the library does not have.
    #[error("{0}")]
    UnknownTool(String),
    /// Edited arguments that the tool's schema refuses; nothing was changed.
    #[error("{0}")]
    InvalidArguments(String),
    #[error("there is no run '{0}' (toolgate runs lists them)")]
    NotFound(String),
    /// The run is not in a state that allows this; nothing was changed.
    #[error("{message}")]
    Refused { kind: Refusal, message: String },
    /// The database failed.
    #[error(transparent)]
    Store(StoreError),
    /// A secret could not be sealed or opened: no key, a wrong key, an unreadable key
    /// file. Nothing was changed.
    #[error("{0}")]
    Secret(String),
    /// What the store holds for this run cannot be read back (a bug, or a file edited
    /// by hand).
    #[error("{0}")]
    Corrupt(String),
}

impl RunError {
    /// The kind as a stable name: `bad_input`, `unknown_tool`, `invalid_arguments`,
    /// `not_found`, a refusal's name (`lease_held`, `not_resumable`, ...), `store`,
    /// `corrupt`.
    pub fn kind(&self) -> &'static str {
        match self {
            RunError::BadInput(_) => "bad_input",
            RunError::UnknownTool(_) => "unknown_tool",
            RunError::InvalidArguments(_) => "invalid_arguments",
            RunError::NotFound(_) => "not_found",
            RunError::Refused { kind, .. } => kind.as_str(),
            RunError::Store(_) => "store",
            RunError::Secret(_) => "secret_key",
            RunError::Corrupt(_) => "corrupt",
        }
    }

    pub(crate) fn refused(kind: Refusal, message: impl Into<String>) -> Self {
        RunError::Refused {
            kind,
            message: message.into(),
        }
    }
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(id) => RunError::NotFound(id),
            StoreError::Refused(kind, message) => RunError::Refused { kind, message },
            StoreError::Corrupt(message) => RunError::Corrupt(message),
            other => RunError::Store(other),
        }
    }
}

impl From<AgentError> for RunError {
    fn from(e: AgentError) -> Self {
        match e.kind {
            AgentErrorKind::UnknownTool => RunError::UnknownTool(e.to_string()),
            AgentErrorKind::Invalid => RunError::BadInput(e.to_string()),
        }
    }
}

impl From<ModelError> for RunError {
    fn from(e: ModelError) -> Self {
        RunError::BadInput(e.to_string())
    }
}
