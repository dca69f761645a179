//! The store's data, whatever the backend: runs and their pending items (with a typed
//! [`PendingState`]), what a save writes, a run to create, and call records.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use toolgate_protocol::{
    CallStatus, CallerKind, Decision, ErrorKind, RequiredItem, RunStatus, Usage,
};

/// Where a pending item of a paused run is. It moves one way: `Waiting` (nobody decided
/// yet) to `Decided` (a decision or a client's output is recorded) to `Executing` (the
/// approved call is running: the at-most-once fence) to `Done`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "snake_case")]
pub enum PendingState {
    /// Nobody has decided it yet.
    Waiting,
    /// Decided (or answered by the client), not acted on yet.
    Decided,
    /// The approved call is running (or was, when its process died): never run again.
    Executing,
    /// Acted on.
    Done,
}

impl PendingState {
    /// The stored name: `waiting`, `decided`, `executing`, `done` (`FromStr` reads it
    /// back).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Whose rows a read covers: every tenant's, or one tenant's (runs, and the records and
/// conversations of the runs; a record without a run is the default tenant's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope<'a> {
    /// Every tenant's.
    All,
    /// The named tenant's only.
    Tenant(&'a str),
}

impl<'a> Scope<'a> {
    /// `None`: every tenant; `Some(tenant)`: that tenant's.
    pub fn of(tenant: Option<&'a str>) -> Scope<'a> {
        tenant.map_or(Scope::All, Scope::Tenant)
    }

    /// The tenant it is limited to, if any.
    pub fn tenant(self) -> Option<&'a str> {
        match self {
            Scope::All => None,
            Scope::Tenant(t) => Some(t),
        }
    }
}

/// Whose secrets: the shared ones (stored under the tenant `""`, any run may read them)
/// or one tenant's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretScope<'a> {
    /// The shared secrets.
    Shared,
    /// The named tenant's own (reading one falls back to the shared one of that name).
    Tenant(&'a str),
}

impl<'a> SecretScope<'a> {
    /// `None`: the shared secrets; `Some(tenant)`: that tenant's.
    pub fn of(tenant: Option<&'a str>) -> SecretScope<'a> {
        tenant.map_or(SecretScope::Shared, SecretScope::Tenant)
    }

    /// The stored tenant column: `""` for the shared secrets.
    pub fn tenant(self) -> &'a str {
        match self {
            SecretScope::Shared => "",
            SecretScope::Tenant(t) => t,
        }
    }
}

/// A run as stored.
#[derive(Debug, Clone)]
pub struct RunRow {
    pub id: String,
    pub conversation_id: String,
    pub agent: String,
    pub status: RunStatus,
    /// The run's state as JSON (see `run::RunState`).
    pub state: String,
    pub iteration: u32,
    pub last_error: Option<String>,
    pub lease_owner: Option<String>,
    pub lease_until: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    /// For a sub-agent's run: the run and call that started it, and its depth (0 top).
    pub parent_run_id: Option<String>,
    pub parent_call_id: Option<String>,
    pub depth: u32,
    /// The tenant it belongs to (its calls, items and responses with it).
    pub tenant: String,
    /// The identity that started it (a key's name, a JWT's subject), when known.
    pub started_by: Option<String>,
    /// The tokens its model calls used so far (as of its last save).
    pub usage: Usage,
}

/// One item of a paused turn, as stored.
#[derive(Debug, Clone)]
pub struct PendingRow {
    pub item: RequiredItem,
    pub decision: Option<Decision>,
    /// Where the item is: waiting, decided, executing or done.
    pub state: PendingState,
}

/// A save of a run's state by the process holding its lease.
#[derive(Debug, Clone)]
pub struct RunSave {
    pub status: RunStatus,
    pub state: String,
    pub iteration: u32,
    pub last_error: Option<String>,
    /// New pending items (state `waiting`).
    pub add_pending: Vec<RequiredItem>,
    /// Pending items whose state changes: call id and new state.
    pub set_pending: Vec<(String, PendingState)>,
    /// Give up the lease with this save (the run pauses or ends).
    pub release: bool,
    /// The tokens the run's model calls used so far (kept in columns of their own).
    pub usage: Usage,
    /// Call records committed in the same transaction.
    pub records: Vec<CallRecord>,
    /// Model requests made since the last save, with their cost (kept even when the
    /// lease was lost: they were made).
    pub requests: Vec<crate::spend::ModelRequestRow>,
    /// Messages the step added to the conversation (JSON), the first at position
    /// `first_seq`.
    pub messages: Vec<String>,
    pub first_seq: usize,
}

/// What links a sub-agent's run to its parent.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLink {
    pub parent_run_id: String,
    pub parent_call_id: String,
    /// The parent's depth plus one.
    pub depth: u32,
}

