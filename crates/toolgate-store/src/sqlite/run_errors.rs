//! The SQLite backend's own error inside its queries: a store error, or an SQLite error
//! not yet turned into one (the facade sees only [`StoreError`]).

use super::StoreError;
pub use crate::Refusal;

/// Why a query failed: refused, not found, or SQLite's own error (only inside this
/// backend; [`From<RunsError> for StoreError`] is where it stops).
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("there is no run '{0}' (toolgate runs lists them)")]
    NotFound(String),
    /// The operation does not fit the run's state; the message says why and what to do.
    #[error("{1}")]
    Refused(Refusal, String),
    #[error("{0}")]
    Sql(#[from] rusqlite::Error),
    /// A compare-and-set found a row changed since it was read (the transaction is
    /// rolled back; the caller reads again).
    #[error("the rows changed since they were read")]
    Changed,
}

impl From<RunsError> for StoreError {
    /// An SQLite error a query returned (not one the writer described with the file's
    /// name) means what the store holds could not be read back.
    fn from(e: RunsError) -> Self {
        match e {
            RunsError::Store(s) => s,
            RunsError::NotFound(id) => StoreError::NotFound(id),
            RunsError::Refused(kind, message) => StoreError::Refused(kind, message),
            RunsError::Sql(e) => StoreError::Corrupt(e.to_string()),
            RunsError::Changed => {
                StoreError::Refused(Refusal::DecisionConflict, RunsError::Changed.to_string())
            }
        }
    }
}
