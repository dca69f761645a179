//! Why an operation on a run failed: refused for a reason code can act on (`Refusal`),
//! not found, or a database error.

use super::StoreError;

/// Why a run operation was refused, or what went wrong with the database.
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
}

/// Why an operation on a run was refused: the kind, for code (the server maps every
/// one to 409, the CLI to exit code 1); the message beside it is for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
        match self {
            Refusal::LeaseHeld => "lease_held",
            Refusal::LeaseLost => "lease_lost",
            Refusal::NotResumable => "not_resumable",
            Refusal::StillWaiting => "still_waiting",
            Refusal::DecisionConflict => "decision_conflict",
            Refusal::ConversationBusy => "conversation_busy",
            Refusal::AmbiguousId => "ambiguous_id",
            Refusal::ChildExists => "child_exists",
            Refusal::Expired => "expired",
            Refusal::NameTaken => "name_taken",
        }
    }
}