/// A run to create (see [`crate::Store::create_linked_run`]).
#[derive(Debug, Clone)]
pub struct NewRun {
    pub id: String,
    pub conversation_id: String,
    pub agent: String,
    pub state: String,
    pub owner: String,
    pub lease_ms: i64,
    /// Messages it adds to its conversation (JSON), the first at `first_seq`.
    pub messages: Vec<String>,
    pub first_seq: usize,
    pub link: Option<RunLink>,
    /// The tenant it belongs to (a sub-agent's run: its parent's).
    pub tenant: String,
    /// Who started it.
    pub started_by: Option<String>,
}

/// Bytes of a result kept in the record (the tools' own output cap, so a result is kept
/// whole: `read_result` pages through it when the model saw it cut); the full size is
/// kept beside it.
pub const RESULT_CAP: usize = 1024 * 1024;

/// A call as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CallRecord {
    pub call_id: String,
    pub run_id: Option<String>,
    pub conversation_id: String,
    pub agent: Option<String>,
    pub caller: CallerKind,
    pub tool: String,
    /// Secret parameters already redacted.
    pub arguments: Value,
    /// The result as text, cut at [`RESULT_CAP`] bytes.
    pub result: Option<String>,
    /// The result's full size in bytes.
    pub result_size: usize,
    pub status: CallStatus,
    // Why it did not succeed: stored as its name (`error_kind_of` reads it back); a plain
    // comment, not a doc one, so that the OpenAPI document gives the field no description.
    #[schema(value_type = Option<String>)]
    pub error_kind: Option<ErrorKind>,
    pub error_message: Option<String>,
    /// Unix milliseconds.
    pub started_at: i64,
    pub duration_ms: f64,
    /// An `after_result` hook replaced (or withheld) what the model saw; `result` is
    /// still what the tool returned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaced: bool,
    /// Each try of a call its retry policy tried more than once, in order (empty for
    /// a call tried once: the record is that try).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// For a tool whose results are kept (`cache:`): `true` when this result was
    /// served from the cache (the tool did not run), `false` when the tool ran.
    /// Absent for a tool without a cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
}

/// One try of a call that was tried more than once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Attempt {
    /// 1 for the first try.
    pub attempt: u32,
    /// `succeeded`, the failure that was retried (`timeout`, `connect`, `429`, `5xx`),
    /// or `failed` for a last try that failed otherwise.
    pub outcome: String,
    /// What went wrong, as the record's error message would say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the try took.
    pub duration_ms: f64,
    /// How long toolgate waited before the next try (`Retry-After` or the backoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<f64>,
}

impl Attempt {
    /// `attempts` as the text stored in the `attempts` column (`None`: none).
    pub fn to_column(attempts: &[Attempt]) -> Option<String> {
        (!attempts.is_empty())
            .then(|| serde_json::to_string(attempts).ok())
            .flatten()
    }

    /// The `attempts` column read back (an unreadable one reads as none).
    pub fn from_column(text: Option<String>) -> Vec<Attempt> {
        text.and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }
}

