//! What went wrong with the store, whatever the backend: one `StoreError`, and the
//! `Refusal` kinds code acts on (the server maps each to 409, the CLI to exit code 1).

use std::path::PathBuf;

/// What went wrong with the database or with the operation asked of it; every message
/// about the database names it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// The database failed (locked, read-only, full, corrupt, ...).
    #[error("{path}: {message}")]
    Database { path: PathBuf, message: String },
    #[error("{path} is not a toolgate database ({why}); use another --db file")]
    Foreign { path: PathBuf, why: String },
    #[error(
        "{path} was written by a newer toolgate (schema {found}; this one knows up to {known}); it was left untouched"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "{path}: the writer has stopped (the store was closed); the last records may not be saved"
    )]
    WriterGone { path: PathBuf },
    /// No run (or conversation) by that id.
    #[error("there is no run '{0}' (toolgate runs lists them)")]
    NotFound(String),
    /// The operation does not fit the state it found; the message says why and what to do.
    #[error("{1}")]
    Refused(Refusal, String),
    /// What the store holds cannot be read back (a bug, or a file edited by hand).
    #[error("{0}")]
    Corrupt(String),
}

/// Why an operation on a run was refused: the kind, for code (the server maps every
/// one to 409, the CLI to exit code 1); the message beside it is for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Refusal {
    /// Another live process holds the run's lease.
    LeaseHeld,
    /// This process held the lease and lost it (cancelled, or taken over).
    LeaseLost,
    /// The run has ended (completed, incomplete, cancelled) and cannot continue.
    NotResumable,
    /// The run still waits on items nobody has resolved.
    StillWaiting,
    /// The decision does not fit: no such item, already decided, or the wrong kind.
    DecisionConflict,
    /// The conversation has an unfinished run.
    ConversationBusy,
    /// A run id prefix names more than one run.
    AmbiguousId,
    /// The parent's call already has its sub-agent run.
    ChildExists,
    /// The item's approval deadline has passed: it can no longer be approved.
    Expired,
    /// A name that must be unique (an issued key's) is taken.
    NameTaken,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
