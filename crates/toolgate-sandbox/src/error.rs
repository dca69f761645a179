//! Why a tool's program could not be started in its sandbox; each a one-line sentence
//! that names the tool and what to do.

use super::support::Feature;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SandboxError {
    /// The kernel cannot enforce what the tool's sandbox asks (fail closed).
    #[error(
        "{who} cannot run sandboxed: this kernel lacks {}; loosen its sandbox \
         (network: true, fs: off) or write `sandbox: off` in its file to run it unconfined",
        missing(*feature, *have)
    )]
    Unsupported {
        /// What would have run: `tool 'x'`, `MCP server 'y'`.
        who: String,
        feature: Feature,
        /// The ABI the kernel has (0: none).
        have: u32,
    },
    /// Setting the sandbox up failed (a folder, a rule, the filter).
    #[error("{who}: cannot set up its sandbox: {what}: {why}")]
    Setup {
        who: String,
        what: String,
        /// The system's reason.
        why: String,
    },
}

impl SandboxError {
    pub(crate) fn setup(who: &str, what: impl Into<String>, source: std::io::Error) -> Self {
        SandboxError::Setup {
            who: who.to_string(),
            what: what.into(),
            why: source.to_string(),
        }
    }
}

/// `feature` and what the kernel has instead.
fn missing(feature: Feature, have: u32) -> String {
    if feature.abi() == 0 {
        return feature.name().to_string();
    }
    let has = if have == 0 {
        "no Landlock at all".to_string()
    } else {
        format!("ABI {have}")
    };
    format!(
        "{} (Landlock ABI {}; it has {has})",
        feature.name(),
        feature.abi()
    )
}