impl CallRecord {
    /// Sets the result, keeping at most [`RESULT_CAP`] bytes (on a character boundary).
    pub fn set_result(&mut self, text: &str) {
        let cut = cap_at(text);
        self.result_size = text.len();
        self.result = Some(text[..cut].to_string());
    }

    /// [`CallRecord::set_result`], keeping `text` (cut to the cap) rather than copying it.
    pub fn set_result_text(&mut self, mut text: String) {
        self.result_size = text.len();
        let cut = cap_at(&text);
        if cut < text.len() {
            text.truncate(cut);
            text.shrink_to_fit();
        }
        self.result = Some(text);
    }
}

/// A stored `error_kind` column read back. The column is text: a name no [`ErrorKind`]
/// has (a database written by a version with other names) is read as no kind, with a
/// warning, rather than failing the read.
pub(crate) fn error_kind_of(stored: Option<String>) -> Option<ErrorKind> {
    let name = stored?;
    match name.parse() {
        Ok(kind) => Some(kind),
        Err(_) => {
            tracing::warn!(error_kind = %name, "a record's error kind is not one this version knows; read as none");
            None
        }
    }
}

/// Where [`RESULT_CAP`] cuts `text` (on a character boundary).
fn cap_at(text: &str) -> usize {
    let mut cut = text.len().min(RESULT_CAP);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// A record read back, with its record id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StoredCall {
    pub id: i64,
    #[serde(flatten)]
    pub record: CallRecord,
}

/// The row changes a decision makes, as `run::decision_rule` chose them from the rows it
/// read; the store applies them only while every item is still waiting and the run
/// still paused (compare-and-set).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DecisionChanges {
    /// The run decided (the top run, for items waiting in its sub-agents' runs).
    pub run_id: String,
    /// The items decided: the run holding each, and its call id.
    pub items: Vec<(String, String)>,
    /// Standing approvals to record ("approve always"): the run that asked (its agent and
    /// conversation), the tool, and the fingerprint of the tool's policy.
    pub standing: Vec<(String, String, String)>,
    /// Items of the run still waiting after this decision.
    pub still_waiting: usize,
    /// Taken with the decision when the decider goes on to continue the run and nothing
    /// still waits: its lease owner name and the lease's length. Should the decider die
    /// before it continues the run, the lease runs out and another process takes the
    /// run up (see `unheld_runs`); a decision recorded only takes none.
    pub claim: Option<(String, i64)>,
}

#[cfg(test)]
mod tests {
    use strum::VariantArray;

    use super::PendingState;
    use crate::{ChangeKind, Refusal};

    /// The names are stored (pending items' states, the change feed) and shown
    /// (refusals): each one as it was written before strum named them, and each read
    /// back by `FromStr`.
    #[test]
    fn the_stored_names_stay() {
        let states: Vec<&str> = PendingState::VARIANTS.iter().map(|s| s.as_str()).collect();
        assert_eq!(states, ["waiting", "decided", "executing", "done"]);
        for s in PendingState::VARIANTS {
            assert_eq!(s.as_str().parse::<PendingState>().ok(), Some(*s));
        }
        let kinds: Vec<&str> = ChangeKind::VARIANTS.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            kinds,
            ["created", "status", "saved", "pending_added", "decided"]
        );
        for k in ChangeKind::VARIANTS {
            assert_eq!(k.as_str().parse::<ChangeKind>().ok(), Some(*k));
        }
        assert!("nothing".parse::<PendingState>().is_err());
        assert!("nothing".parse::<ChangeKind>().is_err());
        let refusals: Vec<&str> = Refusal::VARIANTS.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            refusals,
            [
                "lease_held",
                "lease_lost",
                "not_resumable",
                "still_waiting",
                "decision_conflict",
                "conversation_busy",
                "ambiguous_id",
                "child_exists",
                "expired",
                "name_taken",
            ]
        );
    }
}
