//! The last credential check of each tool: whether the upstream accepted the tool's
//! credentials, its reason when it did not (credentials masked), and when.

use serde::Serialize;

/// One tool's last credential check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolValidation {
    /// The tool's name.
    pub tool: String,
    /// Whether the upstream accepted the credentials.
    pub valid: bool,
    /// The upstream's reason for a refusal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unix milliseconds.
    pub checked_at: i64,
}
