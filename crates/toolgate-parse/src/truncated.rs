//! The end of output is a boundary: a call block the output ended inside (a
//! `max_tokens` stop, a dropped stream) is never returned as a call, in lenient mode as
//! in strict. It becomes a `truncated_call` problem carrying what was read.

use serde_json::Value;

use super::block::{BlockOutcome, short};
use super::block_end::BlockKind;
use super::framed::Framed;
use super::types::{Problem, ProblemKind};

/// Whether the dialect documents an end-of-message convention that closes a call at
/// the end of the output: servers strip Harmony's `<|call|>` stop token, a Llama 3
/// `<|python_tag|>` call runs to the end of the message (its `<|eom_id|>` is a stop
/// token), and a Llama 4 `<|python_start|>` list is ended by its own `]` (vLLM's
/// tests show it without `<|python_end|>`). Such a call stays a call when it reads
/// whole; cut inside its JSON or list it is not one.
pub(crate) fn ends_at_eof(kind: BlockKind) -> bool {
    matches!(
        kind,
        BlockKind::Framed(
            Framed::Harmony
                | Framed::HarmonyRole
                | Framed::HarmonyLead
                | Framed::PythonTag
                | Framed::PythonStart
        )
    )
}

/// Whether a cut block ends right after the token that opens its arguments (Harmony's
/// `<|message|>`): nothing of the arguments was written, so it is no call even by the
/// end-of-message convention (an empty message is not `{}`).
pub(crate) fn ends_bare(block: &str) -> bool {
    block.trim_end().ends_with("<|message|>")
}

/// Turns what a cut block gave into one `truncated_call` problem (offset: the block's
/// start). A block that read as no call and met no structural fault but a missing
/// name (a Harmony message without a recipient, `<function=NAME>` mentioned in prose)
/// is left as it is: text.
pub(crate) fn truncated(out: BlockOutcome) -> BlockOutcome {
    let faulty = out
        .problems
        .iter()
        .any(|p| p.kind.is_structural() && p.kind != ProblemKind::MissingName);
    if out.call.is_none() && !faulty {
        return out;
    }
    let tool = out
        .call
        .as_ref()
        .map(|c| c.name.clone())
        .or_else(|| out.problems.iter().find_map(|p| p.tool.clone()));
    let message = match (&tool, &out.call) {
        (Some(name), Some(call)) => format!(
            "the output ended inside a call to '{name}' before it was closed; not run \
             (read so far: {})",
            short(&Value::Object(call.arguments.clone()).to_string())
        ),
        (Some(name), None) => {
            format!("the output ended inside a call to '{name}' before it was closed; not run")
        }
        (None, _) => "the output ended inside a tool call before it was closed; not run".into(),
    };
    let mut problem = Problem::new(ProblemKind::TruncatedCall, 0, message);
    problem.tool = tool;
    BlockOutcome {
        call: None,
        more: Vec::new(),
        problems: vec![problem],
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::block::{Ending, parse_block};
    use crate::options::ParseOptions;

    #[test]
    fn a_cut_block_is_no_call() {
        let block = "<tool_call>\n<function=write_file>\n<parameter=content>\nrm -rf /tmp/build";
        let out = parse_block(
            BlockKind::Qwen { wrapped: true },
            block,
            Ending::Cut,
            None,
            &ParseOptions::default(),
        );
        assert!(out.call.is_none());
        assert_eq!(out.problems.len(), 1);
        assert_eq!(out.problems[0].kind, ProblemKind::TruncatedCall);
        assert_eq!(out.problems[0].tool.as_deref(), Some("write_file"));
        assert!(out.problems[0].message.contains("rm -rf /tmp/build"));
    }
}
